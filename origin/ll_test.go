package origin

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// newLLOrigin is an origin on a clock the test moves, half-way through
// part 1 of segment 1000. Its holds move that clock instead of waiting
// (sleeps counts them), so a held request is answered at once, at the
// instant it waited for.
func newLLOrigin(t *testing.T, cfg Config) (*Origin, *httptest.Server, *clock, *atomic.Int64) {
	t.Helper()
	o, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	clk := &clock{}
	l := o.cfg.LL
	clk.set(l.PartReady(1000, 1).Add(l.PartTarget / 2))
	sleeps := &atomic.Int64{}
	o.now = clk.now // before any request: no race
	o.holdSleep = func(ctx context.Context, d time.Duration) bool {
		sleeps.Add(1)
		clk.add(d)
		return true
	}
	srv := httptest.NewServer(o)
	t.Cleanup(srv.Close)
	return o, srv, clk, sleeps
}

// llList is what parseLL understood of a low-latency playlist.
type llList struct {
	tags     map[string]string // the value of each tag that occurs once
	sequence int64
	segments []string // whole segments' URIs
	parts    []llPart
	hint     string
}

type llPart struct {
	uri         string
	duration    string
	independent bool
}

// parseLL checks the low-latency rules the origin's playlists touch: parts
// before the segment they make, in order and every one of it, the hint
// last and naming the part after the last.
func parseLL(t *testing.T, l LL, body []byte) llList {
	t.Helper()
	p := llList{tags: map[string]string{}}
	lines := strings.Split(strings.TrimSuffix(string(body), "\n"), "\n")
	if lines[0] != "#EXTM3U" {
		t.Fatalf("first line %q", lines[0])
	}
	var pending []llPart // parts of the segment under way
	var inf bool
	for _, line := range lines[1:] {
		name, val, _ := strings.Cut(line, ":")
		switch {
		case name == "#EXT-X-PART":
			attrs := strings.Split(val, ",")
			part := llPart{duration: strings.TrimPrefix(attrs[0], "DURATION=")}
			part.uri = strings.Trim(strings.TrimPrefix(attrs[1], "URI="), `"`)
			part.independent = len(attrs) == 3 && attrs[2] == "INDEPENDENT=YES"
			if part.independent != strings.HasSuffix(part.uri, ".0.ts") {
				t.Fatalf("%s: INDEPENDENT=YES must be on the first part of a segment only", line)
			}
			pending = append(pending, part)
			p.parts = append(p.parts, part)
		case name == "#EXTINF":
			inf = true
		case name == "#EXT-X-PRELOAD-HINT":
			p.hint = strings.Trim(strings.TrimPrefix(val, "TYPE=PART,URI="), `"`)
			if p.hint == val {
				t.Fatalf("%s: want TYPE=PART,URI=", line)
			}
		case strings.HasPrefix(line, "#"):
			if _, dup := p.tags[name]; dup {
				t.Fatalf("%s twice", name)
			}
			p.tags[name] = val
		default:
			if !inf || p.hint != "" {
				t.Fatalf("URI %s without EXTINF, or after the hint", line)
			}
			msn := strings.TrimSuffix(line, ".ts")
			for k, part := range pending {
				if want := msn + "." + strconv.Itoa(k) + ".ts"; part.uri != want {
					t.Fatalf("segment %s: part %d is %s, want %s", line, k, part.uri, want)
				}
			}
			if len(pending) != 0 && len(pending) != l.PartsPerSegment {
				t.Fatalf("segment %s lists %d of its %d parts", line, len(pending), l.PartsPerSegment)
			}
			p.segments = append(p.segments, line)
			pending, inf = nil, false
		}
	}
	if p.hint == "" || !strings.HasPrefix(lines[len(lines)-1], "#EXT-X-PRELOAD-HINT") {
		t.Fatal("the preload hint is not the last line")
	}
	p.sequence, _ = strconv.ParseInt(p.tags["#EXT-X-MEDIA-SEQUENCE"], 10, 64)
	return p
}

// next is the part after msn.k, as the playlist names it.
func nextPart(l LL, msn int64, k int) string {
	if k+1 == l.PartsPerSegment {
		msn, k = msn+1, -1
	}
	return strconv.FormatInt(msn, 10) + "." + strconv.Itoa(k+1) + ".ts"
}

