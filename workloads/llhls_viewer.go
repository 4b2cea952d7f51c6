package workloads

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/hlsbench/hlsbench/origin"
	"github.com/hlsbench/hlsbench/workloads/loadgen"
)

// An LL-HLS viewer does what a low-latency player does at the live edge:
// it loads the media playlist once, then, part after part, asks at the same
// time for a blocking reload of the playlist that holds the hinted part
// (?_HLS_msn=M&_HLS_part=N) and for the hinted part itself, which the
// server holds until it is ready, and reads both to the end. It follows the
// edge only: no back buffer of older parts or whole segments, which is what
// the plain live viewers measure.
//
// Every request is recorded, and its answer judged against the origin's
// stamps (origin.PartReadyHeader, origin.ChecksumHeader): an answer that
// came before its part existed is the one figure that must be 0.

// LLKind is what an LL-HLS viewer's request asks for.
type LLKind uint8

const (
	// LLLoad is a playlist asked without directives: a viewer's start, or
	// its restart after an error.
	LLLoad LLKind = iota
	// LLReload is a blocking playlist reload for the hinted part.
	LLReload
	// LLPart is the hinted part.
	LLPart
)

var llKindNames = [...]string{"load", "reload", "part"}

func (k LLKind) String() string {
	if int(k) < len(llKindNames) {
		return llKindNames[k]
	}
	return "LLKind(" + strconv.Itoa(int(k)) + ")"
}

// LLRecord is one request of an LL-HLS viewer, its times on the viewer's
// clock (the origin's too, on one machine).
type LLRecord struct {
	Kind LLKind
	// URI is the path and query asked for.
	URI string
	// Intended is when the viewer meant to send it, Sent when the request
	// was written, FirstByte when the answer's first byte came and End when
	// its body was read to the end. Zero: not reached.
	Intended, Sent, FirstByte, End time.Time
	Status                         int
	Bytes                          int64
	// Ready is the answer's origin.PartReadyHeader: when its part (for a
	// playlist, the newest part listed) became ready at the origin. Zero:
	// none, so the answer cannot be judged.
	Ready time.Time
	// Awaited is, for a blocking reload, when the part it waits for became
	// ready at the origin: the ready stamp of that part, asked for with it.
	// Zero: unknown, as that part failed.
	Awaited time.Time
	// Early marks an answer that came before its part existed: a ready
	// stamp after its first byte, a part whose body fails its checksum, or
	// a blocking reload whose playlist lacks the part it asked for or whose
	// first byte came before that part was ready.
	Early bool
	// Cut marks a request cut short by the viewer's deadline or context:
	// no verdict on the proxy.
	Cut bool
	// Err is why the request failed: a transport error or a bad body.
	Err string
}

// failed reports an answer that is not a whole 200.
func (r *LLRecord) failed() bool { return r.Err != "" || r.Status != http.StatusOK }

// LLViewer is one viewer. Set the fields, then call Run once.
type LLViewer struct {
	// BaseURL is what the viewer asks, e.g. the proxy in front of the
	// origin: "http://127.0.0.1:8080".
	BaseURL string
	// Channel is the origin's low-latency channel (origin.LLMediaPath).
	Channel int
	Client  *http.Client
	// Deadline ends the viewer; requests under way then are cut.
	Deadline time.Time
	// Records holds every request in the order sent, a part before the
	// reload sent with it.
	Records []LLRecord
}

// llFirstPause is how long a viewer waits before asking again after an
// error, until a playlist has told it the part target.
const llFirstPause = 200 * time.Millisecond

