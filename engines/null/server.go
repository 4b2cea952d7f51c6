package null

import (
	"bytes"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"

	"github.com/hlsbench/hlsbench/engines/builtin"
	"github.com/hlsbench/hlsbench/origin"
)

// Options shape a Server.
type Options struct {
	// Listen is the plaintext listener's address (127.0.0.1:0 picks a port).
	Listen string
	// ProxyListen, when set, is a second listener whose connections begin
	// with a PROXY v2 header (a TLS terminator's); its answers carry
	// builtin.ClientHeader, the client address the header gave.
	ProxyListen string
	// Threads is how many event loops run, each on its own locked OS
	// thread with its own listening sockets (SO_REUSEPORT); 0 is one.
	Threads int
	// TLSListen, when set, is a TLS listener (crypto/tls, CertFile and
	// KeyFile) answering what the plaintext one does.
	TLSListen, CertFile, KeyFile string
	// CPUs, when set, pins loop i to CPUs[i % len(CPUs)].
	CPUs []int
	// Objects are served by path; a query string is ignored.
	Objects []Object
}

// Limits of a request.
const (
	maxHeaderBytes = 16 << 10
	readBufBytes   = 64 << 10
	// outHigh stops answering a connection's pipelined requests until what
	// is queued for it has left.
	outHigh = 256 << 10
)

// Server is a running null engine.
type Server struct {
	addr, proxyAddr string
	loops           []*loop
	tls             *tlsServer
	wg              sync.WaitGroup
	closeOnce       sync.Once
}

// Stats are a server's counts since it started.
type Stats struct {
	Accepted, Requests, ProxyRefused int64
	// WriteWaits counts writes left for EPOLLOUT: a socket full before its
	// answer was.
	WriteWaits int64
}

// Serve starts the event loops and returns once every listener is open.
func Serve(o Options) (*Server, error) {
	table := map[string]*entry{}
	for _, obj := range o.Objects {
		table[obj.Path] = newEntry(obj)
	}
	var tcfg *tls.Config
	if o.TLSListen != "" {
		var err error
		if tcfg, err = tlsConfig(o.CertFile, o.KeyFile); err != nil {
			return nil, err
		}
	}
	threads := max(o.Threads, 1)
	s := &Server{}
	addr, paddr := o.Listen, o.ProxyListen
	for i := range threads {
		cpu := -1
		if len(o.CPUs) > 0 {
			cpu = o.CPUs[i%len(o.CPUs)]
		}
		l, err := newLoop(table, cpu)
		if err == nil {
			addr, err = l.listen(addr, false)
		}
		if err == nil && paddr != "" {
			paddr, err = l.listen(paddr, true)
		}
		if err != nil {
			if l != nil {
				l.closeAll()
			}
			for _, l := range s.loops {
				l.closeAll()
			}
			return nil, err
		}
		s.loops = append(s.loops, l)
	}
	s.addr = addr
	if o.ProxyListen != "" {
		s.proxyAddr = paddr
	}
	if tcfg != nil {
		ts, err := listenTLS(o.TLSListen, tcfg, table)
		if err != nil {
			for _, l := range s.loops {
				l.closeAll()
			}
			return nil, err
		}
		s.tls = ts
	}
	for _, l := range s.loops {
		s.wg.Go(l.run)
	}
	return s, nil
}

// Addr is the plaintext listener's host:port.
func (s *Server) Addr() string { return s.addr }

// ProxyAddr is the PROXY v2 listener's host:port ("" without one).
func (s *Server) ProxyAddr() string { return s.proxyAddr }

// TLSAddr is the TLS listener's host:port ("" without one).
func (s *Server) TLSAddr() string {
	if s.tls == nil {
		return ""
	}
	return s.tls.ln.Addr().String()
}

// Stats sums the loops' counts, the TLS listener's among them.
func (s *Server) Stats() Stats {
	var t Stats
	loops := s.loops
	if s.tls != nil {
		loops = append(loops[:len(loops):len(loops)], s.tls.answers)
	}
	for _, l := range loops {
		t.Accepted += l.accepted.Load()
		t.Requests += l.requests.Load()
		t.ProxyRefused += l.refused.Load()
		t.WriteWaits += l.waits.Load()
	}
	return t
}

