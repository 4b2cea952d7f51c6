package builtin

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"log"
	"net"
	"net/netip"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// Defaults used in place of a zero ProxyOptions field.
const (
	// DefaultProxyHeaderTimeout bounds the time from accepting a connection
	// to having its whole PROXY header.
	DefaultProxyHeaderTimeout = 5 * time.Second
	// DefaultProxyMaxHeaderBytes bounds the header's length field: the
	// address block plus TLVs, after the 16 fixed bytes. A client
	// certificate sent by a TLS terminator as a TLV is typically 1 to 2 KiB.
	DefaultProxyMaxHeaderBytes = 4096
)

// The fixed part of a PROXY v2 header: the signature, then version and
// command, family and transport, and the big-endian length of what follows.
const proxyPrefixLen = 16

var proxySignature = [12]byte{0x0D, 0x0A, 0x0D, 0x0A, 0x00, 0x0D, 0x0A, 0x51, 0x55, 0x49, 0x54, 0x0A}

// proxyV1Start begins every PROXY v1 text header.
const proxyV1Start = "PROXY "

// Version and command byte (version 2 in the high nibble), and the family and
// transport byte, as the PROXY protocol specification numbers them.
const (
	proxyLocal = 0x20
	proxyProxy = 0x21

	famUnspec     = 0x00
	famTCP4       = 0x11
	famUDP4       = 0x12
	famTCP6       = 0x21
	famUDP6       = 0x22
	famUnixStream = 0x31
	famUnixDgram  = 0x32

	addrLen4 = 12 // two IPv4 addresses, two ports
	addrLen6 = 36 // two IPv6 addresses, two ports

	tlvCRC32C = 0x03
)

var crc32cTable = crc32.MakeTable(crc32.Castagnoli)

// ProxyHeader is what a PROXY protocol v2 header says about a connection.
type ProxyHeader struct {
	// Local is the LOCAL command: the connection was made by the proxy
	// itself (a health check, say), so the connection's own addresses stand.
	// A receiver ignores the addresses and TLVs of a LOCAL header.
	Local bool
	// Source and Destination are the client's address and the address it
	// connected to on the proxy: both IPv4, both IPv6, or both zero (family
	// UNSPEC, where the connection's own addresses stand).
	Source, Destination netip.AddrPort
	// TLVs are the type-length-value records after the addresses, in order.
	TLVs []ProxyTLV
}

// ProxyTLV is one type-length-value record of a PROXY v2 header, such as
// PP2_TYPE_ALPN (0x01) or PP2_TYPE_AUTHORITY (0x02).
type ProxyTLV struct {
	Type  byte
	Value []byte // at most 65535 bytes; nil when empty
}

// AppendProxyHeader appends h encoded as a PROXY v2 header over TCP (or
// UNSPEC when h has no addresses) to b. TLVs are written as they are, so a
// PP2_TYPE_CRC32C value is not computed here.
func AppendProxyHeader(b []byte, h ProxyHeader) ([]byte, error) {
	src, dst := h.Source.Addr(), h.Destination.Addr()
	var fam byte
	var n int
	switch {
	case !src.IsValid() && !dst.IsValid():
		fam, n = famUnspec, 0
	case src.Is4() && dst.Is4():
		fam, n = famTCP4, addrLen4
	case src.Is6() && dst.Is6():
		fam, n = famTCP6, addrLen6
	default:
		return b, fmt.Errorf("encode PROXY v2 header: source %v and destination %v: want both IPv4, both IPv6, or neither", h.Source, h.Destination)
	}
	for _, t := range h.TLVs {
		if len(t.Value) > 0xFFFF {
			return b, fmt.Errorf("encode PROXY v2 header: TLV type 0x%02X has %d bytes: want at most 65535", t.Type, len(t.Value))
		}
		n += 3 + len(t.Value)
	}
	if n > 0xFFFF {
		return b, fmt.Errorf("encode PROXY v2 header: addresses and TLVs take %d bytes: want at most 65535", n)
	}
	cmd := byte(proxyProxy)
	if h.Local {
		cmd = proxyLocal
	}
	b = append(b, proxySignature[:]...)
	b = append(b, cmd, fam)
	b = binary.BigEndian.AppendUint16(b, uint16(n))
	switch fam {
	case famTCP4:
		s, d := src.As4(), dst.As4()
		b = append(append(b, s[:]...), d[:]...)
	case famTCP6:
		s, d := src.As16(), dst.As16()
		b = append(append(b, s[:]...), d[:]...)
	}
	if fam != famUnspec {
		b = binary.BigEndian.AppendUint16(b, h.Source.Port())
		b = binary.BigEndian.AppendUint16(b, h.Destination.Port())
	}
	for _, t := range h.TLVs {
		b = append(b, t.Type)
		b = binary.BigEndian.AppendUint16(b, uint16(len(t.Value)))
		b = append(b, t.Value...)
	}
	return b, nil
}

