package workloads

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hlsbench/hlsbench/origin"
)

// llPart is the part target of the viewer tests: short, so a second holds
// several parts, and long beside the scheduling noise of a shared machine.
const llPart = 200 * time.Millisecond

func newLLTestOrigin(t *testing.T) *origin.Origin {
	t.Helper()
	o, err := origin.New(origin.Config{FirstByteDelay: origin.NoDelay, TransferRate: origin.Unlimited,
		LL: origin.LL{PartTarget: llPart, PartsPerSegment: 4, Bitrate: 400_000}})
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// TestLLViewersAgainstOrigin plays viewers against the origin itself, no
// proxy: every answer is on time, every reload and part held about a part.
func TestLLViewersAgainstOrigin(t *testing.T) {
	o := newLLTestOrigin(t)
	srv := httptest.NewServer(o)
	t.Cleanup(srv.Close)
	const viewers = 3
	f, err := RunLLViewers(context.Background(), LLViewers{BaseURL: srv.URL, Channel: 1, Viewers: viewers,
		Duration: 8 * llPart, Stagger: llPart / 2})
	if err != nil {
		t.Fatal(err)
	}
	if f.Viewers != viewers || f.Requests[LLLoad] != viewers {
		t.Fatalf("%d viewers, %d loads: want %d each", f.Viewers, f.Requests[LLLoad], viewers)
	}
	if f.EarlyAnswers() != 0 || f.Errors != [3]int64{} || f.Unproven != 0 {
		t.Fatalf("early %v, errors %v, unproven %d: want none", f.Early, f.Errors, f.Unproven)
	}
	// Eight parts of play, less the start and the cut end: a few each.
	for _, k := range []LLKind{LLReload, LLPart} {
		if n := f.Requests[k]; n < 3*viewers || n > 9*viewers {
			t.Fatalf("%d %ss for %d viewers over 8 parts", n, k, viewers)
		}
	}
	if f.Requests[LLReload] != f.Requests[LLPart] {
		t.Fatalf("%d reloads, %d parts: a viewer asks for both at once", f.Requests[LLReload], f.Requests[LLPart])
	}
	if n := f.PartLatency.TotalCount(); n != f.Requests[LLPart] {
		t.Fatalf("%d part latencies for %d parts", n, f.Requests[LLPart])
	}
	if n := f.ReloadHold.TotalCount() + f.CatchUpReloads; n != f.Requests[LLReload] {
		t.Fatalf("%d reload holds and %d catch-up reloads for %d reloads", f.ReloadHold.TotalCount(), f.CatchUpReloads, f.Requests[LLReload])
	}
	st := o.Stats().LL
	if st.PartsHeld == 0 || st.BlockingHeld == 0 || st.Parts < f.Requests[LLPart] || st.Playlists < f.Requests[LLReload]+viewers {
		t.Fatalf("origin counters %+v for viewer requests %v", st, f.Requests)
	}
	if raceEnabled {
		return // the bounds below are latencies
	}
	// Held until ready, then sent at once: a part reaches its viewer within
	// a part target, and a reload waits about one (the first, from the
	// viewer's start, less).
	if p50 := time.Duration(f.PartLatency.ValueAtQuantile(50)); p50 > llPart {
		t.Errorf("part latency p50 %v, want under %v", p50, llPart)
	}
	if p50 := time.Duration(f.ReloadHold.ValueAtQuantile(50)); p50 < llPart/2 || p50 > 2*llPart {
		t.Errorf("reload hold p50 %v, want about %v", p50, llPart)
	}
}

// TestLLViewerCatchesEarlyAnswers puts a broken proxy in front of the
// origin: it drops the directives of a blocking reload (a cache keying the
// playlist without its query) and sends parts whose bytes are not theirs.
// Both are answers before their part existed.
func TestLLViewerCatchesEarlyAnswers(t *testing.T) {
	o := newLLTestOrigin(t)
	broken := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, ".m3u8") {
			r.URL.RawQuery, r.RequestURI = "", r.URL.Path
			o.ServeHTTP(w, r)
			return
		}
		w.Header().Set(origin.ChecksumHeader, "00000000")
		w.Header().Set(origin.PartReadyHeader, strconv.FormatInt(time.Now().UnixNano(), 10))
		_, _ = w.Write([]byte("not the part"))
	})
	srv := httptest.NewServer(broken)
	t.Cleanup(srv.Close)
	v := &LLViewer{BaseURL: srv.URL, Channel: 0, Client: srv.Client(), Deadline: time.Now().Add(3 * llPart)}
	if err := v.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	f := NewLLFigures()
	f.Add(v.Records)
	if f.Early[LLReload] == 0 || f.Early[LLPart] == 0 || f.Early[LLLoad] != 0 {
		t.Fatalf("early %v: want reloads and parts caught, loads not", f.Early)
	}
	// A viewer told nothing new waits a part before asking again; by then
	// the part it asked for exists, so the next answer holds it and the one
	// after is early again: two reloads a part, not a spin.
	if n := f.Requests[LLReload]; n > 2*3+2 {
		t.Fatalf("%d reloads in 3 parts: the viewer spins on an early answer", n)
	}
	for _, r := range v.Records {
		if r.Kind == LLPart && !r.Cut && r.Err != "part body fails its checksum" {
			t.Fatalf("part %s: error %q", r.URI, r.Err)
		}
	}
}

