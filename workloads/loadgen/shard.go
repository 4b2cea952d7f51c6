package loadgen

import (
	"context"
	"crypto/tls"
	"math"
	"math/rand/v2"
	"runtime"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

const (
	readBufSize = 256 << 10
	// maxWait bounds every wait so a stop request, the Go runtime's
	// preemption and timeouts are seen within a few milliseconds.
	maxWait = int64(5 * time.Millisecond)
	// expireEvery is how often in-flight and queued requests are checked
	// against their timeout.
	expireEvery = int64(2 * time.Millisecond)
	evfdIndex   = -1
)

type connState uint8

const (
	connDown connState = iota
	connConnecting
	connIdle
	connBusy
)

// pending is a request between its slot in the schedule and a connection.
type pending struct {
	intended, dispatched int64
}

type conn struct {
	idx     int // index in shard.conns, also the epoll data
	fd      int
	state   connState
	started int64 // connect start (nanotime)
	outWait bool  // EPOLLOUT registered for a partial write or a connect

	req     pending
	written int64
	first   int64
	woff    int // bytes of the request already written (plain sockets)

	fc   *fdConn
	tc   *tls.Conn
	resp response
}

type mode uint8

const (
	modeRate mode = iota
	modeClosed
	modeBurst
)

// passSpec is what every shard runs in one pass; shards only read it.
type passSpec struct {
	mode     mode
	req      []byte
	ex       expect
	t0, end  int64 // nanotime; end is when dispatching stops
	period   float64
	arrival  Arrival
	rate     float64
	seed     uint64
	timeout  int64
	requests int64 // 0: unbounded
	burst    int
	shards   int
	stop     *atomic.Bool
	ivEvery  int64 // HDR log interval, 0 when not logging
}

type shardResult struct {
	m       *metrics
	cpu     time.Duration
	wall    time.Duration
	stopped bool
	err     error
}

type shard struct {
	g      *Generator
	id     int
	epfd   int
	evfd   int
	conns  []*conn
	idle   idleRing
	busy   int
	queue  []pending
	qhead  int
	rbuf   []byte
	events []unix.EpollEvent
	m      *metrics
	cmds   chan func()

	sp       *passSpec
	nextSlot int64 // global slot index of the next send (uniform)
	nextAt   int64 // intended time of the next send
	sent     int64
	quota    int64
	rng      *rand.Rand
	expireAt int64
	stopped  bool

	// sa is this loop's own copy of the target's address: unix.Connect
	// writes into the Sockaddr it is given, so loops must not share one.
	sa     unix.Sockaddr
	iv     *interval
	pinErr error
	// opened counts every socket this shard opened; openedBefore is the
	// count when the previous pass ended.
	opened, openedBefore int64
}

func newShard(g *Generator, id int) (*shard, error) {
	s := &shard{g: g, id: id, rbuf: make([]byte, readBufSize), events: make([]unix.EpollEvent, 256),
		m: newMetrics(), cmds: make(chan func()), sa: copySockaddr(g.sa)}
	var err error
	if s.epfd, err = unix.EpollCreate1(unix.EPOLL_CLOEXEC); err != nil {
		return nil, err
	}
	if s.evfd, err = unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC); err != nil {
		unix.Close(s.epfd)
		return nil, err
	}
	ev := unix.EpollEvent{Events: unix.EPOLLIN, Fd: evfdIndex}
	if err := unix.EpollCtl(s.epfd, unix.EPOLL_CTL_ADD, s.evfd, &ev); err != nil {
		unix.Close(s.evfd)
		unix.Close(s.epfd)
		return nil, err
	}
	go s.serve()
	return s, nil
}

// serve runs every command of this shard on one locked OS thread, so the
// thread's timer slack and CPU accounting are the shard's own.
func (s *shard) serve() {
	runtime.LockOSThread() // never unlocked: the thread dies with the shard
	preciseTimers()
	if cpus := s.g.opts.CPUs; len(cpus) > 0 {
		var set unix.CPUSet
		set.Set(cpus[s.id%len(cpus)])
		s.pinErr = unix.SchedSetaffinity(0, &set)
	}
	for f := range s.cmds {
		f()
	}
}

