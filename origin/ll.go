package origin

import (
	"context"
	"fmt"
	"math"
	"math/bits"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Low-latency HLS, as draft-pantos-hls-rfc8216bis (HLS 2nd edition) has it:
// partial segments (EXT-X-PART), a preload hint for the next part
// (EXT-X-PRELOAD-HINT) and blocking playlist reloads (the _HLS_msn and
// _HLS_part delivery directives, CAN-BLOCK-RELOAD=YES).
//
// Paths, channel c in [0, LL.Channels):
//
//	/ll/{c}/index.m3u8          the media playlist (LLMediaPath)
//	/ll/{c}/index.m3u8?_HLS_msn=M[&_HLS_part=N]
//	                            a blocking reload: held until the playlist holds
//	                            segment M whole (or its part N), at most three
//	                            target durations, then 503
//	/ll/{c}/{msn}.{k}.ts        part k of segment msn (LLPartPath)
//	/ll/{c}/{msn}.ts            segment msn whole (LLSegmentPath)
//
// The clock is the Unix epoch, as for the live channels: part k of segment
// msn is global part g = msn×PartsPerSegment + k, covers [g×PartTarget,
// (g+1)×PartTarget) and is ready when it ends; a segment is ready with its
// last part. Every part and segment stays available once ready. A request
// for the next part, the one the preload hint names, is held until it is
// ready (the draft: a server must not send a byte of a part before all of it
// can be sent); a request for a part further ahead, or one that will never
// exist (k ≥ PartsPerSegment), is 404 at once, and so is a segment that is
// not whole yet: no playlist names them, and a cache must not wait on them.
//
// A segment's bytes are the content LLSegmentKey(c, msn) (see SegmentBytes);
// part k is its bytes [k×PartSize, (k+1)×PartSize), so a segment is its
// parts end to end, and parts are whole TS packets.
//
// Besides the headers of every answer, parts, segments and playlists carry
// PartReadyHeader. Stats.LL counts LL answers by kind.

// PartReadyHeader is when the part became ready at the origin, in Unix
// nanoseconds: on a part, that part; on a segment, its last part; on a
// playlist, the newest part it lists. A part's first byte reaching a viewer
// before it is an answer that came before its part existed.
const PartReadyHeader = "X-Origin-Part-Ready"

// Defaults for the zero fields of LL: 2-second segments of four half-second
// parts at 1.2 Mbit/s.
const (
	DefaultLLChannels             = 2
	DefaultPartTarget             = 500 * time.Millisecond
	DefaultPartsPerSegment        = 4
	DefaultLLBitrate              = 1_200_000
	DefaultLLWindow               = 6
	DefaultLLPlaylistCacheControl = "public, max-age=1"
)

// Bounds of LL. Parts of 100 ms are already shorter than any packager cuts.
const (
	minPartTarget      = 100 * time.Millisecond
	maxPartTarget      = 5 * time.Second
	maxPartsPerSegment = 100
)

// LL shapes the low-latency live channels (see PartReadyHeader's comment
// block for their paths and clock). Zero fields take the defaults.
type LL struct {
	Channels int
	// PartTarget is every part's duration and the EXT-X-PART-INF
	// PART-TARGET: 100ms to 5s, a whole number of milliseconds.
	PartTarget time.Duration
	// PartsPerSegment is the number of parts of a segment: a segment lasts
	// PartTarget × PartsPerSegment, at most a minute.
	PartsPerSegment int
	// Bitrate in bits per second sizes the parts (see PartSize).
	Bitrate int64
	// Window is how many whole segments a playlist lists; they must last
	// three target durations at least (the draft's floor for a live
	// playlist). Zero: 6, or as many as that floor needs.
	Window int
	// PlaylistCacheControl is the Cache-Control of every playlist answer,
	// blocking or not. Parts and segments take CacheControl.Segment.
	//
	// max-age counts whole seconds, so 1 is the shortest that still lets a
	// cache answer the viewers of one playlist URI from one fetch. A
	// blocking reload's URI names the part it waits for, so a cache keys
	// each part's reload apart and a copy it keeps a second holds that part
	// all the same; a plain reload up to a second old only starts a player,
	// whose next request is a blocking one.
	PlaylistCacheControl string
}

// WithDefaults fills the zero fields.
func (l LL) WithDefaults() LL {
	if l.Channels == 0 {
		l.Channels = DefaultLLChannels
	}
	if l.PartTarget == 0 {
		l.PartTarget = DefaultPartTarget
	}
	if l.PartsPerSegment == 0 {
		l.PartsPerSegment = DefaultPartsPerSegment
	}
	if l.Bitrate == 0 {
		l.Bitrate = DefaultLLBitrate
	}
	if l.Window == 0 {
		l.Window = DefaultLLWindow
		if seg := l.SegmentDuration(); seg > 0 {
			l.Window = max(l.Window, int(math.Ceil(float64(l.minPlaylist())/float64(seg))))
		}
	}
	if l.PlaylistCacheControl == "" {
		l.PlaylistCacheControl = DefaultLLPlaylistCacheControl
	}
	return l
}

// minPlaylist is three target durations: a live playlist must not last less.
func (l LL) minPlaylist() time.Duration {
	return 3 * time.Duration(targetDuration(l.SegmentDuration())) * time.Second
}

func (l LL) validate() error {
	if l.Channels < 1 || l.Channels > maxChannels {
		return cfgErr("LL.Channels", "%d: want 1 to %d channels", l.Channels, maxChannels)
	}
	if d := l.PartTarget; d < minPartTarget || d > maxPartTarget || d%time.Millisecond != 0 {
		return cfgErr("LL.PartTarget", "%v: want %v to %v, a whole number of milliseconds", d, minPartTarget, maxPartTarget)
	}
	if p := l.PartsPerSegment; p < 1 || p > maxPartsPerSegment {
		return cfgErr("LL.PartsPerSegment", "%d: want 1 to %d parts", p, maxPartsPerSegment)
	}
	if seg := l.SegmentDuration(); seg > maxTargetDuration {
		return cfgErr("LL.PartsPerSegment", "%d parts of %v make %v segments: want at most %v", l.PartsPerSegment, l.PartTarget, seg, maxTargetDuration)
	}
	if l.Bitrate < 1 || l.Bitrate > maxBitrate {
		return cfgErr("LL.Bitrate", "%d: want 1 to %d bits per second", l.Bitrate, int64(maxBitrate))
	}
	if l.Window < 1 || l.Window > maxWindow {
		return cfgErr("LL.Window", "%d: want 1 to %d segments", l.Window, maxWindow)
	}
	if got, want := time.Duration(l.Window)*l.SegmentDuration(), l.minPlaylist(); got < want {
		return cfgErr("LL.Window", "%d segments of %v last %v: want at least three target durations, %v", l.Window, l.SegmentDuration(), got, want)
	}
	if !headerValueOK(l.PlaylistCacheControl) {
		return cfgErr("LL.PlaylistCacheControl", "%q: control characters are not allowed in a header value", l.PlaylistCacheControl)
	}
	return nil
}

func headerValueOK(v string) bool {
	return !strings.ContainsFunc(v, func(r rune) bool { return r < ' ' && r != '\t' || r == 0x7f })
}

// SegmentDuration is PartTarget × PartsPerSegment.
func (l LL) SegmentDuration() time.Duration {
	return l.PartTarget * time.Duration(l.PartsPerSegment)
}

// PartSize is the size in bytes of every part: Bitrate × PartTarget / 8,
// rounded up to whole TS packets (188 bytes), one at least. l must have its
// defaults filled in.
func (l LL) PartSize() int64 {
	// 128 bits, since bits per second times nanoseconds soon overflows 64.
	const div = 8 * uint64(time.Second)
	hi, lo := bits.Mul64(uint64(max(l.Bitrate, 0)), uint64(max(l.PartTarget, 0)))
	if hi >= div {
		return math.MaxInt64 / tsPacket * tsPacket
	}
	q, rem := bits.Div64(hi, lo, div)
	if rem != 0 {
		q++
	}
	packets := max(1, (q+tsPacket-1)/tsPacket)
	return int64(min(packets, math.MaxInt64/tsPacket)) * tsPacket
}

// PartReady is when part k of segment msn is ready: the end of the part,
// (msn×PartsPerSegment + k + 1) × PartTarget after the Unix epoch. l must
// have its defaults filled in.
func (l LL) PartReady(msn int64, k int) time.Time {
	return l.globalReady(msn*int64(l.PartsPerSegment) + int64(k))
}

// Edge is the newest part ready at t: segment msn, part k. Before the first
// part (t before the epoch plus one part), msn is negative.
func (l LL) Edge(t time.Time) (msn int64, k int) {
	g := l.newest(t)
	return floorDiv(g, int64(l.PartsPerSegment)), int(floorMod(g, int64(l.PartsPerSegment)))
}

func (l LL) globalReady(g int64) time.Time { return time.Unix(0, (g+1)*int64(l.PartTarget)) }

// newest is the global index of the newest part ready at t.
func (l LL) newest(t time.Time) int64 { return LiveEdge(t, l.PartTarget) }

// maxSequence bounds media sequence numbers: below the live limit, and so
// that every part's ready instant is a valid UnixNano.
func (l LL) maxSequence() int64 {
	return min(maxLiveSequence, math.MaxInt64/int64(l.SegmentDuration())-1)
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b < 0 {
		q--
	}
	return q
}

func floorMod(a, b int64) int64 { return a - floorDiv(a, b)*b }

// LLMediaPath is the media playlist of low-latency channel c.
func LLMediaPath(c int) string { return "/ll/" + strconv.Itoa(c) + "/index.m3u8" }

// LLPartPath is part k of segment msn of low-latency channel c, as its
// playlist lists it.
func LLPartPath(c int, msn int64, k int) string {
	return "/ll/" + strconv.Itoa(c) + "/" + strconv.FormatInt(msn, 10) + "." + strconv.Itoa(k) + ".ts"
}

// LLSegmentPath is segment msn of low-latency channel c, whole.
func LLSegmentPath(c int, msn int64) string {
	return "/ll/" + strconv.Itoa(c) + "/" + strconv.FormatInt(msn, 10) + ".ts"
}

// LLSegmentKey is the content number of segment msn of low-latency channel
// c (see SegmentBytes): 1<<60 | c<<44 | msn, unique for c < 1<<16 and
// 0 <= msn < 1<<40, never a live (bit 62) or VOD (bit 61) key, and shared
// with /stream/ only by segment numbers from 1<<60 up, which no playlist
// lists. Part k is its bytes from k×PartSize.
func LLSegmentKey(c int, msn int64) int64 { return 1<<60 | int64(c)<<44 | msn }

// llRef is a parsed low-latency path.
type llRef struct {
	kind objectKind // kindManifest, or kindSegment for a part or segment
	c    int
	msn  int64
	part int // the part index, -1 for a whole segment
}

// parsePath reads a path under /ll/ whose numbers are canonical decimal and
// within l; isLL is false for any other path. A part index from
// PartsPerSegment up names no part.
func (l LL) parsePath(p string) (ref llRef, ok, isLL bool) {
	rest, ok := strings.CutPrefix(p, "/ll/")
	if !ok {
		return ref, false, false
	}
	cs, name, ok := strings.Cut(rest, "/")
	if !ok {
		return ref, false, true
	}
	c, ok := canonicalBelow(cs, int64(l.Channels))
	if !ok {
		return ref, false, true
	}
	ref.c = int(c)
	if name == "index.m3u8" {
		ref.kind = kindManifest
		return ref, true, true
	}
	num, ok := strings.CutSuffix(name, ".ts")
	if !ok {
		return ref, false, true
	}
	ref.kind, ref.part = kindSegment, -1
	ms, ks, isPart := strings.Cut(num, ".")
	if ref.msn, ok = canonicalBelow(ms, l.maxSequence()); !ok {
		return ref, false, true
	}
	if isPart {
		k, ok := canonicalBelow(ks, int64(l.PartsPerSegment))
		if !ok {
			return ref, false, true
		}
		ref.part = int(k)
	}
	return ref, true, true
}

// llObjects is what the low-latency namespace precomputes.
type llObjects struct {
	cfg      LL
	partSize int64
	td       int64  // EXT-X-TARGETDURATION
	header   []byte // the playlist's tags up to EXT-X-MEDIA-SEQUENCE
	partInf  string // an EXT-X-PART DURATION
	segInf   string // an EXTINF
	// partSpan is how many parts back from a playlist's end its segments
	// list their parts: three target durations, as the draft says EXT-X-PART
	// tags further back should go.
	partSpan int64
	// maxHold bounds a held request: three target durations, after which
	// the draft says a blocking reload should answer 503.
	maxHold time.Duration
}

func newLLObjects(l LL) llObjects {
	lo := llObjects{cfg: l, partSize: l.PartSize(), td: targetDuration(l.SegmentDuration())}
	lo.partInf = extinf(l.PartTarget)
	lo.segInf = extinf(l.SegmentDuration())
	lo.maxHold = 3 * time.Duration(lo.td) * time.Second
	lo.partSpan = int64(lo.maxHold / l.PartTarget)
	// The draft ties no protocol version to EXT-X-PART, EXT-X-PART-INF,
	// EXT-X-SERVER-CONTROL or EXT-X-PRELOAD-HINT (only EXT-X-SKIP needs 9).
	// 9 all the same: a player older than the low-latency tags then refuses
	// the playlist rather than polls it as plain live HLS and measures
	// nothing we mean. PART-HOLD-BACK is three part targets, the draft's
	// recommended floor.
	lo.header = fmt.Appendf(nil, "#EXTM3U\n#EXT-X-VERSION:9\n#EXT-X-TARGETDURATION:%d\n"+
		"#EXT-X-SERVER-CONTROL:CAN-BLOCK-RELOAD=YES,PART-HOLD-BACK=%s\n#EXT-X-PART-INF:PART-TARGET=%s\n",
		lo.td, extinf(3*l.PartTarget), lo.partInf)
	return lo
}

// llPlaylist is a low-latency media playlist and the newest part it lists.
type llPlaylist struct {
	newest int64
	ready  time.Time // of that part
	obj    object
}

// llPlaylistAt is the playlist at now. Every channel shares it (its URIs are
// relative) and it changes once a part, so the last one built is kept.
func (o *Origin) llPlaylistAt(now time.Time) *llPlaylist {
	lo := &o.ll
	g := max(lo.cfg.newest(now), -1)
	if p := o.llPlaylist.Load(); p != nil && p.newest == g {
		return p
	}
	p := &llPlaylist{newest: g, ready: lo.cfg.globalReady(g)}
	p.obj = playlistObject(kindManifest, "llm"+strconv.FormatInt(g, 10), lo.playlist(g))
	p.obj.modTime = p.ready.Truncate(time.Second)
	p.obj.cacheControl = lo.cfg.PlaylistCacheControl
	o.llPlaylist.Store(p) // racing builders store equal playlists or a newer one: either will do
	return p
}

// playlist lists the whole segments of the window, then the parts of the
// segment under way, then the hint of the next part (global index g+1).
// Segments starting within partSpan parts of the end list their parts
// first, all of them, INDEPENDENT=YES on the first.
func (lo *llObjects) playlist(g int64) []byte {
	l := lo.cfg
	p := int64(l.PartsPerSegment)
	last := floorDiv(g+1, p) - 1 // the newest whole segment
	first := max(0, last-int64(l.Window)+1)
	partsFrom := floorDiv(g+1-lo.partSpan+p-1, p) // the first segment listing its parts
	b := make([]byte, 0, len(lo.header)+64+l.Window*24+int(min(lo.partSpan+p, 1000))*48)
	b = append(b, lo.header...)
	b = fmt.Appendf(b, "#EXT-X-MEDIA-SEQUENCE:%d\n#EXT-X-PROGRAM-DATE-TIME:", first)
	b = time.Unix(0, first*int64(l.SegmentDuration())).UTC().AppendFormat(b, pdtFormat)
	b = append(b, '\n')
	for m := first; m <= last; m++ {
		if m >= partsFrom {
			for k := range l.PartsPerSegment {
				b = lo.appendPart(b, m, k)
			}
		}
		b = append(b, "#EXTINF:"...)
		b = append(b, lo.segInf...)
		b = append(b, ",\n"...)
		b = strconv.AppendInt(b, m, 10)
		b = append(b, ".ts\n"...)
	}
	for k := 0; (last+1)*p+int64(k) <= g; k++ {
		b = lo.appendPart(b, last+1, k)
	}
	next := g + 1
	b = append(b, `#EXT-X-PRELOAD-HINT:TYPE=PART,URI="`...)
	b = appendPartURI(b, next/p, int(next%p))
	return append(b, "\"\n"...)
}

func (lo *llObjects) appendPart(b []byte, msn int64, k int) []byte {
	b = append(b, "#EXT-X-PART:DURATION="...)
	b = append(b, lo.partInf...)
	b = append(b, `,URI="`...)
	b = appendPartURI(b, msn, k)
	b = append(b, '"')
	if k == 0 {
		b = append(b, ",INDEPENDENT=YES"...)
	}
	return append(b, '\n')
}

func appendPartURI(b []byte, msn int64, k int) []byte {
	b = strconv.AppendInt(b, msn, 10)
	b = append(b, '.')
	b = strconv.AppendInt(b, int64(k), 10)
	return append(b, ".ts"...)
}

// holdResult is how a held request ended.
type holdResult int

const (
	holdReady    holdResult = iota // what it waits for is ready
	holdTimedOut                   // maxHold passed first
	holdGone                       // the client left
)

// hold waits until ready on the origin's clock, for at most maxHold of
// sleeps, and returns the clock reading it ended on. It sleeps until the
// instant it waits for rather than polling, waking again only if the
// clock is behind the timer.
func (o *Origin) hold(ctx context.Context, ready time.Time) (time.Time, holdResult) {
	budget := o.ll.maxHold
	for {
		now := o.now()
		d := ready.Sub(now)
		if d <= 0 {
			return now, holdReady
		}
		if budget <= 0 {
			return now, holdTimedOut
		}
		d = min(d, budget)
		if !o.holdSleep(ctx, d) {
			return now, holdGone
		}
		budget -= d
	}
}

// llError answers an LL request with an error no cache stores: a 404 for a
// part that is not there yet must not outlive the instant it becomes one.
func llError(w http.ResponseWriter, msg string, status int) {
	w.Header().Set("Cache-Control", "no-store")
	http.Error(w, msg, status)
}

// countLLRequest counts a request for a part or a blocking reload as it
// arrives, before a mode, a hold or its client can end it: whatever its
// answer, the origin was asked.
func (o *Origin) countLLRequest(r *http.Request, ref *llRef) {
	switch {
	case ref.kind == kindSegment && ref.part >= 0:
		o.stats.countLL(func(s *LLStats) { s.PartRequests++ })
	case ref.kind == kindManifest && r.URL.Query().Has("_HLS_msn"):
		o.stats.countLL(func(s *LLStats) { s.BlockingRequests++ })
	}
}

// serveLL answers a low-latency path, after the failure mode and the first
// byte delay; a held request is then answered as soon as what it waits for
// is ready, so the delay overlaps the hold instead of adding to it.
func (o *Origin) serveLL(w http.ResponseWriter, r *http.Request, key string, ref llRef) {
	lo := &o.ll
	l := lo.cfg
	p := int64(l.PartsPerSegment)
	now := o.now()
	newest := l.newest(now)
	held := false
	wait := func(ready time.Time) bool {
		if !ready.After(now) {
			return true
		}
		held = true
		var res holdResult
		now, res = o.hold(r.Context(), ready)
		switch res {
		case holdGone:
			o.stats.countLL(func(s *LLStats) { s.Abandoned++ })
			return false
		case holdTimedOut:
			o.stats.countLL(func(s *LLStats) { s.TimedOut++ })
			llError(w, "not ready within three target durations", http.StatusServiceUnavailable)
			return false
		}
		return !o.failing(w, key) // the mode may have changed meanwhile
	}

	if ref.kind == kindManifest {
		target, blocking, msg := l.reloadTarget(r.URL.Query(), newest)
		if msg != "" {
			o.stats.countLL(func(s *LLStats) { s.Rejected++ })
			llError(w, msg, http.StatusBadRequest)
			return
		}
		if blocking && !wait(l.globalReady(target)) {
			return
		}
		pl := o.llPlaylistAt(now)
		obj := pl.obj
		obj.built = now
		if pl.newest >= 0 {
			w.Header().Set(PartReadyHeader, strconv.FormatInt(pl.ready.UnixNano(), 10))
		}
		o.stats.countLL(func(s *LLStats) {
			s.Playlists++
			if blocking {
				s.Blocking++
				if held {
					s.BlockingHeld++
				}
			}
		})
		o.serveObject(w, r, key, &obj)
		return
	}

	obj := object{kind: kindSegment, n: LLSegmentKey(ref.c, ref.msn), size: lo.partSize * p}
	var g int64
	var tag string
	if ref.part < 0 {
		g = ref.msn*p + p - 1
		if g > newest {
			o.stats.countLL(func(s *LLStats) { s.NotFound++ })
			llError(w, "segment not whole yet", http.StatusNotFound)
			return
		}
		tag = `"lls` + strconv.Itoa(ref.c) + "." + strconv.FormatInt(ref.msn, 10)
	} else {
		g = ref.msn*p + int64(ref.part)
		if g > newest+1 {
			o.stats.countLL(func(s *LLStats) { s.NotFound++ })
			llError(w, "part not hinted yet", http.StatusNotFound)
			return
		}
		if !wait(l.globalReady(g)) {
			return
		}
		obj.off, obj.size = int64(ref.part)*lo.partSize, lo.partSize
		tag = `"llp` + strconv.Itoa(ref.c) + "." + strconv.FormatInt(ref.msn, 10) + "." + strconv.Itoa(ref.part)
	}
	ready := l.globalReady(g)
	obj.crc = fmt.Sprintf("%08x", o.segmentCRC(obj.n, obj.off, obj.size))
	obj.etag = tag + "-" + obj.crc + `"`
	obj.modTime = ready.Truncate(time.Second)
	obj.built = now
	w.Header().Set(PartReadyHeader, strconv.FormatInt(ready.UnixNano(), 10))
	o.stats.countLL(func(s *LLStats) {
		if ref.part < 0 {
			s.Segments++
			return
		}
		s.Parts++
		if held {
			s.PartsHeld++
		}
	})
	o.serveObject(w, r, key, &obj)
}

// reloadTarget reads the delivery directives of a playlist request at a
// clock whose newest part is newest: the global index of the part a
// blocking reload waits for, or the reason it is a Bad Request. Other
// queries (a benchmark's nonce, _HLS_skip, which this origin does not
// offer) are ignored, as the draft asks.
func (l LL) reloadTarget(q map[string][]string, newest int64) (target int64, blocking bool, bad string) {
	ms, hasMSN := q["_HLS_msn"]
	ps, hasPart := q["_HLS_part"]
	switch {
	case !hasMSN && hasPart:
		return 0, false, "_HLS_part without _HLS_msn"
	case !hasMSN:
		return 0, false, ""
	}
	msn, ok := canonicalBelow(ms[0], l.maxSequence())
	if !ok {
		return 0, false, "_HLS_msn: want a media sequence number"
	}
	p := int64(l.PartsPerSegment)
	if last := floorDiv(newest+1, p) - 1; msn > last+2 {
		return 0, false, "_HLS_msn: more than two segments past the playlist's last"
	}
	if !hasPart {
		return msn*p + p - 1, true, "" // segment msn whole
	}
	k, ok := canonicalBelow(ps[0], math.MaxInt32)
	if !ok {
		return 0, false, "_HLS_part: want a part index"
	}
	target = msn*p + k
	if k >= p {
		target = (msn + 1) * p // the draft: part 0 of the next segment
	}
	// The Advance Part Limit: 3 / PART-TARGET parts for parts under a
	// second, 3 otherwise; in time, three seconds of parts or three parts.
	if ahead := target - newest; ahead > 3 && time.Duration(ahead)*l.PartTarget > 3*time.Second {
		return 0, false, "_HLS_part: past the Advance Part Limit"
	}
	return target, true, ""
}
