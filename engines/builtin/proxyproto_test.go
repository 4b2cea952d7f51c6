package builtin

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"log"
	"net"
	"net/http"
	"net/netip"
	"reflect"
	"strings"
	"sync"
	"testing"
	"testing/iotest"
	"time"
)

var (
	src4 = netip.MustParseAddrPort("192.0.2.10:40000")
	dst4 = netip.MustParseAddrPort("198.51.100.1:443")
	src6 = netip.MustParseAddrPort("[2001:db8::10]:40000")
	dst6 = netip.MustParseAddrPort("[2001:db8::1]:443")
)

// encode is AppendProxyHeader for headers the tests know to be encodable.
func encode(h ProxyHeader) []byte {
	b, err := AppendProxyHeader(nil, h)
	if err != nil {
		panic(err)
	}
	return b
}

// sealCRC sets the value of b's last TLV, a CRC32C one, to b's checksum.
func sealCRC(b []byte) []byte {
	binary.BigEndian.PutUint32(b[len(b)-4:], 0)
	binary.BigEndian.PutUint32(b[len(b)-4:], crc32.Checksum(b, crc32cTable))
	return b
}

// rawHeader is a v2 prefix with the given bytes and length field, then body,
// whatever its length: for headers the encoder would not write.
func rawHeader(cmd, fam byte, length int, body string) []byte {
	b := append(proxySignature[:], cmd, fam, byte(length>>8), byte(length))
	return append(b, body...)
}

func cat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

// addrs4 is the 12-byte address block of src4 and dst4.
var addrs4 = string(encode(ProxyHeader{Source: src4, Destination: dst4})[proxyPrefixLen:])

// proxyCase is a connection's first bytes and what a receiver with the
// default limits makes of them: want when reason is reasonNone.
type proxyCase struct {
	name   string
	in     []byte
	want   ProxyHeader
	reason proxyReason
}