func TestLLPlaylist(t *testing.T) {
	o, srv, clk, _ := newLLOrigin(t, fast)
	l := o.cfg.LL
	// Every part of two segments, so the segment under way has from no
	// part to all but one.
	for i := range 2 * l.PartsPerSegment {
		a := fetch(t, srv, "GET", LLMediaPath(1))
		msn, k := l.Edge(clk.now())
		if a.status != 200 || a.header.Get("Content-Type") != "application/vnd.apple.mpegurl" ||
			a.header.Get("Cache-Control") != DefaultLLPlaylistCacheControl || a.header.Get(ChecksumHeader) != crcHex(a.body) {
			t.Fatalf("step %d: %d, headers %v", i, a.status, a.header)
		}
		if got, want := a.header.Get(PartReadyHeader), strconv.FormatInt(l.PartReady(msn, k).UnixNano(), 10); got != want {
			t.Fatalf("step %d: %s %s, want %s", i, PartReadyHeader, got, want)
		}
		p := parseLL(t, l, a.body)
		for tag, want := range map[string]string{
			"#EXT-X-VERSION":        "9",
			"#EXT-X-TARGETDURATION": "2",
			"#EXT-X-SERVER-CONTROL": "CAN-BLOCK-RELOAD=YES,PART-HOLD-BACK=1.500",
			"#EXT-X-PART-INF":       "PART-TARGET=0.500",
		} {
			if p.tags[tag] != want {
				t.Fatalf("step %d: %s:%s, want %s\n%s", i, tag, p.tags[tag], want, a.body)
			}
		}
		// The newest part is the last listed, the hint the one after; the
		// window is Window whole segments up to the newest whole one.
		last := p.parts[len(p.parts)-1]
		if want := strconv.FormatInt(msn, 10) + "." + strconv.Itoa(k) + ".ts"; last.uri != want || last.duration != "0.500" {
			t.Fatalf("step %d: last part %+v, want %s\n%s", i, last, want, a.body)
		}
		if want := nextPart(l, msn, k); p.hint != want {
			t.Fatalf("step %d: hint %s, want %s", i, p.hint, want)
		}
		whole := msn - 1
		if k == l.PartsPerSegment-1 {
			whole = msn
		}
		if len(p.segments) != l.Window || p.segments[len(p.segments)-1] != strconv.FormatInt(whole, 10)+".ts" ||
			p.sequence != whole-int64(l.Window)+1 {
			t.Fatalf("step %d: sequence %d, segments %v, want %d up to %d.ts", i, p.sequence, p.segments, l.Window, whole)
		}
		// Parts reach back three target durations (12 parts), in whole
		// segments: 12 or up to a segment less.
		if n := len(p.parts); n > 12 || n <= 12-l.PartsPerSegment {
			t.Fatalf("step %d: %d parts listed\n%s", i, n, a.body)
		}
		clk.add(l.PartTarget)
	}
	// Channels share the body; a conditional request is answered 304.
	a := fetch(t, srv, "GET", LLMediaPath(0))
	b := fetch(t, srv, "GET", LLMediaPath(1), "If-None-Match", a.header.Get("ETag"))
	if b.status != http.StatusNotModified {
		t.Fatalf("If-None-Match of the same playlist: %d", b.status)
	}
	for _, p := range []string{"/ll/2/index.m3u8", "/ll/01/index.m3u8", "/ll/0/master.m3u8", "/ll/0/1000.4.ts", "/ll/0/1000.01.ts", "/ll/0/x.ts"} {
		if a := fetch(t, srv, "GET", p); a.status != 404 {
			t.Errorf("%s: %d, want 404", p, a.status)
		}
	}
}