// proxyReason is why a connection's header was refused; each has a field in
// ProxyStats.
type proxyReason int

const (
	reasonNone proxyReason = iota
	reasonEmpty
	reasonTruncated
	reasonTimeout
	reasonSignature
	reasonV1
	reasonVersion
	reasonFamily
	reasonLength
	reasonOversize
	reasonTLV
	reasonChecksum
	numReasons
)

// proxyError is a refused header: the reason it is counted under and what
// was wrong.
type proxyError struct {
	reason proxyReason
	msg    string
	err    error // the read error, for reasons that come from one
}

func (e *proxyError) Error() string {
	if e.err != nil {
		return e.msg + ": " + e.err.Error()
	}
	return e.msg
}

func (e *proxyError) Unwrap() error { return e.err }

func refuse(reason proxyReason, format string, args ...any) *proxyError {
	return &proxyError{reason: reason, msg: fmt.Sprintf(format, args...)}
}

// readProxyHeader reads one PROXY v2 header from r and not a byte more, so
// the request after it stays in r. maxLen bounds the length field.
func readProxyHeader(r io.Reader, maxLen int) (ProxyHeader, error) {
	var pre [proxyPrefixLen]byte
	n := 0
	for n < len(pre) {
		m, err := r.Read(pre[n:])
		n += m
		// Judge bytes as they come, so a client that is not a PROXY sender
		// (plain HTTP pointed at the wrong port) is refused at once, not
		// after the header timeout.
		if reason := judgeStart(pre[:n]); reason != reasonNone {
			return ProxyHeader{}, startError(reason, pre[:n])
		}
		if err != nil && n < len(pre) {
			if n > 0 && pre[0] == proxyV1Start[0] {
				return ProxyHeader{}, startError(reasonV1, pre[:n])
			}
			return ProxyHeader{}, readError(err, n, len(pre))
		}
	}
	if v := pre[12] >> 4; v != 2 {
		return ProxyHeader{}, refuse(reasonVersion, "version %d: want 2", v)
	}
	cmd, fam := pre[12], pre[13]
	if cmd != proxyLocal && cmd != proxyProxy {
		return ProxyHeader{}, refuse(reasonVersion, "command 0x%X: want LOCAL (0x0) or PROXY (0x1)", cmd&0xF)
	}
	// A LOCAL header's family is ignored, as the specification says.
	addrLen := 0
	if cmd == proxyProxy {
		switch fam {
		case famUnspec:
		case famTCP4:
			addrLen = addrLen4
		case famTCP6:
			addrLen = addrLen6
		case famUDP4, famUDP6, famUnixStream, famUnixDgram:
			return ProxyHeader{}, refuse(reasonFamily, "family and transport 0x%02X (%s) not served: want TCP over IPv4 (0x11) or IPv6 (0x21), or UNSPEC (0x00)", fam, famName(fam))
		default:
			return ProxyHeader{}, refuse(reasonFamily, "family and transport 0x%02X unknown: want TCP over IPv4 (0x11) or IPv6 (0x21), or UNSPEC (0x00)", fam)
		}
	}
	length := int(binary.BigEndian.Uint16(pre[14:]))
	if length > maxLen {
		return ProxyHeader{}, refuse(reasonOversize, "length %d is over the limit of %d bytes of addresses and TLVs (ProxyOptions.MaxHeaderBytes)", length, maxLen)
	}
	if length < addrLen {
		return ProxyHeader{}, refuse(reasonLength, "length %d is shorter than the %d bytes of %s addresses", length, addrLen, famName(fam))
	}
	block := make([]byte, length)
	if m, err := io.ReadFull(r, block); err != nil {
		return ProxyHeader{}, readError(err, len(pre)+m, len(pre)+length)
	}
	if cmd == proxyLocal {
		return ProxyHeader{Local: true}, nil
	}

	var h ProxyHeader
	switch fam {
	case famTCP4:
		h.Source = netip.AddrPortFrom(netip.AddrFrom4([4]byte(block[0:4])), binary.BigEndian.Uint16(block[8:]))
		h.Destination = netip.AddrPortFrom(netip.AddrFrom4([4]byte(block[4:8])), binary.BigEndian.Uint16(block[10:]))
	case famTCP6:
		h.Source = netip.AddrPortFrom(netip.AddrFrom16([16]byte(block[0:16])), binary.BigEndian.Uint16(block[32:]))
		h.Destination = netip.AddrPortFrom(netip.AddrFrom16([16]byte(block[16:32])), binary.BigEndian.Uint16(block[34:]))
	}
	crcAt := -1
	for off := addrLen; off < len(block); {
		rest := block[off:]
		if len(rest) < 3 {
			return ProxyHeader{}, refuse(reasonTLV, "%d bytes left at offset %d after the addresses: a TLV needs at least 3", len(rest), off-addrLen)
		}
		typ, n := rest[0], int(binary.BigEndian.Uint16(rest[1:3]))
		if n > len(rest)-3 {
			return ProxyHeader{}, refuse(reasonTLV, "TLV type 0x%02X at offset %d after the addresses claims %d bytes, %d are left", typ, off-addrLen, n, len(rest)-3)
		}
		if typ == tlvCRC32C {
			if n != 4 {
				return ProxyHeader{}, refuse(reasonTLV, "CRC32C TLV of %d bytes at offset %d after the addresses: want 4", n, off-addrLen)
			}
			if crcAt >= 0 {
				return ProxyHeader{}, refuse(reasonTLV, "second CRC32C TLV at offset %d after the addresses: want at most one", off-addrLen)
			}
			crcAt = off + 3
		}
		t := ProxyTLV{Type: typ}
		if n > 0 {
			t.Value = rest[3 : 3+n : 3+n]
		}
		h.TLVs = append(h.TLVs, t)
		off += 3 + n
	}
	if crcAt >= 0 {
		// The sum covers the whole header with the checksum's own bytes zero.
		want := binary.BigEndian.Uint32(block[crcAt:])
		sum := crc32.Update(0, crc32cTable, pre[:])
		sum = crc32.Update(sum, crc32cTable, block[:crcAt])
		sum = crc32.Update(sum, crc32cTable, make([]byte, 4))
		sum = crc32.Update(sum, crc32cTable, block[crcAt+4:])
		if sum != want {
			return ProxyHeader{}, refuse(reasonChecksum, "CRC32C TLV says 0x%08X, the header sums to 0x%08X", want, sum)
		}
	}
	return h, nil
}