// Close stops every loop and closes every socket; it is idempotent.
func (s *Server) Close() error {
	s.closeOnce.Do(func() {
		one := []byte{1, 0, 0, 0, 0, 0, 0, 0}
		if s.tls != nil {
			s.tls.close()
		}
		for _, l := range s.loops {
			unix.Write(l.wake, one)
		}
		s.wg.Wait()
	})
	return nil
}

// loop is one event loop: its epoll, its listeners and its connections,
// touched by its own thread only.
type loop struct {
	table     map[string]*entry
	cpu       int
	ep, wake  int
	listeners map[int]bool // fd → PROXY listener
	conns     []*conn      // by fd
	buf       []byte
	events    []unix.EpollEvent
	iov       [64]unix.Iovec

	accepted, requests, refused, waits atomic.Int64
}

type conn struct {
	fd    int
	proxy bool // still expecting the PROXY header
	// client is ClientHeader's line, on a PROXY listener's connection.
	client  []byte
	in      []byte
	out     [][]byte  // queued answer pieces, written in order
	outBuf  [8][]byte // out's storage while few pieces are queued
	queued  int
	arena   []byte // heads built for this connection while out is queued
	closing bool   // close once out has left
	wantOut bool   // registered for EPOLLOUT instead of EPOLLIN
}

func newLoop(table map[string]*entry, cpu int) (*loop, error) {
	ep, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("epoll: %w", err)
	}
	l := &loop{table: table, cpu: cpu, ep: ep, wake: -1, listeners: map[int]bool{},
		buf: make([]byte, readBufBytes), events: make([]unix.EpollEvent, 256)}
	if l.wake, err = unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC); err != nil {
		unix.Close(ep)
		return nil, fmt.Errorf("eventfd: %w", err)
	}
	if err := l.add(l.wake, unix.EPOLLIN); err != nil {
		l.closeAll()
		return nil, err
	}
	return l, nil
}

func (l *loop) add(fd int, ev uint32) error {
	if err := unix.EpollCtl(l.ep, unix.EPOLL_CTL_ADD, fd, &unix.EpollEvent{Events: ev, Fd: int32(fd)}); err != nil {
		return fmt.Errorf("epoll add: %w", err)
	}
	return nil
}

// listen opens a non-blocking listening socket with SO_REUSEPORT on addr
// (every loop binds the same port: the kernel spreads connections over
// them) and returns the address it got.
func (l *loop) listen(addr string, proxy bool) (string, error) {
	ap, err := netip.ParseAddrPort(addr)
	if err != nil {
		return "", fmt.Errorf("listen %q: want IP:port: %w", addr, err)
	}
	var sa unix.Sockaddr
	fam := unix.AF_INET
	if ap.Addr().Is4() {
		sa = &unix.SockaddrInet4{Port: int(ap.Port()), Addr: ap.Addr().As4()}
	} else {
		fam = unix.AF_INET6
		sa = &unix.SockaddrInet6{Port: int(ap.Port()), Addr: ap.Addr().As16()}
	}
	fd, err := unix.Socket(fam, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return "", fmt.Errorf("listen %s: %w", addr, err)
	}
	for _, opt := range []int{unix.SO_REUSEADDR, unix.SO_REUSEPORT} {
		if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, opt, 1); err != nil {
			unix.Close(fd)
			return "", fmt.Errorf("listen %s: %w", addr, err)
		}
	}
	if err := unix.Bind(fd, sa); err != nil {
		unix.Close(fd)
		return "", fmt.Errorf("listen %s: %w", addr, err)
	}
	if err := unix.Listen(fd, 4096); err != nil {
		unix.Close(fd)
		return "", fmt.Errorf("listen %s: %w", addr, err)
	}
	got, err := unix.Getsockname(fd)
	if err != nil {
		unix.Close(fd)
		return "", fmt.Errorf("listen %s: %w", addr, err)
	}
	l.listeners[fd] = proxy
	if err := l.add(fd, unix.EPOLLIN); err != nil {
		return "", err
	}
	switch a := got.(type) {
	case *unix.SockaddrInet4:
		return netip.AddrPortFrom(netip.AddrFrom4(a.Addr), uint16(a.Port)).String(), nil
	case *unix.SockaddrInet6:
		return netip.AddrPortFrom(netip.AddrFrom16(a.Addr), uint16(a.Port)).String(), nil
	}
	return addr, nil
}