// Run plays until the deadline or until ctx ends. Failed requests are
// records, not errors: Run fails only on a BaseURL it cannot use.
func (v *LLViewer) Run(ctx context.Context) error {
	base, err := url.Parse(v.BaseURL)
	if err != nil || base.Scheme == "" || base.Host == "" {
		return fmt.Errorf("ll-hls viewer: base URL %q: want http://host:port", v.BaseURL)
	}
	if v.Client == nil {
		v.Client = http.DefaultClient
	}
	ctx, cancel := context.WithDeadline(ctx, v.Deadline)
	defer cancel()
	media := base.ResolveReference(&url.URL{Path: origin.LLMediaPath(v.Channel)})
	pause := llFirstPause
	var pl *llView
	for ctx.Err() == nil {
		if pl == nil {
			rec, body := v.get(ctx, LLLoad, media.String())
			if !rec.Cut && !rec.failed() {
				if pl, err = parseLLView(body); err != nil {
					rec.Err = "playlist: " + err.Error()
				}
			}
			v.Records = append(v.Records, rec)
			if pl == nil {
				llPause(ctx, pause)
			}
			continue
		}
		pause = pl.partTarget
		hint := media.ResolveReference(pl.hintURI)
		reload := *media
		reload.RawQuery = "_HLS_msn=" + strconv.FormatInt(pl.hintMSN, 10) + "&_HLS_part=" + strconv.Itoa(pl.hintPart)
		var part LLRecord
		var wg sync.WaitGroup
		wg.Go(func() { part, _ = v.get(ctx, LLPart, hint.String()) })
		rec, body := v.get(ctx, LLReload, reload.String())
		wg.Wait()
		if !part.Cut && !part.failed() {
			rec.Awaited = part.Ready
		}
		if !rec.Cut && !rec.failed() && !rec.Awaited.IsZero() && !rec.FirstByte.IsZero() && rec.FirstByte.Before(rec.Awaited) {
			rec.Early = true
		}
		v.Records = append(v.Records, part, rec)
		next := pl
		if !rec.Cut && !rec.failed() {
			p, err := parseLLView(body)
			switch {
			case err != nil:
				rec.Err = "playlist: " + err.Error()
				v.Records[len(v.Records)-1] = rec
				next = nil
			case !p.holds(pl.hintMSN, pl.hintPart):
				v.Records[len(v.Records)-1].Early = true
			default:
				next = p
			}
		} else if !rec.Cut {
			next = nil // start again from a plain load
		}
		// After an error or an early answer, asking again at once could
		// only spin on the same answer.
		if next != pl && next != nil {
			pl = next
			continue
		}
		pl = next
		llPause(ctx, pause)
	}
	return nil
}