// do runs f on the shard's thread and waits for it.
func (s *shard) do(f func()) {
	done := make(chan struct{})
	s.cmds <- func() { f(); close(done) }
	<-done
}

func (s *shard) wake() {
	var one = [8]byte{1}
	rawWrite(s.evfd, one[:])
}

func (s *shard) close() {
	s.do(func() {
		for _, c := range s.conns {
			s.closeConn(c)
		}
		unix.Close(s.evfd)
		unix.Close(s.epfd)
	})
	close(s.cmds)
}

func (s *shard) addConn() *conn {
	c := &conn{idx: len(s.conns), fd: -1, resp: newResponse(nil)}
	if s.g.opts.BodyCheck != nil {
		c.resp.check = s.g.opts.BodyCheck()
	}
	s.conns = append(s.conns, c)
	return c
}

// openBlocking connects (and shakes hands) before a pass starts.
func (s *shard) openBlocking(c *conn) error {
	fd, err := dialBlocking(s.sa, s.g.family, s.g.opts.Timeout)
	s.opened++
	if err != nil {
		return err
	}
	c.fd = fd
	if err := s.handshake(c, nanotime()+int64(s.g.opts.Timeout)); err != nil {
		unix.Close(fd)
		c.fd = -1
		return err
	}
	ev := unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLRDHUP, Fd: int32(c.idx)}
	if err := unix.EpollCtl(s.epfd, unix.EPOLL_CTL_ADD, fd, &ev); err != nil {
		unix.Close(fd)
		c.fd = -1
		return err
	}
	c.state = connIdle
	c.outWait = false
	return nil
}

// handshake runs the TLS handshake, blocking on the socket, when the target
// is https. A reconnect during a pass blocks this shard for the handshake.
func (s *shard) handshake(c *conn, deadline int64) error {
	if s.g.tlsConfig == nil {
		c.fc, c.tc = nil, nil
		return nil
	}
	c.fc = &fdConn{fd: c.fd, blocking: true, deadline: deadline}
	c.tc = tls.Client(c.fc, s.g.tlsConfig)
	ctx, cancel := context.WithDeadline(context.Background(), time.Now().Add(time.Duration(deadline-nanotime())))
	defer cancel()
	if err := c.tc.HandshakeContext(ctx); err != nil {
		return err
	}
	c.fc.blocking = false
	return nil
}

// startReconnect replaces a closed connection without waiting for it.
func (s *shard) startReconnect(c *conn, now int64) {
	fd, done, err := startConnect(s.sa, s.g.family)
	s.opened++
	if err != nil {
		s.connectFailed(c, now)
		return
	}
	c.fd = fd
	c.started = now
	ev := unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLRDHUP | unix.EPOLLOUT, Fd: int32(c.idx)}
	if err := unix.EpollCtl(s.epfd, unix.EPOLL_CTL_ADD, fd, &ev); err != nil {
		unix.Close(fd)
		c.fd = -1
		s.connectFailed(c, now)
		return
	}
	c.outWait = true
	c.state = connConnecting
	if done {
		s.connected(c, now)
	}
}

func (s *shard) connected(c *conn, now int64) {
	if err := connectResult(c.fd); err != nil {
		s.closeConn(c)
		s.connectFailed(c, now)
		return
	}
	if err := s.handshake(c, now+int64(s.g.opts.Timeout)); err != nil {
		s.closeConn(c)
		s.connectFailed(c, nanotime())
		return
	}
	s.setOut(c, false)
	c.state = connIdle
	s.connIdle(c, nanotime())
}

// connectFailed charges a failed connect to the oldest waiting request, if
// any: that request could not be sent. With nothing waiting the connection
// stays down until a request needs it.
func (s *shard) connectFailed(c *conn, now int64) {
	c.state = connDown
	if s.qlen() == 0 {
		return
	}
	p := s.qpop()
	s.m.requests++
	s.m.errs[errConnect]++
	s.reportLost(p, errConnect)
	if s.qlen() > 0 {
		s.startReconnect(c, now)
	}
}

func (s *shard) setOut(c *conn, on bool) {
	if c.outWait == on {
		return
	}
	ev := unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLRDHUP, Fd: int32(c.idx)}
	if on {
		ev.Events |= unix.EPOLLOUT
	}
	_ = unix.EpollCtl(s.epfd, unix.EPOLL_CTL_MOD, c.fd, &ev)
	c.outWait = on
}