// judgeStart judges the first bytes of a connection: reasonNone while they
// may still become a v2 signature, or are too few to tell v1 text from other
// bytes; reasonV1 or reasonSignature once they cannot.
func judgeStart(b []byte) proxyReason {
	if k := min(len(b), len(proxySignature)); bytes.Equal(b[:k], proxySignature[:k]) {
		return reasonNone
	}
	if k := min(len(b), len(proxyV1Start)); string(b[:k]) == proxyV1Start[:k] {
		if len(b) >= len(proxyV1Start) {
			return reasonV1
		}
		return reasonNone
	}
	return reasonSignature
}

func startError(reason proxyReason, b []byte) error {
	if reason == reasonV1 {
		return refuse(reasonV1, "PROXY v1 text %q: this listener takes only v2 (hitch: write-proxy-v2 = on; haproxy: send-proxy-v2)", b)
	}
	return refuse(reasonSignature, "not a PROXY v2 signature: starts %q", b)
}

// readError is a read that ended after got of the want bytes read so far.
func readError(err error, got, want int) error {
	switch {
	case errors.Is(err, os.ErrDeadlineExceeded):
		return &proxyError{reason: reasonTimeout, msg: fmt.Sprintf("header not whole in time: %d of %d bytes", got, want), err: err}
	case got == 0:
		return &proxyError{reason: reasonEmpty, msg: "connection ended before its first byte", err: err}
	}
	return &proxyError{reason: reasonTruncated, msg: fmt.Sprintf("connection ended inside the header: %d of %d bytes", got, want), err: err}
}