func TestLLBlockingReload(t *testing.T) {
	o, srv, clk, sleeps := newLLOrigin(t, fast)
	l := o.cfg.LL
	for _, c := range []struct {
		query   string
		part    string // the newest part the answer must list
		segment string // or the segment it must list whole
		held    bool
	}{
		{"_HLS_msn=1000&_HLS_part=1", "1000.1.ts", "", false}, // there already
		{"_HLS_msn=990", "", "999.ts", false},                 // in the window already
		{"_HLS_msn=1000&_HLS_part=2", "1000.2.ts", "", true},
		{"_HLS_msn=1001&_HLS_part=1", "1001.1.ts", "", true},
		{"_HLS_msn=1001&_HLS_part=9", "1002.0.ts", "", true}, // past the segment's parts: the next one's first
		{"_HLS_msn=1002", "", "1002.ts", true},
	} {
		before := sleeps.Load()
		a := fetch(t, srv, "GET", LLMediaPath(0)+"?"+c.query)
		if a.status != 200 {
			t.Fatalf("%s: %d %s", c.query, a.status, a.body)
		}
		if held := sleeps.Load() > before; held != c.held {
			t.Fatalf("%s: held %v, want %v", c.query, held, c.held)
		}
		p := parseLL(t, l, a.body)
		gen, _ := strconv.ParseInt(a.header.Get(GeneratedHeader), 10, 64)
		ready, _ := strconv.ParseInt(a.header.Get(PartReadyHeader), 10, 64)
		if gen < ready || ready == 0 {
			t.Fatalf("%s: generated at %d, before its newest part (%d)", c.query, gen, ready)
		}
		if c.part != "" && p.parts[len(p.parts)-1].uri != c.part {
			t.Fatalf("%s: newest part %s, want %s\n%s", c.query, p.parts[len(p.parts)-1].uri, c.part, a.body)
		}
		if c.segment != "" && !bytes.Contains(a.body, []byte("\n"+c.segment+"\n")) {
			t.Fatalf("%s: %s not listed\n%s", c.query, c.segment, a.body)
		}
		if c.held && gen != clk.now().UnixNano() {
			t.Fatalf("%s: answered at %d, want the instant the hold ended, %d", c.query, gen, clk.now().UnixNano())
		}
	}
	ll := o.Stats().LL
	if ll.Playlists != 6 || ll.Blocking != 6 || ll.BlockingHeld != 4 {
		t.Fatalf("LL counters %+v, want 6 playlists, all blocking, 4 held", ll)
	}
	if st := o.Stats(); st.Objects[LLMediaPath(0)+"?_HLS_msn=1002"].Fetches != 1 {
		t.Fatalf("a blocking reload is not counted under its own URI: %v", st.Objects)
	}
}

func TestLLReloadRejected(t *testing.T) {
	o, srv, _, sleeps := newLLOrigin(t, fast)
	// The newest part is 1000.1: the last whole segment is 999, so
	// _HLS_msn may reach 1001, and _HLS_part six parts (3 s) past 1000.1.
	for _, q := range []string{
		"_HLS_part=1",
		"_HLS_msn=1002",
		"_HLS_msn=1001&_HLS_part=4", // 1002.0, 7 parts ahead
		"_HLS_msn=01000",
		"_HLS_msn=-1",
		"_HLS_msn=1000&_HLS_part=x",
	} {
		a := fetch(t, srv, "GET", LLMediaPath(0)+"?"+q)
		if a.status != 400 || a.header.Get("Cache-Control") != "no-store" {
			t.Errorf("%s: %d, %q; want 400, no-store", q, a.status, a.header.Get("Cache-Control"))
		}
	}
	if n := sleeps.Load(); n != 0 {
		t.Fatalf("%d sleeps: a bad request must be answered at once", n)
	}
	// The limits themselves are allowed.
	for _, q := range []string{"_HLS_msn=1001", "_HLS_msn=1001&_HLS_part=3"} {
		if a := fetch(t, srv, "GET", LLMediaPath(0)+"?"+q); a.status != 200 {
			t.Errorf("%s: %d, want 200", q, a.status)
		}
	}
	// Other queries are not directives.
	if a := fetch(t, srv, "GET", LLMediaPath(0)+"?nonce=7&_HLS_skip=YES"); a.status != 200 {
		t.Errorf("a nonce query: %d, want 200", a.status)
	}
	if ll := o.Stats().LL; ll.Rejected != 6 || ll.Playlists != 3 || ll.Blocking != 2 {
		t.Fatalf("LL counters %+v, want 6 rejected, 3 playlists, 2 blocking", ll)
	}
}