func (s *shard) closeConn(c *conn) {
	if c.fd >= 0 {
		unix.Close(c.fd) // also leaves the epoll set
		c.fd = -1
	}
	if c.state == connBusy {
		s.busy--
	}
	c.state = connDown
	c.outWait = false
	c.fc, c.tc = nil, nil
}

// queue: a FIFO of pending requests in a slice that is reused between passes.
func (s *shard) qlen() int { return len(s.queue) - s.qhead }

func (s *shard) qpush(p pending) { s.queue = append(s.queue, p) }

func (s *shard) qpop() pending {
	p := s.queue[s.qhead]
	s.qhead++
	if s.qhead == len(s.queue) {
		s.queue, s.qhead = s.queue[:0], 0
	} else if s.qhead > 4096 && s.qhead*2 > len(s.queue) {
		n := copy(s.queue, s.queue[s.qhead:])
		s.queue, s.qhead = s.queue[:n], 0
	}
	return p
}

// run executes one pass on this shard's thread.
func (s *shard) run(sp *passSpec) shardResult {
	s.sp = sp
	s.m.reset()
	s.queue, s.qhead = s.queue[:0], 0
	s.stopped = false
	s.sent = 0

	// Every connection is open before t0.
	for _, c := range s.conns {
		if c.state == connDown {
			if err := s.openBlocking(c); err != nil {
				return shardResult{m: s.m, err: err}
			}
		}
	}
	s.idle.reset(len(s.conns))
	for _, c := range s.conns {
		if c.state == connIdle {
			s.idle.push(c)
		}
	}
	s.busy = 0
	s.setupPacer()
	cpu0 := threadCPU()

	// Sleep to t0 on the loop's own clock, so all shards start together.
	for {
		left := sp.t0 - nanotime()
		if left <= 0 {
			break
		}
		s.wait(min(left, maxWait))
		if sp.stop.Load() {
			break
		}
	}
	if sp.ivEvery > 0 {
		s.iv = s.newInterval(sp.t0)
	}
	s.expireAt = sp.t0 + expireEvery

	switch sp.mode {
	case modeClosed:
		now := nanotime()
		for range s.conns {
			if !s.canSend(now) {
				break
			}
			s.submit(pending{intended: now, dispatched: now}, now)
		}
	case modeBurst:
		now := nanotime()
		for s.sent < s.quota {
			s.submit(pending{intended: sp.t0, dispatched: now}, now)
		}
	}

	for {
		now := nanotime()
		if sp.stop.Load() {
			s.interrupt()
			break
		}
		if sp.mode == modeRate {
			s.dispatch(now)
		}
		if now >= s.expireAt {
			s.expire(now)
			s.expireAt = now + expireEvery
		}
		if s.iv != nil && now >= s.iv.end {
			s.rotate(now)
		}
		if s.finished(now) {
			break
		}
		n := s.wait(s.waitFor(now))
		for i := 0; i < n; i++ {
			ev := &s.events[i]
			if ev.Fd == evfdIndex {
				var b [8]byte
				rawRead(s.evfd, b[:])
				continue
			}
			s.onEvent(s.conns[ev.Fd], ev.Events)
			// Many large reads can take a while: a slot that fell due
			// meanwhile goes out now, not after the whole batch.
			if sp.mode == modeRate && i+1 < n {
				if now := nanotime(); s.nextAt <= now {
					s.dispatch(now)
				}
			}
		}
	}
	s.m.sockets = s.opened - s.openedBefore
	s.openedBefore = s.opened
	res := shardResult{m: s.m, cpu: threadCPU() - cpu0, wall: time.Duration(nanotime() - sp.t0), stopped: s.stopped}
	if s.iv != nil {
		s.iv.end = nanotime()
		s.g.log.in <- s.iv
		s.iv = nil
	}
	return res
}

func (s *shard) wait(d int64) int {
	n, e := epollWait(s.epfd, s.events, d)
	if e != 0 {
		return 0 // EINTR: the runtime preempted us; just loop
	}
	return n
}