// closeAll closes every descriptor of the loop.
func (l *loop) closeAll() {
	for _, c := range l.conns {
		if c != nil {
			unix.Close(c.fd)
		}
	}
	l.conns = nil
	for fd := range l.listeners {
		unix.Close(fd)
	}
	if l.wake >= 0 {
		unix.Close(l.wake)
	}
	unix.Close(l.ep)
}

func (l *loop) run() {
	// The thread is the loop's for its life, pinned to its CPU: the
	// engine's threads are where the plan put them, one per CPU.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if l.cpu >= 0 {
		var set unix.CPUSet
		set.Set(l.cpu)
		_ = unix.SchedSetaffinity(0, &set) // the process's own pinning still holds
	}
	defer l.closeAll()
	for {
		n := pollNow(l.ep, l.events)
		if n == 0 {
			var err error
			if n, err = unix.EpollWait(l.ep, l.events, -1); err != nil {
				if errors.Is(err, unix.EINTR) {
					continue
				}
				return
			}
		}
		for i := range n {
			ev := l.events[i]
			fd := int(ev.Fd)
			if fd == l.wake {
				return
			}
			if proxy, ok := l.listeners[fd]; ok {
				l.accept(fd, proxy)
				continue
			}
			if fd < len(l.conns) && l.conns[fd] != nil {
				l.serve(l.conns[fd], ev.Events)
			}
		}
	}
}

func (l *loop) accept(lfd int, proxy bool) {
	for {
		fd, _, err := unix.Accept4(lfd, unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC)
		if err != nil {
			return // EAGAIN: none left; anything else: the next event retries
		}
		_ = unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_NODELAY, 1)
		if err := l.add(fd, unix.EPOLLIN|unix.EPOLLRDHUP); err != nil {
			unix.Close(fd)
			continue
		}
		for fd >= len(l.conns) {
			l.conns = append(l.conns, make([]*conn, len(l.conns)+64)...)
		}
		c := &conn{fd: fd, proxy: proxy}
		c.out = c.outBuf[:0]
		l.conns[fd] = c
		l.accepted.Add(1)
	}
}

func (l *loop) drop(c *conn) {
	_ = unix.EpollCtl(l.ep, unix.EPOLL_CTL_DEL, c.fd, nil)
	unix.Close(c.fd)
	l.conns[c.fd] = nil
}

// serve handles a connection's events: it reads when nothing is queued,
// answers every whole request read, and writes.
func (l *loop) serve(c *conn, events uint32) {
	if events&unix.EPOLLERR != 0 {
		l.drop(c)
		return
	}
	if c.queued == 0 && events&(unix.EPOLLIN|unix.EPOLLHUP|unix.EPOLLRDHUP) != 0 {
		n, err := rawRead(c.fd, l.buf)
		switch {
		case n > 0:
			c.in = append(c.in, l.buf[:n]...)
		case err == unix.EAGAIN:
		default:
			l.drop(c) // the client closed, or the socket failed
			return
		}
	}
	if !l.answer(c) {
		return
	}
	if !l.flush(c) {
		return
	}
	// More whole requests may wait behind what has just left.
	for c.queued == 0 && !c.closing && len(c.in) > 0 {
		before := len(c.in)
		if !l.answer(c) || !l.flush(c) {
			return
		}
		if len(c.in) == before {
			break
		}
	}
	if c.queued == 0 && c.closing {
		l.drop(c)
		return
	}
	want := c.queued > 0
	if want != c.wantOut {
		ev := uint32(unix.EPOLLIN | unix.EPOLLRDHUP)
		if want {
			// Only EPOLLOUT while answers are queued: pipelined requests
			// wait in the kernel, not in a loop that reads and cannot answer.
			ev = unix.EPOLLOUT | unix.EPOLLRDHUP
		}
		if err := unix.EpollCtl(l.ep, unix.EPOLL_CTL_MOD, c.fd, &unix.EpollEvent{Events: ev, Fd: int32(c.fd)}); err != nil {
			l.drop(c)
			return
		}
		c.wantOut = want
	}
}