func TestLLHoldTimesOut(t *testing.T) {
	o, srv, clk, _ := newLLOrigin(t, fast)
	// A clock that stands still: the part never comes.
	var slept atomic.Int64
	o.holdSleep = func(ctx context.Context, d time.Duration) bool {
		slept.Add(int64(d))
		return true
	}
	start := clk.now()
	for _, p := range []string{LLMediaPath(0) + "?_HLS_msn=1000&_HLS_part=2", LLPartPath(0, 1000, 2)} {
		slept.Store(0)
		a := fetch(t, srv, "GET", p)
		if a.status != 503 || a.header.Get("Cache-Control") != "no-store" {
			t.Fatalf("%s: %d %q, want 503, no-store", p, a.status, a.header.Get("Cache-Control"))
		}
		// Three target durations of 2 s.
		if got := time.Duration(slept.Load()); got != 6*time.Second {
			t.Fatalf("%s: held %v, want 6s", p, got)
		}
	}
	if !clk.now().Equal(start) {
		t.Fatal("the clock moved")
	}
	if ll := o.Stats().LL; ll.TimedOut != 2 || ll.Playlists != 0 || ll.Parts != 0 {
		t.Fatalf("LL counters %+v, want 2 timed out and nothing answered", ll)
	}
}

func TestLLParts(t *testing.T) {
	o, srv, clk, sleeps := newLLOrigin(t, fast)
	l := o.cfg.LL
	size := l.PartSize()
	if size%tsPacket != 0 || size < 75_000 || size >= 75_000+tsPacket {
		t.Fatalf("part size %d: want 1.2 Mbit/s × 0.5 s = 75000 bytes, up to whole TS packets", size)
	}
	// Too early: the part after the hint, the segment under way, and the
	// hinted part's segment; none held.
	for _, p := range []string{LLPartPath(0, 1000, 3), LLPartPath(0, 1001, 0), LLSegmentPath(0, 1000)} {
		if a := fetch(t, srv, "GET", p); a.status != 404 || a.header.Get("Cache-Control") != "no-store" {
			t.Fatalf("%s: %d %q, want 404, no-store", p, a.status, a.header.Get("Cache-Control"))
		}
	}
	if sleeps.Load() != 0 {
		t.Fatal("a request too early was held")
	}
	// The hinted part, 1000.2: held until ready, then whole.
	seg := make([]byte, size*int64(l.PartsPerSegment))
	SegmentBytes(o.cfg.Seed, LLSegmentKey(0, 1000), 0, seg)
	var parts []byte
	for k := range l.PartsPerSegment {
		before := clk.now()
		a := fetch(t, srv, "GET", LLPartPath(0, 1000, k))
		if a.status != 200 || a.header.Get("Content-Type") != "video/mp2t" || a.header.Get("Cache-Control") != DefaultSegmentCacheControl ||
			a.header.Get(ChecksumHeader) != crcHex(a.body) || !bytes.Equal(a.body, seg[int64(k)*size:int64(k+1)*size]) {
			t.Fatalf("part %d: %d, headers %v", k, a.status, a.header)
		}
		ready := l.PartReady(1000, k)
		gen, _ := strconv.ParseInt(a.header.Get(GeneratedHeader), 10, 64)
		if a.header.Get(PartReadyHeader) != strconv.FormatInt(ready.UnixNano(), 10) || gen < ready.UnixNano() {
			t.Fatalf("part %d: ready %s, generated %d, want ready %d and generated no earlier", k, a.header.Get(PartReadyHeader), gen, ready.UnixNano())
		}
		if held := before.Before(ready); held && gen != ready.UnixNano() {
			t.Fatalf("part %d: held until %d, want %d", k, gen, ready.UnixNano())
		}
		parts = append(parts, a.body...)
	}
	// The segment, now whole, is its parts end to end; a range of a part
	// is that range of the segment.
	a := fetch(t, srv, "GET", LLSegmentPath(0, 1000))
	if a.status != 200 || !bytes.Equal(a.body, parts) || a.header.Get(ChecksumHeader) != crcHex(parts) ||
		a.header.Get(PartReadyHeader) != strconv.FormatInt(l.PartReady(1000, l.PartsPerSegment-1).UnixNano(), 10) {
		t.Fatalf("segment 1000: %d, %d bytes, headers %v", a.status, len(a.body), a.header)
	}
	r := fetch(t, srv, "GET", LLPartPath(0, 1000, 1), "Range", "bytes=10-19")
	if r.status != 206 || !bytes.Equal(r.body, seg[size+10:size+20]) {
		t.Fatalf("a range of part 1: %d %x", r.status, r.body)
	}
	ll := o.Stats().LL
	if ll.Parts != 5 || ll.PartsHeld != 2 || ll.Segments != 1 || ll.NotFound != 3 {
		t.Fatalf("LL counters %+v, want 5 parts (2 held), 1 segment, 3 not found", ll)
	}
	o.ResetStats()
	if ll := o.Stats().LL; ll != (LLStats{}) {
		t.Fatalf("after a reset: %+v", ll)
	}
}

