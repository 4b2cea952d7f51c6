package builtin

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Origin failure modes of fakeOrigin.
const (
	modeOK      = iota
	mode503     // every answer, health included, is a 503
	modeHang    // no answer until the request is cancelled
	modeMidway  // object answers stop after half the body
	modeNotFind // object answers are 404
)

// fakeOrigin is a small HLS-like origin that counts what it is asked. Object
// bodies are a function of the path and size, so any byte can be checked.
type fakeOrigin struct {
	srv *httptest.Server

	mode         atomic.Int32
	cacheControl atomic.Value // string
	firstByte    atomic.Int64 // delay before the headers, ns
	rate         atomic.Int64 // body bytes per second; 0 unthrottled
	health       atomic.Int64

	mu       sync.Mutex
	requests map[string]int // by path, health excluded
	version  map[string]int
	hdrSent  map[string][]time.Time
	bodyDone map[string][]time.Time
}

// size of objects by query ?size=N, else by class.
func objectSize(r *http.Request) int {
	if s := r.URL.Query().Get("size"); s != "" {
		n, _ := strconv.Atoi(s)
		return n
	}
	if strings.HasSuffix(r.URL.Path, ".m3u8") {
		return 2048
	}
	return 64 << 10
}

// objectBody is the body of the object at path with n bytes.
func objectBody(path string, n int) []byte {
	seed := crc32.ChecksumIEEE([]byte(path))
	b := make([]byte, n)
	for i := 0; i+4 <= n; i += 4 {
		binary.LittleEndian.PutUint32(b[i:], seed^uint32(i)*2654435761)
	}
	for i := n &^ 3; i < n; i++ {
		b[i] = byte(i)
	}
	return b
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func newFakeOrigin(t testing.TB) *fakeOrigin {
	o := &fakeOrigin{
		requests: map[string]int{},
		version:  map[string]int{},
		hdrSent:  map[string][]time.Time{},
		bodyDone: map[string][]time.Time{},
	}
	o.cacheControl.Store("max-age=60")
	o.srv = httptest.NewServer(http.HandlerFunc(o.serve))
	t.Cleanup(o.srv.Close)
	return o
}

func (o *fakeOrigin) URL() string { return o.srv.URL }

func (o *fakeOrigin) count(path string) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.requests[path]
}