var proxyCases = []proxyCase{
	{name: "v4", in: encode(ProxyHeader{Source: src4, Destination: dst4}),
		want: ProxyHeader{Source: src4, Destination: dst4}},
	{name: "v6", in: encode(ProxyHeader{Source: src6, Destination: dst6}),
		want: ProxyHeader{Source: src6, Destination: dst6}},
	{name: "v4 mapped in v6", in: encode(ProxyHeader{
		Source: netip.MustParseAddrPort("[::ffff:192.0.2.10]:1"), Destination: netip.MustParseAddrPort("[::ffff:198.51.100.1]:2")}),
		want: ProxyHeader{Source: netip.MustParseAddrPort("[::ffff:192.0.2.10]:1"), Destination: netip.MustParseAddrPort("[::ffff:198.51.100.1]:2")}},
	{name: "v4 TLVs", in: encode(ProxyHeader{Source: src4, Destination: dst4, TLVs: []ProxyTLV{
		{Type: 0x01, Value: []byte("h2")}, {Type: 0x02, Value: []byte("cache.example")}, {Type: 0x04}, {Type: 0xE0, Value: []byte{0}}}}),
		want: ProxyHeader{Source: src4, Destination: dst4, TLVs: []ProxyTLV{
			{Type: 0x01, Value: []byte("h2")}, {Type: 0x02, Value: []byte("cache.example")}, {Type: 0x04}, {Type: 0xE0, Value: []byte{0}}}}},
	{name: "v6 TLVs CRC32C", in: sealCRC(encode(ProxyHeader{Source: src6, Destination: dst6, TLVs: []ProxyTLV{
		{Type: 0x01, Value: []byte("http/1.1")}, {Type: tlvCRC32C, Value: make([]byte, 4)}}})),
		want: ProxyHeader{Source: src6, Destination: dst6, TLVs: []ProxyTLV{
			{Type: 0x01, Value: []byte("http/1.1")}, {Type: tlvCRC32C, Value: binary.BigEndian.AppendUint32(nil, 0x7c09eac9)}}}},
	{name: "v4 SSL TLV 2 KiB", in: encode(ProxyHeader{Source: src4, Destination: dst4, TLVs: []ProxyTLV{{Type: 0x20, Value: bytes.Repeat([]byte{0xAB}, 2048)}}}),
		want: ProxyHeader{Source: src4, Destination: dst4, TLVs: []ProxyTLV{{Type: 0x20, Value: bytes.Repeat([]byte{0xAB}, 2048)}}}},
	{name: "v4 at the length limit", in: encode(ProxyHeader{Source: src4, Destination: dst4, TLVs: []ProxyTLV{{Type: 0x04, Value: make([]byte, 4096-12-3)}}}),
		want: ProxyHeader{Source: src4, Destination: dst4, TLVs: []ProxyTLV{{Type: 0x04, Value: make([]byte, 4096-12-3)}}}},
	{name: "unspec", in: encode(ProxyHeader{}), want: ProxyHeader{}},
	{name: "unspec TLVs", in: encode(ProxyHeader{TLVs: []ProxyTLV{{Type: 0x05, Value: []byte("id-1")}}}),
		want: ProxyHeader{TLVs: []ProxyTLV{{Type: 0x05, Value: []byte("id-1")}}}},
	{name: "local", in: encode(ProxyHeader{Local: true}), want: ProxyHeader{Local: true}},
	{name: "local with addresses and TLVs", in: encode(ProxyHeader{Local: true, Source: src4, Destination: dst4, TLVs: []ProxyTLV{{Type: 0x01, Value: []byte("h2")}}}),
		want: ProxyHeader{Local: true}},
	{name: "local unknown family", in: rawHeader(0x20, 0x41, 3, "abc"), want: ProxyHeader{Local: true}},

	{name: "empty", in: nil, reason: reasonEmpty},
	{name: "truncated signature", in: proxySignature[:7], reason: reasonTruncated},
	{name: "truncated prefix", in: cat(proxySignature[:], []byte{0x21}), reason: reasonTruncated},
	{name: "truncated addresses", in: encode(ProxyHeader{Source: src4, Destination: dst4})[:20], reason: reasonTruncated},
	{name: "truncated TLV", in: encode(ProxyHeader{Source: src4, Destination: dst4, TLVs: []ProxyTLV{{Type: 1, Value: []byte("h2")}}})[:30], reason: reasonTruncated},
	{name: "plain HTTP", in: []byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"), reason: reasonSignature},
	{name: "TLS client hello", in: []byte("\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03"), reason: reasonSignature},
	{name: "signature last byte", in: cat(proxySignature[:11], []byte("X\x21\x11\x00\x0c"), []byte(addrs4)), reason: reasonSignature},
	{name: "v1 TCP4", in: []byte("PROXY TCP4 192.0.2.10 198.51.100.1 40000 443\r\nGET / HTTP/1.1\r\n\r\n"), reason: reasonV1},
	{name: "v1 UNKNOWN", in: []byte("PROXY UNKNOWN\r\n"), reason: reasonV1},
	{name: "v1 cut short", in: []byte("PROX"), reason: reasonV1},
	{name: "version 1", in: rawHeader(0x11, famTCP4, 12, addrs4), reason: reasonVersion},
	{name: "version 3", in: rawHeader(0x31, famTCP4, 12, addrs4), reason: reasonVersion},
	{name: "command 2", in: rawHeader(0x22, famTCP4, 12, addrs4), reason: reasonVersion},
	{name: "command 15", in: rawHeader(0x2F, famTCP4, 12, addrs4), reason: reasonVersion},
	{name: "family unknown", in: rawHeader(0x21, 0x41, 12, addrs4), reason: reasonFamily},
	{name: "transport unknown", in: rawHeader(0x21, 0x13, 12, addrs4), reason: reasonFamily},
	{name: "unspec stream", in: rawHeader(0x21, 0x01, 0, ""), reason: reasonFamily},
	{name: "UDP over IPv4", in: rawHeader(0x21, famUDP4, 12, addrs4), reason: reasonFamily},
	{name: "UNIX stream", in: rawHeader(0x21, famUnixStream, 216, strings.Repeat("\x00", 216)), reason: reasonFamily},
	{name: "length short of v4", in: rawHeader(0x21, famTCP4, 4, addrs4[:4]), reason: reasonLength},
	{name: "length short of v6", in: rawHeader(0x21, famTCP6, 12, addrs4), reason: reasonLength},
	{name: "oversize TLV", in: encode(ProxyHeader{Source: src4, Destination: dst4, TLVs: []ProxyTLV{{Type: 0x20, Value: make([]byte, 4096)}}}), reason: reasonOversize},
	{name: "oversize without body", in: rawHeader(0x21, famTCP4, 0xFFFF, ""), reason: reasonOversize},
	{name: "oversize local", in: rawHeader(0x20, famUnspec, 5000, ""), reason: reasonOversize},
	{name: "TLV shorter than 3 bytes", in: rawHeader(0x21, famTCP4, 14, addrs4+"\x01\x00"), reason: reasonTLV},
	{name: "TLV longer than the rest", in: rawHeader(0x21, famTCP4, 17, addrs4+"\x02\x00\x0aab"), reason: reasonTLV},
	{name: "TLV after a good one", in: rawHeader(0x21, famUnspec, 8, "\x01\x00\x02h2\x02\x00\x09"), reason: reasonTLV},
	{name: "CRC32C of 3 bytes", in: rawHeader(0x21, famTCP4, 18, addrs4+"\x03\x00\x03abc"), reason: reasonTLV},
	{name: "CRC32C twice", in: encode(ProxyHeader{Source: src4, Destination: dst4, TLVs: []ProxyTLV{
		{Type: tlvCRC32C, Value: make([]byte, 4)}, {Type: tlvCRC32C, Value: make([]byte, 4)}}}), reason: reasonTLV},
	{name: "CRC32C wrong", in: func() []byte {
		b := sealCRC(encode(ProxyHeader{Source: src4, Destination: dst4, TLVs: []ProxyTLV{{Type: tlvCRC32C, Value: make([]byte, 4)}}}))
		b[proxyPrefixLen+3] ^= 1 // the claimed source address
		return b
	}(), reason: reasonChecksum},
}

func TestProxyHeaderCases(t *testing.T) {
	const after = "GET / HTTP/1.1\r\n\r\n"
	for _, tc := range proxyCases {
		t.Run(tc.name, func(t *testing.T) {
			in := tc.in
			if tc.reason == reasonNone {
				in = cat(in, []byte(after))
			}
			// Bytes may come in any pieces: whole, or one at a time.
			for _, split := range []bool{false, true} {
				var r io.Reader = bytes.NewReader(in)
				if split {
					r = iotest.OneByteReader(r)
				}
				h, err := readProxyHeader(r, DefaultProxyMaxHeaderBytes)
				if tc.reason != reasonNone {
					var pe *proxyError
					if !errors.As(err, &pe) || pe.reason != tc.reason {
						t.Fatalf("split %v: got %#v, error %v: want reason %d", split, h, err, tc.reason)
					}
					continue
				}
				if err != nil {
					t.Fatalf("split %v: %v", split, err)
				}
				if !reflect.DeepEqual(h, tc.want) {
					t.Fatalf("split %v: got %+v, want %+v", split, h, tc.want)
				}
				if rest, _ := io.ReadAll(r); string(rest) != after {
					t.Fatalf("split %v: left %q after the header, want %q", split, rest, after)
				}
			}
		})
	}
}

func TestProxyHeaderCRC32C(t *testing.T) {
	// The checksum sealCRC computes is the one readProxyHeader checks; pin
	// it to a value computed independently (a bitwise CRC-32C in Python,
	// reflected polynomial 0x82F63B78, checked against the standard
	// "123456789" -> 0xE3069283) so the two cannot agree on a wrong sum.
	b := sealCRC(encode(ProxyHeader{Source: src6, Destination: dst6, TLVs: []ProxyTLV{
		{Type: 0x01, Value: []byte("http/1.1")}, {Type: tlvCRC32C, Value: make([]byte, 4)}}}))
	if got := binary.BigEndian.Uint32(b[len(b)-4:]); got != 0x7c09eac9 {
		t.Fatalf("CRC32C 0x%08x, want 0x7c09eac9", got)
	}
}

func TestAppendProxyHeaderErrors(t *testing.T) {
	for _, h := range []ProxyHeader{
		{Source: src4, Destination: dst6},
		{Source: src4},
		{Destination: dst6},
		{TLVs: []ProxyTLV{{Type: 1, Value: make([]byte, 0x10000)}}},
		{Source: src6, Destination: dst6, TLVs: []ProxyTLV{{Type: 1, Value: make([]byte, 0xFFFF)}}},
	} {
		if b, err := AppendProxyHeader([]byte("x"), h); err == nil || string(b) != "x" {
			t.Errorf("AppendProxyHeader(%v, %v, %d TLVs) = %d bytes, %v: want an error and b unchanged", h.Source, h.Destination, len(h.TLVs), len(b), err)
		}
	}
}

func TestNewProxyListenerOptions(t *testing.T) {
	ln := listenLoopback(t)
	for _, o := range []ProxyOptions{{HeaderTimeout: -1}, {MaxHeaderBytes: -1}, {MaxHeaderBytes: 35}} {
		if _, err := NewProxyListener(ln, o); err == nil || !strings.Contains(err.Error(), "ProxyOptions.") {
			t.Errorf("NewProxyListener(%+v): error %v, want one naming the field", o, err)
		}
	}
}

func listenLoopback(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return ln
}

func newProxyListener(t *testing.T, opts ProxyOptions) *ProxyListener {
	t.Helper()
	l, err := NewProxyListener(listenLoopback(t), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// lockedBuffer is a log destination the test may read while the listener
// writes.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (w *lockedBuffer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (w *lockedBuffer) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

// TestProxyListenerCases sends every case over loopback: good headers give a
// connection with the header's addresses and every byte after the header;
// bad ones get the connection closed and counted under their reason only.
func TestProxyListenerCases(t *testing.T) {
	var logged lockedBuffer
	l := newProxyListener(t, ProxyOptions{ErrorLog: log.New(&logged, "", 0)})
	for _, tc := range proxyCases {
		t.Run(tc.name, func(t *testing.T) {
			before := l.Stats()
			c, err := net.Dial("tcp", l.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			c.SetDeadline(time.Now().Add(10 * time.Second))
			if tc.reason != reasonNone {
				// A bad case is its bytes and the end of the stream. The
				// listener may close the connection before all of it is
				// written, so write errors are expected.
				c.Write(tc.in)
				c.(*net.TCPConn).CloseWrite()
				if n, err := io.Copy(io.Discard, c); n != 0 || isTimeout(err) {
					t.Fatalf("read %d bytes, %v: want the connection closed", n, err)
				}
				want := before
				*want.field(tc.reason)++
				if got := l.Stats(); got != want {
					t.Fatalf("stats %+v\nwant %+v", got, want)
				}
				return
			}
			if _, err := c.Write(cat(tc.in, []byte("after"))); err != nil {
				t.Fatal(err)
			}
			sc := acceptWithin(t, l, 5*time.Second)
			defer sc.Close()
			wantRemote, wantLocal := c.LocalAddr().String(), c.RemoteAddr().String()
			if tc.want.Source.IsValid() {
				wantRemote = net.TCPAddrFromAddrPort(tc.want.Source).String()
				wantLocal = net.TCPAddrFromAddrPort(tc.want.Destination).String()
			}
			if sc.RemoteAddr().String() != wantRemote || sc.LocalAddr().String() != wantLocal {
				t.Fatalf("addresses %v -> %v, want %v -> %v", sc.RemoteAddr(), sc.LocalAddr(), wantRemote, wantLocal)
			}
			buf := make([]byte, 5)
			sc.SetDeadline(time.Now().Add(5 * time.Second))
			if _, err := io.ReadFull(sc, buf); err != nil || string(buf) != "after" {
				t.Fatalf("read %q, %v after the header: want %q", buf, err, "after")
			}
			want := before
			want.Accepted++
			if got := l.Stats(); got != want {
				t.Fatalf("stats %+v\nwant %+v", got, want)
			}
		})
	}
	s := l.Stats()
	if s.Rejected() == 0 || s.Accepted == 0 {
		t.Fatalf("stats %+v: want both accepted and rejected connections", s)
	}
	if out := logged.String(); !strings.Contains(out, "write-proxy-v2") || !strings.Contains(out, "over the limit of 4096 bytes") {
		t.Errorf("error log does not say how to fix v1 or that a header was over the limit:\n%s", out)
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

func acceptWithin(t *testing.T, l net.Listener, d time.Duration) net.Conn {
	t.Helper()
	type result struct {
		c   net.Conn
		err error
	}
	ch := make(chan result, 1)
	go func() {
		c, err := l.Accept()
		ch <- result{c, err}
	}()
	select {
	case r := <-ch:
		if r.err != nil {
			t.Fatal(r.err)
		}
		return r.c
	case <-time.After(d):
		t.Fatalf("no connection accepted within %v", d)
	}
	return nil
}

// serveAddrs serves, on l, the client and local addresses net/http saw.
func serveAddrs(t *testing.T, l net.Listener) {
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "%s %s", r.RemoteAddr, r.Context().Value(http.LocalAddrContextKey))
	})}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
}

// getOverConn sends a GET on c and returns the answer's body.
func getOverConn(t *testing.T, c net.Conn, br *bufio.Reader, close bool) string {
	t.Helper()
	req := "GET / HTTP/1.1\r\nHost: cache\r\n\r\n"
	if close {
		req = "GET / HTTP/1.1\r\nHost: cache\r\nConnection: close\r\n\r\n"
	}
	if _, err := io.WriteString(c, req); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestProxyListenerHTTP(t *testing.T) {
	l := newProxyListener(t, ProxyOptions{})
	serveAddrs(t, l)
	for _, tc := range []struct {
		name  string
		claim func(client netip.AddrPort) ProxyHeader
	}{
		{"v4", func(client netip.AddrPort) ProxyHeader {
			port := uint16(4242)
			if client.Port() == port {
				port++
			}
			return ProxyHeader{Source: netip.AddrPortFrom(client.Addr(), port), Destination: netip.MustParseAddrPort("127.0.0.2:443")}
		}},
		{"v6", func(netip.AddrPort) ProxyHeader { return ProxyHeader{Source: src6, Destination: dst6} }},
		{"local", func(netip.AddrPort) ProxyHeader { return ProxyHeader{Local: true, Source: src4, Destination: dst4} }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := net.Dial("tcp", l.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			c.SetDeadline(time.Now().Add(10 * time.Second))
			client := c.LocalAddr().(*net.TCPAddr).AddrPort()
			h := tc.claim(client)
			if _, err := c.Write(encode(h)); err != nil {
				t.Fatal(err)
			}
			want := h.Source.String() + " " + h.Destination.String()
			if h.Local {
				want = c.LocalAddr().String() + " " + c.RemoteAddr().String()
			} else if h.Source == client {
				t.Fatalf("claimed source %v is the client's own", h.Source)
			}
			br := bufio.NewReader(c)
			// Two requests: the connection keeps working after the first.
			for i, last := range []bool{false, true} {
				if got := getOverConn(t, c, br, last); got != want {
					t.Fatalf("request %d: server saw %q, want %q", i+1, got, want)
				}
			}
		})
	}
}

// TestProxyListenerSlowHeader holds one connection mid-header while another
// is accepted and served; the slow one is closed at the header timeout.
func TestProxyListenerSlowHeader(t *testing.T) {
	const timeout = 2 * time.Second
	l := newProxyListener(t, ProxyOptions{HeaderTimeout: timeout})
	serveAddrs(t, l)

	slowStart := time.Now()
	slow, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Close()
	if _, err := slow.Write(proxySignature[:5]); err != nil {
		t.Fatal(err)
	}

	fast, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer fast.Close()
	fast.SetDeadline(time.Now().Add(timeout / 2))
	if _, err := fast.Write(encode(ProxyHeader{Source: src4, Destination: dst4})); err != nil {
		t.Fatal(err)
	}
	if got, want := getOverConn(t, fast, bufio.NewReader(fast), true), src4.String()+" "+dst4.String(); got != want {
		t.Fatalf("server saw %q, want %q", got, want)
	}
	if s := l.Stats(); s.Accepted != 1 || s.Rejected() != 0 {
		t.Fatalf("stats %+v while the slow header is pending: want 1 accepted, none rejected", s)
	}

	slow.SetDeadline(time.Now().Add(3 * timeout))
	if n, err := io.Copy(io.Discard, slow); n != 0 || isTimeout(err) {
		t.Fatalf("slow connection: read %d bytes, %v: want it closed", n, err)
	}
	if d := time.Since(slowStart); d < timeout-100*time.Millisecond {
		t.Fatalf("slow connection closed after %v, before the %v header timeout", d, timeout)
	}
	if s := l.Stats(); s.Timeout != 1 || s.Rejected() != 1 {
		t.Fatalf("stats %+v: want the one rejection, a timeout", s)
	}
}

// TestProxyListenerClose closes the listener while a header is pending: the
// connection is closed, not counted, and Accept reports the listener closed.
func TestProxyListenerClose(t *testing.T) {
	l := newProxyListener(t, ProxyOptions{})
	c, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.Write(proxySignature[:3])
	// Wait until the header read has started, so Close finds it pending.
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
		l.mu.Lock()
		n := len(l.pending)
		l.mu.Unlock()
		if n == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("connection not pending after 5s")
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := l.Accept(); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("Accept after Close: %v, want net.ErrClosed", err)
	}
	c.SetDeadline(time.Now().Add(5 * time.Second))
	if n, err := io.Copy(io.Discard, c); n != 0 || isTimeout(err) {
		t.Fatalf("pending connection: read %d bytes, %v: want it closed", n, err)
	}
	if s := l.Stats(); s != (ProxyStats{}) {
		t.Fatalf("stats %+v after Close: want nothing counted", s)
	}
}

func FuzzProxyHeader(f *testing.F) {
	for _, tc := range proxyCases {
		f.Add(tc.in)
		f.Add(cat(tc.in, []byte("GET / HTTP/1.1\r\n\r\n")))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		r := bytes.NewReader(in)
		h, err := readProxyHeader(r, DefaultProxyMaxHeaderBytes)
		n := len(in) - r.Len()
		// The result does not depend on how the bytes arrive.
		h1, err1 := readProxyHeader(iotest.OneByteReader(bytes.NewReader(in)), DefaultProxyMaxHeaderBytes)
		if err != nil {
			var pe, pe1 *proxyError
			if !errors.As(err, &pe) || pe.reason <= reasonNone || pe.reason >= numReasons {
				t.Fatalf("error %v has no reason", err)
			}
			if !errors.As(err1, &pe1) || pe1.reason != pe.reason {
				t.Fatalf("whole: %v; byte by byte: %v", err, err1)
			}
			return
		}
		if err1 != nil || !reflect.DeepEqual(h, h1) {
			t.Fatalf("whole: %+v; byte by byte: %+v, %v", h, h1, err1)
		}
		if n > proxyPrefixLen+DefaultProxyMaxHeaderBytes {
			t.Fatalf("read %d bytes, over the limit", n)
		}
		enc, err := AppendProxyHeader(nil, h)
		if err != nil {
			t.Fatalf("re-encode %+v: %v", h, err)
		}
		if h.Local {
			// A LOCAL header's family, addresses and TLVs are dropped, so
			// only the meaning survives a round trip.
			if !reflect.DeepEqual(h, ProxyHeader{Local: true}) {
				t.Fatalf("LOCAL header kept %+v", h)
			}
			if h2, err := readProxyHeader(bytes.NewReader(enc), DefaultProxyMaxHeaderBytes); err != nil || !reflect.DeepEqual(h2, h) {
				t.Fatalf("re-read LOCAL: %+v, %v", h2, err)
			}
			return
		}
		if !bytes.Equal(enc, in[:n]) {
			t.Fatalf("re-encoded\n%x\nread\n%x", enc, in[:n])
		}
	})
}

// TestParseProxyHeaderIncremental: fed a header byte by byte, the parser
// asks for more until it is whole, then gives its length and what it says;
// bytes that cannot begin a v2 header are refused at once.
func TestParseProxyHeaderIncremental(t *testing.T) {
	src := netip.MustParseAddrPort("192.0.2.7:5555")
	h, err := AppendProxyHeader(nil, ProxyHeader{Source: src, Destination: netip.MustParseAddrPort("192.0.2.8:443"),
		TLVs: []ProxyTLV{{Type: 0x01, Value: []byte("h2")}}})
	if err != nil {
		t.Fatal(err)
	}
	b := append(append([]byte{}, h...), "GET / HTTP/1.1\r\n"...)
	for i := range len(h) {
		if _, n, err := ParseProxyHeader(b[:i], DefaultProxyMaxHeaderBytes); n != 0 || err != nil {
			t.Fatalf("%d of %d bytes: length %d, %v: want a request for more", i, len(h), n, err)
		}
	}
	got, n, err := ParseProxyHeader(b, DefaultProxyMaxHeaderBytes)
	if err != nil || n != len(h) || got.Source != src || len(got.TLVs) != 1 {
		t.Fatalf("whole: %+v, length %d, %v: want %v and %d bytes", got, n, err, src, len(h))
	}
	for _, bad := range []string{"GET / HTTP/1.1\r\n", "PROXY TCP4 ", "\r\n\r\nX"} {
		if _, _, err := ParseProxyHeader([]byte(bad), DefaultProxyMaxHeaderBytes); err == nil {
			t.Errorf("%q: accepted", bad)
		}
	}
	if _, _, err := ParseProxyHeader(h, 4); err == nil {
		t.Errorf("a header over the length limit was accepted")
	}
}