func (s *shard) setupPacer() {
	sp := s.sp
	shards := int64(sp.shards)
	id := int64(s.id)
	s.quota = math.MaxInt64
	if sp.requests > 0 {
		s.quota = sp.requests / shards
		if id < sp.requests%shards {
			s.quota++
		}
	}
	switch sp.mode {
	case modeBurst:
		s.quota = int64(sp.burst) / shards
		if id < int64(sp.burst)%shards {
			s.quota++
		}
	case modeRate:
		s.nextSlot = id
		s.nextAt = sp.t0 + int64(float64(id)*sp.period)
		if sp.arrival == Poisson {
			s.rng = rand.New(rand.NewPCG(sp.seed, uint64(id)+1))
			s.nextAt = sp.t0 + int64(s.rng.ExpFloat64()*sp.period*float64(shards))
		}
	}
}

// dispatch releases every slot that is due. The schedule never waits for
// answers and never skips a slot: a slot that finds no free connection queues.
func (s *shard) dispatch(now int64) {
	sp := s.sp
	for s.nextAt <= now && s.nextAt < sp.end && s.sent < s.quota {
		p := pending{intended: s.nextAt, dispatched: now}
		if sp.arrival == Poisson {
			s.nextAt += int64(s.rng.ExpFloat64() * sp.period * float64(sp.shards))
		} else {
			s.nextSlot += int64(sp.shards)
			s.nextAt = sp.t0 + int64(float64(s.nextSlot)*sp.period)
		}
		s.submit(p, now)
	}
}

func (s *shard) canSend(now int64) bool {
	return now < s.sp.end && s.sent < s.quota
}

func (s *shard) submit(p pending, now int64) {
	s.sent++
	s.m.dispatched++
	lag := p.dispatched - p.intended
	record(s.m.lag, lag)
	if lag > int64(time.Millisecond) {
		s.m.lagOverMs++
	}
	if c := s.idle.pop(); c != nil {
		s.send(c, p)
		return
	}
	s.m.queued++
	s.qpush(p)
	// A connection that is down is reopened for the waiting request.
	for _, c := range s.conns {
		if c.state == connDown {
			s.startReconnect(c, now)
			break
		}
	}
}

func (s *shard) send(c *conn, p pending) {
	c.req = p
	c.first = 0
	c.woff = 0
	c.resp.reset()
	c.state = connBusy
	s.busy++
	c.written = nanotime()
	record(s.m.wait, c.written-p.dispatched)
	req := s.sp.req
	if c.tc != nil {
		if _, err := c.tc.Write(req); err != nil {
			s.fail(c, errIO, c.written)
			return
		}
		if len(c.fc.pending) > 0 {
			s.setOut(c, true)
		}
		return
	}
	s.writeMore(c)
}

func (s *shard) writeMore(c *conn) {
	req := s.sp.req
	for c.woff < len(req) {
		n, e := rawWrite(c.fd, req[c.woff:])
		switch e {
		case 0:
			c.woff += n
		case unix.EINTR:
		case unix.EAGAIN:
			s.setOut(c, true)
			return
		default:
			s.fail(c, errIO, nanotime())
			return
		}
	}
	if c.outWait {
		s.setOut(c, false)
	}
}

func (s *shard) onEvent(c *conn, ev uint32) {
	switch c.state {
	case connDown:
		return
	case connConnecting:
		if ev&(unix.EPOLLOUT|unix.EPOLLERR|unix.EPOLLHUP) != 0 {
			s.connected(c, nanotime())
		}
		return
	}
	if ev&unix.EPOLLOUT != 0 && c.state == connBusy {
		if c.tc != nil {
			if done, err := c.fc.flush(); err != nil {
				s.fail(c, errIO, nanotime())
				return
			} else if done {
				s.setOut(c, false)
			}
		} else {
			s.writeMore(c)
		}
		if c.state != connBusy {
			return
		}
	}
	if ev&(unix.EPOLLIN|unix.EPOLLRDHUP|unix.EPOLLHUP|unix.EPOLLERR) != 0 {
		if c.tc != nil {
			s.readTLS(c)
		} else {
			s.readPlain(c)
		}
	}
}

func (s *shard) readPlain(c *conn) {
	n, e := rawRead(c.fd, s.rbuf)
	now := nanotime()
	switch {
	case e == unix.EAGAIN || e == unix.EINTR:
		return
	case e != 0:
		s.lost(c, now)
		return
	case n == 0:
		s.eof(c, now)
		return
	}
	s.received(c, s.rbuf[:n], now)
}