func (o *fakeOrigin) serve(w http.ResponseWriter, r *http.Request) {
	mode := o.mode.Load()
	if r.URL.Path == "/health" {
		o.health.Add(1)
		if mode == mode503 {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
		return
	}
	o.mu.Lock()
	o.requests[r.URL.Path]++
	o.version[r.URL.Path]++
	version := o.version[r.URL.Path]
	o.mu.Unlock()

	switch mode {
	case mode503:
		w.WriteHeader(http.StatusServiceUnavailable)
		io.WriteString(w, "origin failing\n")
		return
	case modeHang:
		<-r.Context().Done()
		return
	case modeNotFind:
		http.NotFound(w, r)
		return
	}
	if d := o.firstByte.Load(); d > 0 {
		select {
		case <-time.After(time.Duration(d)):
		case <-r.Context().Done():
			return
		}
	}
	body := objectBody(r.URL.Path, objectSize(r))
	h := w.Header()
	h.Set("Content-Type", "video/mp2t")
	h.Set("Cache-Control", o.cacheControl.Load().(string))
	h.Set("X-Origin-Generated", strconv.FormatInt(time.Now().UnixNano(), 10))
	h.Set("X-Origin-Version", strconv.Itoa(version))
	h.Set("X-Hlsbench-Crc32c", strconv.FormatUint(uint64(crc32.Checksum(body, castagnoli)), 10))
	h.Set("Connection", "X-Private-Hop")
	h.Set("X-Private-Hop", "must not pass")
	if r.URL.Query().Get("chunked") == "" {
		h.Set("Content-Length", strconv.Itoa(len(body)))
	}
	w.WriteHeader(http.StatusOK)
	http.NewResponseController(w).Flush()
	o.mu.Lock()
	o.hdrSent[r.URL.Path] = append(o.hdrSent[r.URL.Path], time.Now())
	o.mu.Unlock()

	if mode == modeMidway {
		w.Write(body[:len(body)/2])
		http.NewResponseController(w).Flush()
		time.Sleep(20 * time.Millisecond)
		panic(http.ErrAbortHandler)
	}
	rate := o.rate.Load()
	const chunk = 32 << 10
	start := time.Now()
	for off := 0; off < len(body); off += chunk {
		if rate > 0 {
			due := start.Add(time.Duration(int64(off) * int64(time.Second) / rate))
			time.Sleep(time.Until(due))
		}
		if _, err := w.Write(body[off:min(off+chunk, len(body))]); err != nil {
			return
		}
		http.NewResponseController(w).Flush()
	}
	o.mu.Lock()
	o.bodyDone[r.URL.Path] = append(o.bodyDone[r.URL.Path], time.Now())
	o.mu.Unlock()
}

// testClock is a settable clock for TTL decisions.
type testClock struct{ skew atomic.Int64 }

func (c *testClock) now() time.Time          { return time.Now().Add(time.Duration(c.skew.Load())) }
func (c *testClock) advance(d time.Duration) { c.skew.Add(int64(d)) }

// testCache starts a cache for origin behind an httptest server.
func testCache(t testing.TB, origin string, p Policy, clock *testClock) (*Cache, *httptest.Server) {
	t.Helper()
	c, err := New(Config{Origin: origin, Policy: p})
	if err != nil {
		t.Fatal(err)
	}
	if clock != nil {
		c.now = clock.now
	}
	srv := newServer(t, c)
	t.Cleanup(func() { c.Close() })
	return c, srv
}

// newServer serves h on a loopback port until the test ends. Handlers still
// running are not waited for (a test may leave a stalled client behind).
func newServer(t testing.TB, h http.Handler) *httptest.Server {
	srv := httptest.NewServer(h)
	t.Cleanup(func() {
		srv.CloseClientConnections()
		srv.Close()
	})
	return srv
}

// noProbe is the default policy without a probe, for tests that do not
// exercise health.
func noProbe() Policy {
	p := DefaultPolicy()
	p.ProbePath = ""
	return p
}

var testClient = &http.Client{
	Transport: &http.Transport{MaxIdleConnsPerHost: 512, DisableCompression: true},
	Timeout:   20 * time.Second,
}

type answer struct {
	status int
	header http.Header
	body   []byte
	err    error // reading the body
}

func get(t testing.TB, url string, header ...string) answer {
	t.Helper()
	return do(t, http.MethodGet, url, header...)
}

func do(t testing.TB, method, url string, header ...string) answer {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := testClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return answer{status: resp.StatusCode, header: resp.Header, body: body, err: err}
}

// check fails unless a is a complete answer with the wanted status and
// X-Cache, and its body is bytes [start, end) of the object at path.
func (a answer) check(t testing.TB, status int, xcache, path string, size, start, end int) {
	t.Helper()
	if a.err != nil {
		t.Fatalf("body: %v", a.err)
	}
	if a.status != status || a.header.Get("X-Cache") != xcache {
		t.Fatalf("got %d X-Cache %q, want %d %s (body %q)", a.status, a.header.Get("X-Cache"), status, xcache, trim(a.body))
	}
	if a.header.Get("Age") == "" {
		t.Fatalf("no Age header")
	}
	want := objectBody(path, size)[start:end]
	if !bytes.Equal(a.body, want) {
		t.Fatalf("body: %d bytes, want %d bytes [%d,%d) of %s", len(a.body), len(want), start, end, path)
	}
}

func trim(b []byte) string {
	if len(b) > 80 {
		return fmt.Sprintf("%s… (%d bytes)", b[:80], len(b))
	}
	return string(b)
}

// eventually polls cond until it holds or d passes.
func eventually(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after %v: %s", d, what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}