func llPause(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// llMaxPlaylist bounds a playlist body a viewer reads: the origin's are a
// few kilobytes.
const llMaxPlaylist = 4 << 20

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// get asks for u and reads the answer to its end: a playlist into the
// returned body, a part into its checksum only.
func (v *LLViewer) get(ctx context.Context, kind LLKind, u string) (rec LLRecord, body []byte) {
	rec = LLRecord{Kind: kind, URI: u, Intended: time.Now()}
	if pu, err := url.Parse(u); err == nil {
		rec.URI = pu.RequestURI()
	}
	// The trace's callbacks run on the transport's goroutines; the deferred
	// function copies what they stored into the record returned.
	var sent, first atomic.Int64
	trace := &httptrace.ClientTrace{
		WroteRequest:         func(httptrace.WroteRequestInfo) { sent.Store(time.Now().UnixNano()) },
		GotFirstResponseByte: func() { first.Store(time.Now().UnixNano()) },
	}
	defer func() {
		if ns := sent.Load(); ns != 0 {
			rec.Sent = time.Unix(0, ns)
		}
		if ns := first.Load(); ns != 0 {
			rec.FirstByte = time.Unix(0, ns)
		}
	}()
	req, err := http.NewRequestWithContext(httptrace.WithClientTrace(ctx, trace), http.MethodGet, u, nil)
	if err != nil {
		rec.Err = err.Error()
		return rec, nil
	}
	resp, err := v.Client.Do(req)
	if err != nil {
		rec.End = time.Now()
		rec.Err, rec.Cut = err.Error(), ctx.Err() != nil
		return rec, nil
	}
	defer resp.Body.Close()
	rec.Status = resp.StatusCode
	if ns, err := strconv.ParseInt(resp.Header.Get(origin.PartReadyHeader), 10, 64); err == nil {
		rec.Ready = time.Unix(0, ns)
	}
	crc := crc32.New(castagnoli)
	var dst io.Writer = crc
	var buf *bytes.Buffer
	if kind != LLPart {
		buf = &bytes.Buffer{}
		dst = io.MultiWriter(crc, buf)
	}
	rec.Bytes, err = io.Copy(dst, io.LimitReader(resp.Body, llMaxPlaylist+1))
	rec.End = time.Now()
	switch {
	case err != nil:
		rec.Err, rec.Cut = "body: "+err.Error(), ctx.Err() != nil
		return rec, nil
	case kind != LLPart && rec.Bytes > llMaxPlaylist:
		rec.Err = "playlist larger than " + strconv.Itoa(llMaxPlaylist) + " bytes"
		return rec, nil
	}
	if buf != nil {
		body = buf.Bytes()
	}
	if rec.Status != http.StatusOK {
		return rec, body
	}
	// The first byte is stored before Do returns; read it here as well to
	// judge the answer.
	if ns := first.Load(); ns != 0 && !rec.Ready.IsZero() && rec.Ready.UnixNano() > ns {
		rec.Early = true
	}
	if want := resp.Header.Get(origin.ChecksumHeader); kind == LLPart && want != "" && want != fmt.Sprintf("%08x", crc.Sum32()) {
		rec.Early = true
		rec.Err = "part body fails its checksum"
	}
	return rec, body
}

// llView is what a viewer needs of a low-latency playlist.
type llView struct {
	sequence   int64 // EXT-X-MEDIA-SEQUENCE
	whole      int64 // whole segments listed
	pending    int   // parts of the segment under way
	partTarget time.Duration
	// The preload hint: its URI, and the segment and part it is, counted as
	// a player counts: the segment under way is sequence + whole, and the
	// hint its next part.
	hintURI  *url.URL
	hintMSN  int64
	hintPart int
}

// parseLLView reads the tags a viewer uses; any other line is left alone.
func parseLLView(body []byte) (*llView, error) {
	p := &llView{}
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(nil, len(body)+1)
	var hint string
	first := true
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if first {
			if line != "#EXTM3U" {
				return nil, errors.New("no #EXTM3U")
			}
			first = false
			continue
		}
		name, val, _ := strings.Cut(line, ":")
		switch {
		case name == "#EXT-X-MEDIA-SEQUENCE":
			n, err := strconv.ParseInt(val, 10, 64)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", line, err)
			}
			p.sequence = n
		case name == "#EXT-X-PART-INF":
			s, ok := llAttr(val, "PART-TARGET")
			f, err := strconv.ParseFloat(s, 64)
			if !ok || err != nil || f <= 0 {
				return nil, fmt.Errorf("%s: want PART-TARGET=<seconds>", line)
			}
			p.partTarget = time.Duration(f * float64(time.Second))
		case name == "#EXT-X-PART":
			p.pending++
		case name == "#EXT-X-PRELOAD-HINT":
			if t, _ := llAttr(val, "TYPE"); t == "PART" {
				hint, _ = llAttr(val, "URI")
			}
		case line != "" && !strings.HasPrefix(line, "#"):
			p.whole++ // a segment's URI: the parts before it were its own
			p.pending = 0
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if p.partTarget == 0 || hint == "" {
		return nil, errors.New("not a low-latency playlist: no EXT-X-PART-INF or no part preload hint")
	}
	u, err := url.Parse(hint)
	if err != nil {
		return nil, fmt.Errorf("preload hint %q: %w", hint, err)
	}
	p.hintURI, p.hintMSN, p.hintPart = u, p.sequence+p.whole, p.pending
	return p, nil
}

// holds reports whether the playlist holds part k of segment msn, or a
// later part: what a blocking reload for it must wait for.
func (p *llView) holds(msn int64, k int) bool {
	under := p.sequence + p.whole // the segment under way
	return msn < under || msn == under && k < p.pending
}

// llAttr is the value of attribute name in an attribute list, unquoted. The
// origin's values hold no commas, so a plain split does.
func llAttr(list, name string) (string, bool) {
	for _, a := range strings.Split(list, ",") {
		if k, v, ok := strings.Cut(a, "="); ok && k == name {
			return strings.Trim(v, `"`), true
		}
	}
	return "", false
}

// LLFigures are what LL-HLS viewers measured.
type LLFigures struct {
	Viewers int
	// PartLatency holds, for every part answered whole with a ready stamp,
	// the nanoseconds from the part ready at the origin to its first byte
	// at the viewer (an early answer as 0; Early counts it). CatchUp counts
	// those of them asked for after they were ready.
	PartLatency *hdr.Histogram
	// ReloadHold holds, for every blocking reload sent before the part it
	// waits for was ready and answered whole with it, the nanoseconds from
	// its send to its first byte: how long it was held, by the origin or
	// the proxy. CatchUpReloads counts the reloads sent after their part
	// was ready, which it leaves out: nothing had to hold them. An early
	// reload (Early) was not held either, and is left out too.
	ReloadHold *hdr.Histogram
	// Requests, Errors (a transport error or not a whole 200) and Early
	// (before their part existed: must be 0) count by kind; requests cut by
	// the deadline are in Cut only.
	Requests, Errors, Early [3]int64 // by LLKind
	// Unproven counts 200 answers without a ready stamp: neither early nor
	// on time as far as anyone can tell.
	Unproven       int64
	CatchUp        int64
	CatchUpReloads int64
	Cut            int64
	Bytes          int64
	// EdgeParts are the parts (by URI) asked for before they were ready
	// and answered whole, on time, and HeldReloads the blocking reloads
	// (by URI) held for their part: whatever the engine, each cost the
	// origin one request at least, as no one could have had it before, so
	// they are what origin requests per part divide by.
	EdgeParts, HeldReloads map[string]struct{}
}

// NewLLFigures is empty figures, to merge into.
func NewLLFigures() *LLFigures {
	return &LLFigures{PartLatency: loadgen.NewHistogram(), ReloadHold: loadgen.NewHistogram(),
		EdgeParts: map[string]struct{}{}, HeldReloads: map[string]struct{}{}}
}

// EarlyAnswers is the early answers of every kind.
func (f *LLFigures) EarlyAnswers() int64 {
	return f.Early[LLLoad] + f.Early[LLReload] + f.Early[LLPart]
}

// Add counts records of one viewer.
func (f *LLFigures) Add(recs []LLRecord) {
	f.Viewers++
	for i := range recs {
		r := &recs[i]
		if r.Cut {
			f.Cut++
			continue
		}
		f.Requests[r.Kind]++
		f.Bytes += r.Bytes
		if r.Early {
			f.Early[r.Kind]++
		}
		if r.failed() {
			f.Errors[r.Kind]++
			continue
		}
		if r.Ready.IsZero() {
			f.Unproven++
			continue
		}
		switch r.Kind {
		case LLPart:
			// A part a viewer asked for after it was ready, catching up
			// from an older playlist or after an early one, reached it
			// that much later all the same: the engine's playlists are
			// what sent it there, so it counts from its own ready instant
			// like any other. Leaving it out would rank best an engine
			// whose viewers never wait at the edge.
			if sent := r.Sent; !sent.IsZero() && !sent.Before(r.Ready) {
				f.CatchUp++
			} else if !r.Early {
				f.EdgeParts[r.URI] = struct{}{}
			}
			loadgen.Clamp(f.PartLatency, r.FirstByte.Sub(r.Ready).Nanoseconds())
		case LLReload:
			from := r.Sent
			if from.IsZero() {
				from = r.Intended
			}
			switch {
			case r.Early, r.Awaited.IsZero():
				// Not held (answered before its part existed), or not to be
				// told held (its part failed, and the pass with it).
			case !from.Before(r.Awaited):
				f.CatchUpReloads++ // its part existed: nothing to hold
			default:
				f.HeldReloads[r.URI] = struct{}{}
				loadgen.Clamp(f.ReloadHold, r.FirstByte.Sub(from).Nanoseconds())
			}
		}
	}
}

// Merge adds g's figures to f's.
func (f *LLFigures) Merge(g *LLFigures) {
	f.Viewers += g.Viewers
	f.PartLatency.Merge(g.PartLatency)
	f.ReloadHold.Merge(g.ReloadHold)
	for k := range f.Requests {
		f.Requests[k] += g.Requests[k]
		f.Errors[k] += g.Errors[k]
		f.Early[k] += g.Early[k]
	}
	f.Unproven += g.Unproven
	f.Cut += g.Cut
	f.CatchUp += g.CatchUp
	f.CatchUpReloads += g.CatchUpReloads
	for u := range g.EdgeParts {
		f.EdgeParts[u] = struct{}{}
	}
	for u := range g.HeldReloads {
		f.HeldReloads[u] = struct{}{}
	}
	f.Bytes += g.Bytes
}

// LLViewers is a crowd of LL-HLS viewers of one channel.
type LLViewers struct {
	BaseURL string
	Channel int
	// Client is shared by the viewers; nil: one whose transport keeps two
	// idle connections a viewer (a reload and a part are under way at
	// once), closed when they end.
	Client  *http.Client
	Viewers int
	// Duration is how long they play, from the call.
	Duration time.Duration
	// Stagger spreads the viewers' starts evenly over it, so they do not
	// join in one burst; they meet at the part edges all the same.
	Stagger time.Duration
}

// RunLLViewers plays c.Viewers viewers until c.Duration has passed or ctx
// ends, and returns their figures, each viewer's counted apart and merged
// once.
func RunLLViewers(ctx context.Context, c LLViewers) (*LLFigures, error) {
	if c.Viewers < 1 || c.Duration <= 0 || c.Stagger < 0 {
		return nil, fmt.Errorf("ll-hls viewers: %d viewers for %v, staggered over %v: want at least one viewer and a positive duration", c.Viewers, c.Duration, c.Stagger)
	}
	client := c.Client
	if client == nil {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.MaxIdleConnsPerHost = 2 * c.Viewers
		defer tr.CloseIdleConnections()
		client = &http.Client{Transport: tr}
	}
	start := time.Now()
	deadline := start.Add(c.Duration)
	figs := make([]*LLFigures, c.Viewers)
	errs := make([]error, c.Viewers)
	var wg sync.WaitGroup
	for i := range c.Viewers {
		wg.Go(func() {
			if c.Stagger > 0 {
				llPause(ctx, c.Stagger*time.Duration(i)/time.Duration(c.Viewers))
			}
			v := &LLViewer{BaseURL: c.BaseURL, Channel: c.Channel, Client: client, Deadline: deadline}
			errs[i] = v.Run(ctx)
			figs[i] = NewLLFigures()
			figs[i].Add(v.Records)
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	all := NewLLFigures()
	for _, f := range figs {
		all.Merge(f)
	}
	return all, nil
}