func TestLLHoldAbandoned(t *testing.T) {
	o, srv, _, _ := newLLOrigin(t, fast)
	entered := make(chan struct{})
	o.holdSleep = func(ctx context.Context, d time.Duration) bool {
		close(entered)
		<-ctx.Done()
		return false
	}
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL+LLPartPath(0, 1000, 2), nil)
	errc := make(chan error, 1)
	go func() {
		resp, err := srv.Client().Do(req)
		if err == nil {
			resp.Body.Close()
		}
		errc <- err
	}()
	select {
	case <-entered:
	case err := <-errc:
		t.Fatalf("answered without a hold: %v", err)
	}
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("a cancelled request: %v", err)
	}
	srv.Close() // waits for the handler
	if ll := o.Stats().LL; ll.Abandoned != 1 || ll.Parts != 0 || o.Stats().Fetches != 0 {
		t.Fatalf("LL counters %+v, fetches %d: want 1 abandoned, nothing generated", ll, o.Stats().Fetches)
	}
}

// TestLLRealClock holds a blocking reload and a hinted part on the real
// clock, shifted so that the next part is ready 30 ms after the requests
// leave: both must come back after that instant, not before.
func TestLLRealClock(t *testing.T) {
	o, err := New(fast)
	if err != nil {
		t.Fatal(err)
	}
	l := o.cfg.LL
	const lead = 30 * time.Millisecond
	next := l.PartReady(5000, 0)
	shift := next.Sub(time.Now().Add(lead)) // origin clock = real clock + shift
	o.now = func() time.Time { return time.Now().Add(shift) }
	srv := httptest.NewServer(o)
	t.Cleanup(srv.Close)
	readyReal := next.Add(-shift)
	type result struct {
		a   answer
		got time.Time
	}
	results := make(chan result, 2)
	for _, p := range []string{LLMediaPath(0) + "?_HLS_msn=5000&_HLS_part=0", LLPartPath(0, 5000, 0)} {
		go func() {
			resp, err := srv.Client().Get(srv.URL + p)
			got := time.Now()
			if err != nil {
				results <- result{}
				return
			}
			resp.Body.Close()
			results <- result{answer{resp.StatusCode, resp.Header, nil}, got}
		}()
	}
	for range 2 {
		r := <-results
		if r.a.status != 200 {
			t.Fatalf("status %d", r.a.status)
		}
		if r.got.Before(readyReal) {
			t.Fatalf("answered %v before the part was ready", readyReal.Sub(r.got))
		}
		gen, _ := strconv.ParseInt(r.a.header.Get(GeneratedHeader), 10, 64)
		if gen < next.UnixNano() || r.a.header.Get(PartReadyHeader) != strconv.FormatInt(next.UnixNano(), 10) {
			t.Fatalf("generated %d, ready %s; want ready %d and generated no earlier", gen, r.a.header.Get(PartReadyHeader), next.UnixNano())
		}
	}
	if ll := o.Stats().LL; ll.BlockingHeld != 1 || ll.PartsHeld != 1 {
		t.Fatalf("LL counters %+v, want one held reload and one held part", ll)
	}
}

