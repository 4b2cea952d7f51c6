package null

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hlsbench/hlsbench/engines/builtin"
	"github.com/hlsbench/hlsbench/origin"
)

// testOrigin runs an origin at full speed (no first-byte delay, no pacing)
// with its default 4 MiB segments.
func testOrigin(t *testing.T) *origin.Server {
	t.Helper()
	o, err := origin.New(origin.Config{FirstByteDelay: origin.NoDelay, TransferRate: origin.Unlimited, Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := origin.Start(o, "127.0.0.1:0", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return srv
}

// testServer copies the origin's objects and serves them on two loops,
// with a PROXY v2 listener.
func testServer(t *testing.T, orig *origin.Server) *Server {
	t.Helper()
	objs, err := Fetch(context.Background(), "http://"+orig.DataAddr(), Paths(2))
	if err != nil {
		t.Fatal(err)
	}
	s, err := Serve(Options{Listen: "127.0.0.1:0", ProxyListen: "127.0.0.1:0", Threads: 2, Objects: objs})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// stamped are the headers a new copy from the origin changes.
var stamped = map[string]bool{"Date": true, origin.GeneratedHeader: true, origin.VersionHeader: true}

func get(t *testing.T, c *http.Client, method, url, rng string) (*http.Response, []byte) {
	t.Helper()
	req, _ := http.NewRequest(method, url, nil)
	if rng != "" {
		req.Header.Set("Range", rng)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, b
}

// TestSameAsOrigin: every object, whole, ranged, unsatisfiable and HEAD,
// answers what the origin answers, byte for byte, bar the stamps of a new
// copy, and the copy's stamps are the first copy's (version 1).
func TestSameAsOrigin(t *testing.T) {
	orig := testOrigin(t)
	s := testServer(t, orig)
	c := &http.Client{Transport: &http.Transport{DisableCompression: true}}
	defer c.CloseIdleConnections()
	ranges := []string{"", "bytes=0-65535", "bytes=100-", "bytes=-500", "bytes=5-4", "bytes=0-1,5-6", "bytes=99999999-", "items=0-1"}
	for _, path := range Paths(2) {
		for _, method := range []string{"GET", "HEAD"} {
			for _, rng := range ranges {
				want, wb := get(t, c, method, "http://"+orig.DataAddr()+path+"?run=x", rng)
				got, gb := get(t, c, method, "http://"+s.Addr()+path+"?run=x", rng)
				name := method + " " + path + " " + rng
				if got.StatusCode != want.StatusCode {
					t.Errorf("%s: status %d, origin %d", name, got.StatusCode, want.StatusCode)
					continue
				}
				if !bytes.Equal(gb, wb) {
					t.Errorf("%s: %d body bytes differ from the origin's %d", name, len(gb), len(wb))
				}
				for k := range want.Header {
					if !stamped[k] && got.Header.Get(k) != want.Header.Get(k) {
						t.Errorf("%s: %s %q, origin %q", name, k, got.Header.Get(k), want.Header.Get(k))
					}
				}
				for k := range got.Header {
					if want.Header.Get(k) == "" {
						t.Errorf("%s: %s %q, which the origin does not send", name, k, got.Header.Get(k))
					}
				}
				if want.Header.Get(origin.GeneratedHeader) != "" && got.Header.Get(origin.VersionHeader) != "1" {
					t.Errorf("%s: version %q, want the first copy's, 1", name, got.Header.Get(origin.VersionHeader))
				}
			}
		}
	}
	for _, path := range []string{"/nothing", "/stream/segment-2.ts", "/stream/segment-01.ts"} {
		if got, _ := get(t, c, "GET", "http://"+s.Addr()+path, ""); got.StatusCode != 404 {
			t.Errorf("GET %s: status %d, want 404", path, got.StatusCode)
		}
	}
	if got, _ := get(t, c, "DELETE", "http://"+s.Addr()+origin.ManifestPath, ""); got.StatusCode != 405 {
		t.Errorf("DELETE: status %d, want 405", got.StatusCode)
	}
}

func readAnswer(t *testing.T, br *bufio.Reader, method string) (*http.Response, []byte) {
	t.Helper()
	resp, err := http.ReadResponse(br, &http.Request{Method: method})
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, b
}

// TestKeepAliveAndPipelining: one connection carries many requests, one
// after another and sent together, answered in order.
func TestKeepAliveAndPipelining(t *testing.T) {
	orig := testOrigin(t)
	s := testServer(t, orig)
	conn, err := net.Dial("tcp", s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(30 * time.Second))
	br := bufio.NewReader(conn)
	const sequential = 200
	req := "GET " + origin.ManifestPath + "?run=k HTTP/1.1\r\nHost: x\r\n\r\n"
	for i := range sequential {
		if _, err := io.WriteString(conn, req); err != nil {
			t.Fatal(err)
		}
		if resp, b := readAnswer(t, br, "GET"); resp.StatusCode != 200 || len(b) != origin.DefaultManifestSize {
			t.Fatalf("request %d: status %d, %d bytes", i, resp.StatusCode, len(b))
		}
	}
	// Pipelined: a playlist, a Range, a whole segment, a 404, a HEAD, in
	// one write.
	batch := req +
		"GET /stream/segment-0.ts HTTP/1.1\r\nHost: x\r\nRange: bytes=10-19\r\n\r\n" +
		"GET /stream/segment-1.ts HTTP/1.1\r\nHost: x\r\n\r\n" +
		"GET /nope HTTP/1.1\r\nHost: x\r\n\r\n" +
		"HEAD /stream/master.m3u8 HTTP/1.1\r\nHost: x\r\n\r\n"
	if _, err := io.WriteString(conn, batch); err != nil {
		t.Fatal(err)
	}
	want := []struct {
		method string
		status int
		size   int
	}{{"GET", 200, origin.DefaultManifestSize}, {"GET", 206, 10}, {"GET", 200, origin.DefaultSegmentSize}, {"GET", 404, 19}, {"HEAD", 200, 0}}
	for i, w := range want {
		resp, b := readAnswer(t, br, w.method)
		if resp.StatusCode != w.status || len(b) != w.size {
			t.Errorf("pipelined answer %d: status %d with %d bytes, want %d with %d", i, resp.StatusCode, len(b), w.status, w.size)
		}
		if w.status == 206 {
			wb := make([]byte, 10)
			origin.SegmentBytes(7, 0, 10, wb)
			if !bytes.Equal(b, wb) {
				t.Errorf("pipelined Range: bytes differ from the origin's")
			}
		}
	}
	st := s.Stats()
	if st.Accepted != 1 || st.Requests != sequential+int64(len(want)) {
		t.Errorf("stats %+v: want 1 connection and %d requests", st, sequential+len(want))
	}
}

// TestSlowReader: a 4 MiB answer to a client that reads slowly leaves in
// many partial writes, every byte in order, and a request pipelined behind
// it waits its turn.
func TestSlowReader(t *testing.T) {
	orig := testOrigin(t)
	s := testServer(t, orig)
	// A small receive window, set before the handshake (shrinking it
	// after stalls loopback TCP, not the server).
	d := net.Dialer{Control: func(_, _ string, rc syscall.RawConn) error {
		return rc.Control(func(fd uintptr) { syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 8192) })
	}}
	conn, err := d.Dial("tcp", s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(60 * time.Second))
	io.WriteString(conn, "GET /stream/segment-1.ts HTTP/1.1\r\nHost: x\r\n\r\nGET /stream/index.m3u8 HTTP/1.1\r\nHost: x\r\n\r\n")
	time.Sleep(100 * time.Millisecond) // the socket fills; the server waits for EPOLLOUT
	br := bufio.NewReaderSize(conn, 1024)
	resp, err := http.ReadResponse(br, &http.Request{Method: "GET"})
	if err != nil {
		t.Fatal(err)
	}
	got := make([]byte, 0, origin.DefaultSegmentSize)
	chunk := make([]byte, 32<<10)
	for reads := 0; ; reads++ {
		n, err := resp.Body.Read(chunk)
		got = append(got, chunk[:n]...)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if reads%16 == 0 {
			time.Sleep(time.Millisecond)
		}
	}
	want := make([]byte, origin.DefaultSegmentSize)
	origin.SegmentBytes(7, 1, 0, want)
	if !bytes.Equal(got, want) {
		t.Fatalf("slow read: %d bytes, differing from the origin's %d", len(got), len(want))
	}
	if resp, b := readAnswer(t, br, "GET"); resp.StatusCode != 200 || len(b) != origin.DefaultManifestSize {
		t.Errorf("request behind the segment: status %d, %d bytes", resp.StatusCode, len(b))
	}
	if st := s.Stats(); st.WriteWaits == 0 {
		t.Errorf("the 4 MiB answer left in one write: the slow reader did not make the server wait for EPOLLOUT")
	}
}

// TestBadRequests: a header over the limit is 431, a request line that is
// not HTTP/1.x is 400, a request with a body is 400, and each closes.
func TestBadRequests(t *testing.T) {
	orig := testOrigin(t)
	s := testServer(t, orig)
	for _, tc := range []struct {
		req    string
		status int
	}{
		{"GET /stream/index.m3u8 HTTP/1.1\r\nX-Big: " + strings.Repeat("a", maxHeaderBytes+10), 431},
		{"GET /stream/index.m3u8 HTTP/2.0\r\n\r\n", 400},
		{"garbage\r\n\r\n", 400},
		{"GET /stream/index.m3u8 HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello", 400},
		{"GET /stream/index.m3u8 HTTP/1.1\r\nConnection: close\r\n\r\n", 200},
	} {
		conn, err := net.Dial("tcp", s.Addr())
		if err != nil {
			t.Fatal(err)
		}
		conn.SetDeadline(time.Now().Add(10 * time.Second))
		io.WriteString(conn, tc.req)
		br := bufio.NewReader(conn)
		resp, _ := readAnswer(t, br, "GET")
		if resp.StatusCode != tc.status {
			t.Errorf("%.40q: status %d, want %d", tc.req, resp.StatusCode, tc.status)
		}
		if !resp.Close {
			t.Errorf("%.40q: the answer does not say Connection: close", tc.req)
		}
		if _, err := br.ReadByte(); err != io.EOF {
			t.Errorf("%.40q: connection not closed after the answer: %v", tc.req, err)
		}
		conn.Close()
	}
}

// TestProxyHeader: the PROXY listener takes a v2 header and says the
// client it carried; a LOCAL header keeps the socket's own address; a
// connection without a valid header is closed unanswered.
func TestProxyHeader(t *testing.T) {
	orig := testOrigin(t)
	s := testServer(t, orig)
	src := netip.MustParseAddrPort("192.0.2.1:4321")
	valid, _ := builtin.AppendProxyHeader(nil, builtin.ProxyHeader{Source: src, Destination: netip.MustParseAddrPort("192.0.2.2:443")})
	local, _ := builtin.AppendProxyHeader(nil, builtin.ProxyHeader{Local: true})
	req := "GET /stream/index.m3u8?run=p HTTP/1.1\r\nHost: x\r\n\r\n"
	for _, tc := range []struct {
		name   string
		send   [][]byte // written one after another, apart
		client string   // "" : the connection is closed unanswered
	}{
		{"v2 whole", [][]byte{append(append([]byte{}, valid...), req...)}, src.String()},
		{"v2 in pieces", [][]byte{valid[:5], valid[5:20], append(append([]byte{}, valid[20:]...), req...)}, src.String()},
		{"v2 local", [][]byte{append(append([]byte{}, local...), req...)}, "127.0.0.1:"},
		{"no header", [][]byte{[]byte(req)}, ""},
		{"v1 text", [][]byte{[]byte("PROXY TCP4 192.0.2.1 192.0.2.2 4321 443\r\n" + req)}, ""},
		{"bad version", [][]byte{append(append(append([]byte{}, valid[:12]...), 0x31), valid[13:]...)}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			conn, err := net.Dial("tcp", s.ProxyAddr())
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			conn.SetDeadline(time.Now().Add(10 * time.Second))
			for _, b := range tc.send {
				conn.Write(b)
				time.Sleep(10 * time.Millisecond)
			}
			br := bufio.NewReader(conn)
			if tc.client == "" {
				if b, err := br.ReadByte(); !errors.Is(err, io.EOF) && !isReset(err) {
					t.Fatalf("read %q, %v: want the connection closed unanswered", b, err)
				}
				return
			}
			resp, b := readAnswer(t, br, "GET")
			if resp.StatusCode != 200 || len(b) != origin.DefaultManifestSize {
				t.Fatalf("status %d, %d bytes", resp.StatusCode, len(b))
			}
			if got := resp.Header.Get(builtin.ClientHeader); !strings.HasPrefix(got, tc.client) {
				t.Errorf("%s %q, want %q", builtin.ClientHeader, got, tc.client)
			}
			// The same connection goes on without a header.
			io.WriteString(conn, req)
			if resp, _ := readAnswer(t, br, "GET"); resp.StatusCode != 200 {
				t.Errorf("second request: status %d", resp.StatusCode)
			}
		})
	}
	if st := s.Stats(); st.ProxyRefused != 3 {
		t.Errorf("%d connections refused, want 3", st.ProxyRefused)
	}
}

func isReset(err error) bool {
	var op *net.OpError
	return errors.As(err, &op)
}

// TestClose: once closed, nothing listens, and closing again is harmless.
func TestClose(t *testing.T) {
	orig := testOrigin(t)
	s := testServer(t, orig)
	addr := s.Addr()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		c.Close()
		t.Errorf("%s still accepts connections after Close", addr)
	}
}

// BenchmarkAnswer is the request parser and answer path of one loop, with
// no socket: a keep-alive GET of the 2 KB media playlist.
func BenchmarkAnswer(b *testing.B) {
	body := bytes.Repeat([]byte("#"), origin.DefaultManifestSize)
	h := http.Header{"Content-Type": {"application/vnd.apple.mpegurl"}, "Cache-Control": {"public, max-age=2"},
		origin.ChecksumHeader: {"01234567"}, origin.GeneratedHeader: {strconv.Itoa(1)}, origin.VersionHeader: {"1"}}
	l := &loop{table: map[string]*entry{origin.ManifestPath: newEntry(Object{Path: origin.ManifestPath, Header: h, Body: body})}}
	c := &conn{}
	c.out = c.outBuf[:0]
	req := []byte("GET /stream/index.m3u8?run=abc HTTP/1.1\r\nHost: 127.0.0.1:6081\r\nUser-Agent: hlsbench\r\n\r\n")
	b.ReportAllocs()
	for b.Loop() {
		c.in = append(c.in[:0], req...)
		l.answer(c)
		c.queued, c.out = 0, c.outBuf[:0]
	}
}