func TestLLViewersConfig(t *testing.T) {
	for _, c := range []LLViewers{
		{BaseURL: "http://127.0.0.1:1", Viewers: 0, Duration: time.Second},
		{BaseURL: "http://127.0.0.1:1", Viewers: 1},
	} {
		if _, err := RunLLViewers(context.Background(), c); err == nil {
			t.Errorf("%+v: no error", c)
		}
	}
	v := &LLViewer{BaseURL: "127.0.0.1:8080", Deadline: time.Now()}
	if err := v.Run(context.Background()); err == nil {
		t.Error("a base URL without a scheme: no error")
	}
}

func TestParseLLView(t *testing.T) {
	body := "#EXTM3U\n#EXT-X-VERSION:9\n#EXT-X-TARGETDURATION:2\n#EXT-X-PART-INF:PART-TARGET=0.333\n#EXT-X-MEDIA-SEQUENCE:7\n" +
		"#EXT-X-PART:DURATION=0.333,URI=\"a.0.ts\",INDEPENDENT=YES\n#EXTINF:2.000,\na.ts\n" +
		"#EXTINF:2.000,\nb.ts\n#EXT-X-PART:DURATION=0.333,URI=\"c.0.ts\",INDEPENDENT=YES\n#EXT-X-PART:DURATION=0.333,URI=\"c.1.ts\"\n" +
		"#EXT-X-PRELOAD-HINT:TYPE=PART,URI=\"c.2.ts\"\n"
	p, err := parseLLView([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	if p.hintMSN != 9 || p.hintPart != 2 || p.hintURI.String() != "c.2.ts" || p.partTarget != 333*time.Millisecond {
		t.Fatalf("%+v: want the hint c.2.ts as segment 9 part 2, part target 333ms", p)
	}
	for _, c := range []struct {
		msn  int64
		k    int
		want bool
	}{{8, 3, true}, {9, 1, true}, {9, 2, false}, {10, 0, false}} {
		if got := p.holds(c.msn, c.k); got != c.want {
			t.Errorf("holds(%d, %d) = %v, want %v", c.msn, c.k, got, c.want)
		}
	}
	if _, err := parseLLView([]byte("#EXTM3U\n#EXTINF:2.000,\na.ts\n")); err == nil {
		t.Error("a playlist without parts: no error")
	}
}

// Issue 44 items 13 and 14: a part asked for after it was ready is in the
// delivery figure, timed from its own ready instant; the hold counts a
// blocking reload only if it was sent before its part was ready and not
// answered early.
func TestLLFiguresHoldAndCatchUp(t *testing.T) {
	at := time.Unix(1_800_000_000, 0)
	ms := func(n int) time.Time { return at.Add(time.Duration(n) * time.Millisecond) }
	ready := ms(200)
	recs := []LLRecord{
		// At the edge: asked before ready, first byte 1 ms after.
		{Kind: LLPart, URI: "/ll/0/1.0.ts", Status: 200, Sent: ms(0), Ready: ready, FirstByte: ms(201)},
		// Catching up: asked 300 ms after it was ready.
		{Kind: LLPart, URI: "/ll/0/1.0.ts", Status: 200, Sent: ms(500), Ready: ready, FirstByte: ms(502)},
		// Held for its part: 201 ms.
		{Kind: LLReload, URI: "/ll/0/index.m3u8?_HLS_msn=1&_HLS_part=0", Status: 200, Sent: ms(0), Awaited: ready, Ready: ready, FirstByte: ms(201)},
		// Its part already existed: nothing held it.
		{Kind: LLReload, URI: "/ll/0/index.m3u8?_HLS_msn=1&_HLS_part=0", Status: 200, Sent: ms(500), Awaited: ready, Ready: ms(400), FirstByte: ms(501)},
		// Answered at once with an older playlist: early, not a hold.
		{Kind: LLReload, URI: "/ll/0/index.m3u8?_HLS_msn=1&_HLS_part=1", Status: 200, Sent: ms(0), Awaited: ms(400), Ready: ms(0), FirstByte: ms(2), Early: true},
	}
	f := NewLLFigures()
	f.Add(recs)
	if n, hi := f.PartLatency.TotalCount(), time.Duration(f.PartLatency.Max()); n != 2 || hi < 301*time.Millisecond || hi > 303*time.Millisecond || f.CatchUp != 1 {
		t.Errorf("part delivery: %d samples, max %v, %d caught up: want 2, about 302ms, 1", n, hi, f.CatchUp)
	}
	if n, v := f.ReloadHold.TotalCount(), time.Duration(f.ReloadHold.Max()); n != 1 || v < 200*time.Millisecond || v > 202*time.Millisecond || f.CatchUpReloads != 1 || f.Early[LLReload] != 1 {
		t.Errorf("reload hold: %d samples, max %v, %d caught up, early %v: want 1 of about 201ms, 1 caught up, 1 early reload", n, v, f.CatchUpReloads, f.Early)
	}
	// What origin requests per part divide by: the part got at the edge,
	// the reload held for its part.
	if len(f.EdgeParts) != 1 || len(f.HeldReloads) != 1 {
		t.Errorf("edge parts %v, held reloads %v: want one each", f.EdgeParts, f.HeldReloads)
	}
}