// answer queues the answers of the whole requests in c.in, up to outHigh
// bytes; false when the connection was dropped.
func (l *loop) answer(c *conn) bool {
	if c.proxy {
		h, n, err := builtin.ParseProxyHeader(c.in, builtin.DefaultProxyMaxHeaderBytes)
		if err != nil {
			l.refused.Add(1)
			l.drop(c)
			return false
		}
		if n == 0 {
			if len(c.in) > 16+builtin.DefaultProxyMaxHeaderBytes {
				l.refused.Add(1)
				l.drop(c)
				return false
			}
			return true // more bytes to come
		}
		c.proxy = false
		c.in = c.in[n:]
		src := h.Source.String()
		if h.Local || !h.Source.IsValid() {
			if sa, err := unix.Getpeername(c.fd); err == nil {
				src = sockaddrString(sa)
			}
		}
		c.client = []byte(builtin.ClientHeader + ": " + src + "\r\n")
	}
	for !c.closing && c.queued < outHigh && len(c.in) > 0 {
		end := bytes.Index(c.in, crlfcrlf)
		if end < 0 {
			if len(c.in) > maxHeaderBytes {
				c.queue(answer431)
				c.closing = true
			}
			break
		}
		req := c.in[:end+2]
		l.requests.Add(1)
		l.respond(c, req)
		c.in = c.in[end+4:]
	}
	if len(c.in) == 0 && c.in != nil && cap(c.in) > readBufBytes {
		c.in = nil // a long header once is not kept for the connection's life
	}
	return true
}

var crlfcrlf = []byte("\r\n\r\n")

func (c *conn) queue(b []byte) {
	c.out = append(c.out, b)
	c.queued += len(b)
}

// head appends s to the connection's arena and returns it: a piece that
// stays put until the connection's queue has left.
func (c *conn) head(parts ...[]byte) []byte {
	start := len(c.arena)
	for _, p := range parts {
		c.arena = append(c.arena, p...)
	}
	return c.arena[start:len(c.arena):len(c.arena)]
}

// request is what the null engine reads of a request.
type request struct {
	method, target, rng []byte
	http10, close, body bool
}

// parse reads the request line and the headers it needs; false when the
// request line is malformed.
func parse(req []byte) (r request, ok bool) {
	line, rest, _ := bytes.Cut(req, []byte("\r\n"))
	sp := bytes.IndexByte(line, ' ')
	if sp <= 0 {
		return r, false
	}
	r.method = line[:sp]
	line = line[sp+1:]
	sp = bytes.IndexByte(line, ' ')
	if sp <= 0 {
		return r, false
	}
	r.target, line = line[:sp], line[sp+1:]
	switch string(line) {
	case "HTTP/1.1":
	case "HTTP/1.0":
		r.http10, r.close = true, true
	default:
		return r, false
	}
	for len(rest) > 0 {
		var h []byte
		h, rest, _ = bytes.Cut(rest, []byte("\r\n"))
		colon := bytes.IndexByte(h, ':')
		if colon <= 0 {
			if len(h) == 0 {
				continue
			}
			return r, false
		}
		name, val := h[:colon], bytes.TrimSpace(h[colon+1:])
		switch {
		case bytes.EqualFold(name, []byte("Range")):
			r.rng = val
		case bytes.EqualFold(name, []byte("Connection")):
			// HTTP/1.0 keep-alive is not offered: such answers close.
			if bytes.EqualFold(val, []byte("close")) {
				r.close = true
			}
		case bytes.EqualFold(name, []byte("Content-Length")):
			r.body = string(val) != "0"
		case bytes.EqualFold(name, []byte("Transfer-Encoding")):
			r.body = true
		case bytes.EqualFold(name, []byte("Host")):
			// Read and not required: the engine has one site.
		}
	}
	return r, true
}