func (s *shard) readTLS(c *conn) {
	for c.tc != nil {
		n, err := c.tc.Read(s.rbuf)
		now := nanotime()
		if n > 0 {
			s.received(c, s.rbuf[:n], now)
			if c.tc == nil || c.state != connBusy {
				return
			}
		}
		switch {
		case err == nil:
		case err == errWouldBlock:
			return
		case n == 0 && isEOF(err):
			s.eof(c, now)
			return
		default:
			s.lost(c, now)
			return
		}
	}
}

// received feeds bytes read from a connection to its response.
func (s *shard) received(c *conn, p []byte, now int64) {
	if c.state != connBusy {
		// Bytes nobody asked for: the server is broken. Drop the connection.
		s.m.errs[errProtocol]++
		s.closeConn(c)
		s.startReconnect(c, now)
		return
	}
	if c.first == 0 {
		c.first = now
	}
	used, done, err := c.resp.feed(p, &s.sp.ex)
	switch {
	case err != nil:
		s.fail(c, errProtocol, now)
	case done && used < len(p):
		s.fail(c, errProtocol, now) // bytes after the answer we asked for
	case done:
		s.m.bodyBytes += c.resp.bodyRead
		s.finish(c, c.resp.verdict(&s.sp.ex), now)
	}
}

// eof handles a connection the server closed.
func (s *shard) eof(c *conn, now int64) {
	if c.state != connBusy {
		s.closeConn(c)
		s.removeIdle(c)
		s.startReconnect(c, now)
		return
	}
	kind := c.resp.eof(&s.sp.ex)
	c.resp.close = true
	s.m.bodyBytes += c.resp.bodyRead
	s.finish(c, kind, now)
}

// lost handles a reset or failed read.
func (s *shard) lost(c *conn, now int64) {
	if c.state != connBusy {
		s.closeConn(c)
		s.removeIdle(c)
		s.startReconnect(c, now)
		return
	}
	kind := errIO
	if c.resp.sawBytes {
		kind = c.resp.eof(&s.sp.ex)
		if kind == errNone {
			kind = errIO
		}
	}
	s.fail(c, kind, now)
}

func (s *shard) removeIdle(c *conn) {
	s.idle.remove(c)
}

// fail ends a request with an error and drops its connection, whose state
// is unknown.
func (s *shard) fail(c *conn, kind errKind, now int64) {
	c.resp.close = true
	s.finish(c, kind, now)
}

// finish records a request's outcome and puts its connection back to work.
func (s *shard) finish(c *conn, kind errKind, now int64) {
	m := s.m
	m.requests++
	m.lastDone = now
	if st := c.resp.info.Status; st > 0 && st < len(m.status) {
		m.status[st]++
		m.cache[c.resp.info.Cache]++
		m.answered++
	}
	if s.g.opts.OnRecord != nil {
		s.report(c, kind, now)
	}
	switch kind {
	case errNone:
		m.ok++
		record(m.ttfb, c.first-c.req.intended)
		record(m.ttfbUnc, c.first-c.written)
		record(m.total, now-c.req.intended)
		record(m.totalUnc, now-c.written)
		if s.iv != nil {
			record(s.iv.ttfb, c.first-c.req.intended)
			record(s.iv.total, now-c.req.intended)
		}
	case errTimeout:
		m.errs[kind]++
		s.recordTimeout()
	default:
		m.errs[kind]++
	}
	if c.resp.close {
		s.closeConn(c)
		s.startReconnect(c, now)
	} else {
		c.state = connIdle
		s.busy--
		s.connIdle(c, now)
	}
	if s.sp.mode == modeClosed && s.canSend(now) {
		s.submit(pending{intended: now, dispatched: now}, now)
	}
}

func (s *shard) recordTimeout() {
	t := s.sp.timeout
	record(s.m.ttfb, t)
	record(s.m.ttfbUnc, t)
	record(s.m.total, t)
	record(s.m.totalUnc, t)
	if s.iv != nil {
		record(s.iv.ttfb, t)
		record(s.iv.total, t)
	}
}