func famName(fam byte) string {
	switch fam {
	case famTCP4:
		return "TCP over IPv4"
	case famTCP6:
		return "TCP over IPv6"
	case famUDP4:
		return "UDP over IPv4"
	case famUDP6:
		return "UDP over IPv6"
	case famUnixStream:
		return "UNIX stream"
	case famUnixDgram:
		return "UNIX datagram"
	}
	return "UNSPEC"
}

// ProxyOptions configure a ProxyListener. The zero value is the defaults.
type ProxyOptions struct {
	// HeaderTimeout bounds the time from accepting a connection to having
	// its whole header. 0: DefaultProxyHeaderTimeout.
	HeaderTimeout time.Duration
	// MaxHeaderBytes bounds the header's length field (addresses and TLVs);
	// a longer header is refused before its body is read.
	// 0: DefaultProxyMaxHeaderBytes.
	MaxHeaderBytes int
	// ErrorLog, when set, gets one line for each refused connection, saying
	// why.
	ErrorLog *log.Logger
}

// ProxyStats count a ProxyListener's connections since it was made.
// Accepted counts good headers; every other field counts connections closed
// for one reason.
type ProxyStats struct {
	Accepted  int64 `json:"accepted"`  // headers read and valid, LOCAL ones included
	Empty     int64 `json:"empty"`     // ended before their first byte (a port probe, say)
	Truncated int64 `json:"truncated"` // ended, or failed to read, inside the header
	Timeout   int64 `json:"timeout"`   // header not whole within HeaderTimeout
	Signature int64 `json:"signature"` // not the v2 signature (plain HTTP or TLS, say)
	V1        int64 `json:"v1"`        // PROXY v1 text
	Version   int64 `json:"version"`   // a version other than 2, or a command other than LOCAL and PROXY
	Family    int64 `json:"family"`    // family and transport unknown, or not TCP (UDP, UNIX)
	Length    int64 `json:"length"`    // length shorter than the family's addresses
	Oversize  int64 `json:"oversize"`  // length over MaxHeaderBytes
	TLV       int64 `json:"tlv"`       // TLVs that do not exactly fill the rest of the header
	Checksum  int64 `json:"checksum"`  // a CRC32C TLV that does not match
}

// Rejected is the number of connections closed for a bad header.
func (s ProxyStats) Rejected() int64 {
	var n int64
	for r := reasonNone + 1; r < numReasons; r++ {
		n += *s.field(r)
	}
	return n
}

// field is the counter of reason r; reasonNone's is Accepted.
func (s *ProxyStats) field(r proxyReason) *int64 {
	switch r {
	case reasonEmpty:
		return &s.Empty
	case reasonTruncated:
		return &s.Truncated
	case reasonTimeout:
		return &s.Timeout
	case reasonSignature:
		return &s.Signature
	case reasonV1:
		return &s.V1
	case reasonVersion:
		return &s.Version
	case reasonFamily:
		return &s.Family
	case reasonLength:
		return &s.Length
	case reasonOversize:
		return &s.Oversize
	case reasonTLV:
		return &s.TLV
	case reasonChecksum:
		return &s.Checksum
	}
	return &s.Accepted
}