func TestLLConfig(t *testing.T) {
	for _, c := range []struct {
		ll    LL
		field string
	}{
		{LL{PartTarget: 50 * time.Millisecond}, "LL.PartTarget"},
		{LL{PartTarget: 333500 * time.Microsecond}, "LL.PartTarget"},
		{LL{PartsPerSegment: 101}, "LL.PartsPerSegment"},
		{LL{PartTarget: 5 * time.Second, PartsPerSegment: 13}, "LL.PartsPerSegment"},
		{LL{Channels: -1}, "LL.Channels"},
		{LL{Bitrate: -1}, "LL.Bitrate"},
		{LL{Window: 2}, "LL.Window"}, // 4 s of 2-second segments, under 3 × 2 s
		{LL{PlaylistCacheControl: "max-age=1\n"}, "LL.PlaylistCacheControl"},
	} {
		_, err := New(Config{LL: c.ll})
		var ce *ConfigError
		if !errors.As(err, &ce) || ce.Field != c.field {
			t.Errorf("%+v: %v, want an error naming %s", c.ll, err, c.field)
		}
	}
	// A zero Window fits the draft's three target durations: 100 ms
	// segments need 30 for 3 s.
	o, err := New(Config{LL: LL{PartTarget: 100 * time.Millisecond, PartsPerSegment: 1}})
	if err != nil {
		t.Fatal(err)
	}
	if w := o.Config().LL.Window; w != 30 {
		t.Fatalf("window %d, want 30", w)
	}
}

// Issue 44 item 12: every request for a part, and every blocking reload,
// counts as it arrives, not only those held and answered: one fetched
// after its part was ready, one past the hint (404), one whose client left
// during its hold, one that timed out. A workload's origin requests per
// part divides these.
func TestLLRequestsCounted(t *testing.T) {
	o, err := New(fast)
	if err != nil {
		t.Fatal(err)
	}
	l := o.cfg.LL
	clk := &clock{}
	clk.set(l.PartReady(1000, 1).Add(l.PartTarget / 2))
	// How the next hold ends: the part comes, the client leaves, or the
	// clock stands still until the hold times out.
	const (
		comes = iota
		leaves
		stands
	)
	var how atomic.Int64
	o.now = clk.now // before any request: no race
	o.holdSleep = func(ctx context.Context, d time.Duration) bool {
		switch how.Load() {
		case comes:
			clk.add(d)
		case leaves:
			return false
		}
		return true
	}
	srv := httptest.NewServer(o)
	t.Cleanup(srv.Close)
	for _, c := range []struct {
		how    int64
		path   string
		status int
	}{
		{comes, LLPartPath(0, 1000, 0), 200},                         // ready long ago: no hold
		{comes, LLPartPath(0, 1000, 3), 404},                         // past the hint
		{comes, LLPartPath(0, 1000, 2), 200},                         // the hint, held until ready
		{leaves, LLPartPath(0, 1000, 3), 200},                        // the next hint, its client gone (nothing written)
		{stands, LLPartPath(0, 1000, 3), 503},                        // the next hint, never ready
		{stands, LLMediaPath(0) + "?_HLS_msn=1000&_HLS_part=3", 503}, // timed out
		{leaves, LLMediaPath(0) + "?_HLS_msn=1000&_HLS_part=3", 200}, // abandoned
		{comes, LLMediaPath(0) + "?_HLS_msn=1000&_HLS_part=1", 200},  // its part ready: no hold
		{comes, LLMediaPath(0) + "?_HLS_msn=x", 400},                 // rejected
		{comes, LLMediaPath(0), 200},                                 // not a blocking reload
		{comes, LLSegmentPath(0, 999), 200},                          // a segment, not a part
	} {
		how.Store(c.how)
		if a := fetch(t, srv, "GET", c.path); a.status != c.status {
			t.Fatalf("%s: %d, want %d", c.path, a.status, c.status)
		}
	}
	ll := o.Stats().LL
	if ll.PartRequests != 5 || ll.Parts != 2 || ll.PartsHeld != 1 {
		t.Errorf("LL counters %+v: want 5 part requests, of them 2 parts answered, 1 held", ll)
	}
	if ll.BlockingRequests != 4 || ll.Blocking != 1 || ll.BlockingHeld != 0 {
		t.Errorf("LL counters %+v: want 4 blocking reloads asked, 1 answered, none held", ll)
	}
	if d := ll.Sub(LLStats{PartRequests: 1, BlockingRequests: 1, Parts: 1}); d.PartRequests != 4 || d.BlockingRequests != 3 || d.Parts != 1 || d.NotFound != ll.NotFound {
		t.Errorf("%+v less one of each: %+v", ll, d)
	}
}