// report hands one outcome to Options.OnRecord; c is nil for a request that
// never reached a connection.
func (s *shard) report(c *conn, kind errKind, now int64) {
	rec := Record{}
	var check BodyCheck
	if c != nil {
		rec.Intended = s.g.wallOf(c.req.intended)
		rec.Status = c.resp.info.Status
		rec.Cache = c.resp.info.Cache
		check = c.resp.check
		if kind == errNone {
			rec.TTFB = time.Duration(c.first - c.req.intended)
			rec.Total = time.Duration(now - c.req.intended)
		}
	}
	if kind == errTimeout {
		rec.Total = time.Duration(s.sp.timeout)
	}
	if kind != errNone {
		rec.Err = kind.String()
	}
	s.g.opts.OnRecord(s.id, &rec, check)
}

func (s *shard) reportLost(p pending, kind errKind) {
	if s.g.opts.OnRecord == nil {
		return
	}
	rec := Record{Intended: s.g.wallOf(p.intended), Err: kind.String()}
	if kind == errTimeout {
		rec.Total = time.Duration(s.sp.timeout)
	}
	s.g.opts.OnRecord(s.id, &rec, nil)
}

// connIdle gives a free connection the oldest waiting request, or parks it.
func (s *shard) connIdle(c *conn, now int64) {
	if s.qlen() > 0 {
		s.send(c, s.qpop())
		return
	}
	s.idle.push(c)
}

// expire ends requests that outlived the timeout, counted from their
// intended send time, queued or in flight.
func (s *shard) expire(now int64) {
	t := s.sp.timeout
	for s.qlen() > 0 && s.queue[s.qhead].intended+t <= now {
		p := s.qpop()
		s.m.requests++
		s.m.errs[errTimeout]++
		s.recordTimeout()
		s.reportLost(p, errTimeout)
	}
	for _, c := range s.conns {
		switch c.state {
		case connBusy:
			if c.req.intended+t <= now {
				s.fail(c, errTimeout, now)
			}
		case connConnecting:
			if c.started+t <= now {
				s.closeConn(c)
				s.connectFailed(c, now)
			}
		}
	}
}

func (s *shard) finished(now int64) bool {
	if s.busy > 0 || s.qlen() > 0 {
		return false
	}
	switch s.sp.mode {
	case modeRate:
		return s.nextAt >= s.sp.end || s.sent >= s.quota
	case modeClosed:
		return !s.canSend(now)
	}
	return s.sent >= s.quota
}

func (s *shard) waitFor(now int64) int64 {
	w := maxWait
	if s.sp.mode == modeRate && s.nextAt < s.sp.end && s.sent < s.quota {
		w = min(w, s.nextAt-now)
	}
	if s.busy > 0 || s.qlen() > 0 {
		w = min(w, s.expireAt-now)
	}
	if s.iv != nil {
		w = min(w, s.iv.end-now)
	}
	return max(w, 0)
}

// interrupt abandons the pass: answers still in flight are not waited for and
// their connections are dropped, since their answers would arrive later.
func (s *shard) interrupt() {
	s.stopped = true
	for _, c := range s.conns {
		if c.state == connBusy || c.state == connConnecting {
			s.closeConn(c)
		}
	}
	s.queue, s.qhead = s.queue[:0], 0
}

// idleRing holds the free connections in the order they became free. Sends
// take the one free longest, so every connection of the pool carries its
// share, as a population of clients would, and none sits unused long enough
// for a server's idle or header timeout to close it.
type idleRing struct {
	buf        []*conn
	head, size int
}

func (r *idleRing) reset(n int) {
	if cap(r.buf) < n {
		r.buf = make([]*conn, n)
	}
	r.buf = r.buf[:n]
	r.head, r.size = 0, 0
}

func (r *idleRing) push(c *conn) {
	r.buf[(r.head+r.size)%len(r.buf)] = c
	r.size++
}

func (r *idleRing) pop() *conn {
	if r.size == 0 {
		return nil
	}
	c := r.buf[r.head]
	r.buf[r.head] = nil
	r.head = (r.head + 1) % len(r.buf)
	r.size--
	return c
}

// remove takes out a connection that closed while free (rare).
func (r *idleRing) remove(c *conn) {
	n := r.size
	for i := 0; i < n; i++ {
		x := r.pop()
		if x != c {
			r.push(x)
		}
	}
}