// ProxyListener is a net.Listener for connections that start with a PROXY
// protocol v2 header, as a TLS terminator in front of the cache sends them
// (hitch with write-proxy-v2, haproxy with send-proxy-v2). Its Accept returns
// only connections whose header was whole and valid, with the header's
// addresses as RemoteAddr and LocalAddr. Headers are read in a goroutine per
// connection, so a slow one does not hold up the others; a connection with a
// bad or late header is closed and counted in Stats. PROXY v1 text is
// refused.
type ProxyListener struct {
	ln      net.Listener
	timeout time.Duration
	maxLen  int
	log     *log.Logger

	ready     chan net.Conn // connections whose header is read, for Accept
	acceptErr chan error    // errors of ln.Accept other than its closing
	closing   chan struct{} // closed by Close
	done      chan struct{} // closed when the accept loop ends
	err       error         // why it ended; read after done
	wg        sync.WaitGroup
	closeOnce sync.Once
	closeErr  error

	accepted atomic.Int64
	rejected [numReasons]atomic.Int64

	mu      sync.Mutex
	closed  bool
	pending map[net.Conn]struct{} // connections whose header is being read
}

// NewProxyListener returns a ProxyListener taking connections from ln, and
// starts accepting. Its Close closes ln; when opts are invalid, ln is left
// open and the error names the field.
func NewProxyListener(ln net.Listener, opts ProxyOptions) (*ProxyListener, error) {
	var errs []error
	if opts.HeaderTimeout < 0 {
		errs = append(errs, fmt.Errorf("proxy listener: ProxyOptions.HeaderTimeout is %v: want a duration > 0, or 0 for %v", opts.HeaderTimeout, DefaultProxyHeaderTimeout))
	}
	if opts.MaxHeaderBytes < 0 || opts.MaxHeaderBytes > 0 && opts.MaxHeaderBytes < addrLen6 {
		errs = append(errs, fmt.Errorf("proxy listener: ProxyOptions.MaxHeaderBytes is %d: want at least %d (IPv6 addresses), or 0 for %d", opts.MaxHeaderBytes, addrLen6, DefaultProxyMaxHeaderBytes))
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	l := &ProxyListener{
		ln:        ln,
		timeout:   opts.HeaderTimeout,
		maxLen:    opts.MaxHeaderBytes,
		log:       opts.ErrorLog,
		ready:     make(chan net.Conn),
		acceptErr: make(chan error),
		closing:   make(chan struct{}),
		done:      make(chan struct{}),
		pending:   make(map[net.Conn]struct{}),
	}
	if l.timeout == 0 {
		l.timeout = DefaultProxyHeaderTimeout
	}
	if l.maxLen == 0 {
		l.maxLen = DefaultProxyMaxHeaderBytes
	}
	l.wg.Add(1)
	go l.acceptLoop()
	return l, nil
}

// Accept returns the next connection whose header was read and valid.
func (l *ProxyListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.ready:
		return c, nil
	case err := <-l.acceptErr:
		return nil, err
	case <-l.done:
		return nil, l.err
	}
}

// Close closes the underlying listener and every connection whose header is
// still being read, and waits for the goroutines reading them. It is
// idempotent.
func (l *ProxyListener) Close() error {
	l.closeOnce.Do(func() {
		close(l.closing)
		l.closeErr = l.ln.Close()
		l.mu.Lock()
		l.closed = true
		for c := range l.pending {
			c.Close()
		}
		l.mu.Unlock()
		l.wg.Wait()
	})
	return l.closeErr
}

// Addr is the underlying listener's address.
func (l *ProxyListener) Addr() net.Addr { return l.ln.Addr() }