var (
	closeLine  = []byte("Connection: close\r\n")
	crlf       = []byte("\r\n")
	status206  = []byte("HTTP/1.1 206 Partial Content\r\n")
	contentLen = []byte("Content-Length: ")
	contentRng = []byte("Content-Range: bytes ")
	methodGET  = []byte("GET")
	methodHEAD = []byte("HEAD")
)

// respond queues the answer to one request.
func (l *loop) respond(c *conn, req []byte) {
	r, ok := parse(req)
	if !ok || r.body {
		// A body the engine would not read would be parsed as requests.
		c.queue(answer400)
		c.closing = true
		return
	}
	if r.close {
		c.closing = true
	}
	path := r.target
	if q := bytes.IndexByte(path, '?'); q >= 0 {
		path = path[:q]
	}
	e := l.table[string(path)]
	if e == nil {
		switch {
		case string(path) == ReadyPath:
			c.queue(answerReady)
		default:
			c.queue(answer404)
		}
		return
	}
	head := bytes.Equal(r.method, methodHEAD)
	if !head && !bytes.Equal(r.method, methodGET) {
		c.queue(answer405)
		return
	}
	status, start, end := 200, int64(0), e.size-1
	if len(r.rng) > 0 {
		start, end, status = origin.ParseRange(string(r.rng), e.size)
	}
	switch status {
	case 416:
		if head {
			c.queue(e.head416[:len(e.head416)-len(msg416)])
		} else {
			c.queue(e.head416)
		}
		return
	case 206:
		n := end - start + 1
		var num [64]byte
		h := c.head(status206, e.common, contentRng,
			strconv.AppendInt(num[:0], start, 10), []byte{'-'}, strconv.AppendInt(num[20:20], end, 10), []byte{'/'},
			strconv.AppendInt(num[40:40], e.size, 10), crlf, contentLen, strconv.AppendInt(nil, n, 10), crlf)
		c.queue(h)
		l.tail(c, head, e.body[start:end+1])
		return
	}
	if !head && c.client == nil && !c.closing {
		c.queue(e.full) // the common case: one prebuilt slice
		return
	}
	c.queue(e.head200)
	l.tail(c, head, e.body)
}

// tail queues what follows an answer's headers: the client line, the
// connection's fate, the blank line, and the body unless HEAD.
func (l *loop) tail(c *conn, head bool, body []byte) {
	if c.client != nil {
		c.queue(c.client)
	}
	if c.closing {
		c.queue(closeLine)
	}
	c.queue(crlf)
	if !head && len(body) > 0 {
		c.queue(body)
	}
}

// flush writes what is queued until it has all left or the socket is
// full; false when the connection was dropped.
func (l *loop) flush(c *conn) bool {
	for c.queued > 0 {
		var n int
		var err error
		n, err = rawWritev(c.fd, c.out, l.iov[:])
		if err == unix.EAGAIN {
			l.waits.Add(1)
			return true // EPOLLOUT resumes it
		}
		if err != nil || n <= 0 {
			l.drop(c)
			return false
		}
		c.queued -= n
		for n > 0 {
			if n >= len(c.out[0]) {
				n -= len(c.out[0])
				c.out[0] = nil
				c.out = c.out[1:]
				continue
			}
			// A partial write: the rest of this piece goes next.
			c.out[0] = c.out[0][n:]
			n = 0
		}
	}
	clear(c.outBuf[:])
	c.out = c.outBuf[:0]
	c.arena = c.arena[:0]
	return true
}

func sockaddrString(sa unix.Sockaddr) string {
	switch a := sa.(type) {
	case *unix.SockaddrInet4:
		return net.JoinHostPort(netip.AddrFrom4(a.Addr).String(), strconv.Itoa(a.Port))
	case *unix.SockaddrInet6:
		return net.JoinHostPort(netip.AddrFrom16(a.Addr).String(), strconv.Itoa(a.Port))
	}
	return ""
}