// Stats returns the counters now.
func (l *ProxyListener) Stats() ProxyStats {
	s := ProxyStats{Accepted: l.accepted.Load()}
	for r := reasonNone + 1; r < numReasons; r++ {
		*s.field(r) = l.rejected[r].Load()
	}
	return s
}

func (l *ProxyListener) acceptLoop() {
	defer l.wg.Done()
	defer close(l.done)
	for {
		c, err := l.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) || l.isClosing() {
				l.err = err
				return
			}
			// Hand other errors (EMFILE, say) to Accept's caller, which
			// decides whether to retry, as it would without this listener.
			select {
			case l.acceptErr <- err:
			case <-l.closing:
			}
			continue
		}
		l.mu.Lock()
		if l.closed {
			l.mu.Unlock()
			c.Close()
			continue
		}
		l.pending[c] = struct{}{}
		l.mu.Unlock()
		l.wg.Add(1)
		go l.handshake(c)
	}
}

func (l *ProxyListener) isClosing() bool {
	select {
	case <-l.closing:
		return true
	default:
		return false
	}
}

// handshake reads c's header and hands c to Accept, or closes it.
func (l *ProxyListener) handshake(c net.Conn) {
	defer l.wg.Done()
	c.SetReadDeadline(time.Now().Add(l.timeout))
	h, err := readProxyHeader(c, l.maxLen)
	l.mu.Lock()
	delete(l.pending, c)
	closed := l.closed
	l.mu.Unlock()
	if err != nil {
		if !closed { // Close cut it short: not the client's fault
			var pe *proxyError
			if errors.As(err, &pe) {
				l.rejected[pe.reason].Add(1)
			}
			if l.log != nil {
				l.log.Printf("proxy listener: closed connection from %v: %v", c.RemoteAddr(), err)
			}
		}
		c.Close()
		return
	}
	c.SetReadDeadline(time.Time{})
	l.accepted.Add(1)
	pc := &proxyConn{Conn: c, remote: c.RemoteAddr(), local: c.LocalAddr()}
	if h.Source.IsValid() {
		pc.remote = net.TCPAddrFromAddrPort(h.Source)
		pc.local = net.TCPAddrFromAddrPort(h.Destination)
	}
	select {
	case l.ready <- pc:
	case <-l.done:
		c.Close()
	}
}

// proxyConn is a connection with the addresses its header gave.
type proxyConn struct {
	net.Conn
	remote, local net.Addr
}

func (c *proxyConn) RemoteAddr() net.Addr { return c.remote }
func (c *proxyConn) LocalAddr() net.Addr  { return c.local }

// CloseWrite shuts the sending side when the connection has one, as TCP
// does; net/http uses it to deliver an error answer before closing.
func (c *proxyConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return errors.ErrUnsupported
}

var _ net.Listener = (*ProxyListener)(nil)

// ParseProxyHeader reads one PROXY v2 header from the start of b, for a
// server that reads its connections itself (the null engine's event loop),
// with the checks ProxyListener makes. It returns the header and its length
// in bytes; n == 0 with a nil error means b is a valid start that needs
// more bytes. An error means the connection is to be closed.
func ParseProxyHeader(b []byte, maxLen int) (h ProxyHeader, n int, err error) {
	if reason := judgeStart(b[:min(len(b), proxyPrefixLen)]); reason != reasonNone {
		return ProxyHeader{}, 0, startError(reason, b[:min(len(b), proxyPrefixLen)])
	}
	if len(b) < proxyPrefixLen {
		return ProxyHeader{}, 0, nil
	}
	total := proxyPrefixLen + int(binary.BigEndian.Uint16(b[14:16]))
	if total-proxyPrefixLen <= maxLen && len(b) < total {
		return ProxyHeader{}, 0, nil
	}
	// Whole, or over the limit (which readProxyHeader refuses before
	// reading the rest).
	h, err = readProxyHeader(bytes.NewReader(b[:min(len(b), total)]), maxLen)
	if err != nil {
		return ProxyHeader{}, 0, err
	}
	return h, total, nil
}
