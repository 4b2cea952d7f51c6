package origin

import (
	"fmt"
	"math"
	"math/bits"
	"slices"
	"strconv"
	"strings"
	"time"
)

// LiveEdgeHeader is on every live media playlist answer: the media sequence
// number of the newest segment it lists. A proxy passes it through, so a
// client learns which window a cached copy holds without parsing it.
const LiveEdgeHeader = "X-Hlsbench-Live-Edge"

// Defaults for the zero fields of Live: a few channels and a catalogue of
// short titles, each with a four-step ladder, which is what a live audience
// spreads its requests over.
const (
	DefaultChannels       = 4
	DefaultTitles         = 50
	DefaultTargetDuration = 2 * time.Second
	DefaultWindow         = 6  // segments a live media playlist lists
	DefaultTitleSegments  = 30 // segments of every VOD title
)

// DefaultLadder is the ABR ladder in bits per second, lowest first.
var DefaultLadder = []int64{150_000, 300_000, 600_000, 1_200_000}

// Bounds of Live. The channel, rendition, title and segment limits keep
// LiveSegmentKey and VODSegmentKey unique; the others keep sizes and times
// far from overflowing.
const (
	maxChannels       = 1 << 16
	maxTitles         = 1 << 30
	maxRenditions     = 16
	maxTitleSegments  = 1 << 24
	maxLiveSequence   = 1 << 40 // media sequence numbers are below it
	maxWindow         = 1000
	maxBitrate        = 10_000_000_000 // bits per second
	minTargetDuration = time.Second
	maxTargetDuration = time.Minute
)

// Live shapes the live channels and VOD titles. Zero fields take the defaults.
//
// Live channel c serves LiveMasterPath(c), whose variants are the ladder's
// renditions, and for each rendition r a media playlist LiveMediaPath(c, r)
// listing the newest Window segments. The live clock is the Unix epoch:
// segment n covers [n×TargetDuration, (n+1)×TargetDuration) after it and is
// published when it ends (see LiveEdge), so a client on the same machine
// knows the live edge from its own clock, with no coordination with the
// origin process. Every segment up to the edge stays available. VOD title t
// is the same ladder under VODMasterPath(t), each rendition a finished
// playlist of TitleSegments segments.
type Live struct {
	Channels int
	Titles   int
	// Ladder holds the bits per second of each rendition, ascending.
	Ladder []int64
	// TargetDuration is every live and VOD segment's duration (EXTINF) and
	// the playlists' EXT-X-TARGETDURATION, rounded up to whole seconds there.
	TargetDuration time.Duration
	// Window is how many segments a live media playlist lists.
	Window        int
	TitleSegments int
}

// WithDefaults fills the zero fields. The ladder it fills in is a copy of
// DefaultLadder, so changing it changes no other Live.
func (l Live) WithDefaults() Live {
	if l.Channels == 0 {
		l.Channels = DefaultChannels
	}
	if l.Titles == 0 {
		l.Titles = DefaultTitles
	}
	if len(l.Ladder) == 0 {
		l.Ladder = slices.Clone(DefaultLadder)
	}
	if l.TargetDuration == 0 {
		l.TargetDuration = DefaultTargetDuration
	}
	if l.Window == 0 {
		l.Window = DefaultWindow
	}
	if l.TitleSegments == 0 {
		l.TitleSegments = DefaultTitleSegments
	}
	return l
}

// validate checks a Live with its defaults filled in.
func (l Live) validate() error {
	if l.Channels < 1 || l.Channels > maxChannels {
		return cfgErr("Live.Channels", "%d: want 1 to %d channels", l.Channels, maxChannels)
	}
	if l.Titles < 1 || l.Titles > maxTitles {
		return cfgErr("Live.Titles", "%d: want 1 to %d titles", l.Titles, maxTitles)
	}
	if n := len(l.Ladder); n < 1 || n > maxRenditions {
		return cfgErr("Live.Ladder", "%d renditions: want 1 to %d", n, maxRenditions)
	}
	for i, b := range l.Ladder {
		if b < 1 || b > maxBitrate {
			return cfgErr("Live.Ladder", "rendition %d at %d bit/s: want 1 to %d bits per second", i, b, int64(maxBitrate))
		}
		if i > 0 && b <= l.Ladder[i-1] {
			return cfgErr("Live.Ladder", "%v: want positive bitrates in ascending order, each above the one before", l.Ladder)
		}
	}
	if td := l.TargetDuration; td < minTargetDuration || td > maxTargetDuration || td%time.Millisecond != 0 {
		return cfgErr("Live.TargetDuration", "%v: want %v to %v, a whole number of milliseconds", td, minTargetDuration, maxTargetDuration)
	}
	if l.Window < 1 || l.Window > maxWindow {
		return cfgErr("Live.Window", "%d: want 1 to %d segments", l.Window, maxWindow)
	}
	if l.TitleSegments < 1 || l.TitleSegments > maxTitleSegments {
		return cfgErr("Live.TitleSegments", "%d: want 1 to %d segments", l.TitleSegments, maxTitleSegments)
	}
	// The VOD playlist is held in memory, like the static one.
	if size := vodMediaSize(l.TargetDuration, l.TitleSegments); size > MaxManifestSize {
		return cfgErr("Live.TitleSegments", "%d: its VOD playlist would be %d bytes; want at most %d (fewer segments)", l.TitleSegments, size, MaxManifestSize)
	}
	return nil
}

// SegmentSize is the size in bytes of every segment of rendition r:
// Ladder[r] × TargetDuration / 8 bits, and at least one TS packet (188).
// Zero fields count as their defaults. r must be in [0, len(Ladder)).
func (l Live) SegmentSize(r int) int64 {
	ladder, td := l.Ladder, l.TargetDuration
	if len(ladder) == 0 {
		ladder = DefaultLadder
	}
	if td == 0 {
		td = DefaultTargetDuration
	}
	bps := ladder[r]
	if bps <= 0 || td <= 0 {
		return tsPacket
	}
	// 128 bits, since bits per second times nanoseconds soon overflows 64.
	const div = 8 * uint64(time.Second)
	hi, lo := bits.Mul64(uint64(bps), uint64(td))
	if hi >= div {
		return math.MaxInt64
	}
	q, _ := bits.Div64(hi, lo, div)
	if q > math.MaxInt64 {
		return math.MaxInt64
	}
	return max(int64(q), tsPacket)
}

// LiveMasterPath is the master playlist of live channel c.
func LiveMasterPath(c int) string { return "/live/" + strconv.Itoa(c) + "/master.m3u8" }

// LiveMediaPath is the media playlist of rendition r of live channel c.
func LiveMediaPath(c, r int) string {
	return "/live/" + strconv.Itoa(c) + "/" + strconv.Itoa(r) + "/index.m3u8"
}

// LiveSegmentPath is live segment msn of rendition r of channel c, as its
// media playlist lists it.
func LiveSegmentPath(c, r int, msn int64) string {
	return "/live/" + strconv.Itoa(c) + "/" + strconv.Itoa(r) + "/" + strconv.FormatInt(msn, 10) + ".ts"
}

// VODMasterPath is the master playlist of VOD title t.
func VODMasterPath(t int) string { return "/vod/" + strconv.Itoa(t) + "/master.m3u8" }

// VODMediaPath is the media playlist of rendition r of VOD title t.
func VODMediaPath(t, r int) string {
	return "/vod/" + strconv.Itoa(t) + "/" + strconv.Itoa(r) + "/index.m3u8"
}

// VODSegmentPath is segment k of rendition r of VOD title t.
func VODSegmentPath(t, r, k int) string {
	return "/vod/" + strconv.Itoa(t) + "/" + strconv.Itoa(r) + "/" + strconv.Itoa(k) + ".ts"
}

// LiveEdge is the newest live segment published at t, for segments of
// duration td (positive): segment n covers [n×td, (n+1)×td) after the Unix
// epoch and is published when it ends, so the edge is floor(t/td) - 1. t
// must lie where time.Time.UnixNano is defined (years 1678 to 2262).
func LiveEdge(t time.Time, td time.Duration) int64 {
	ns, d := t.UnixNano(), int64(td)
	q := ns / d
	if ns%d < 0 {
		q-- // floor, not truncation, before the epoch
	}
	return q - 1
}

// LivePublished is when live segment msn was published: (msn+1)×td after the
// Unix epoch, in the range of time.Unix(0, ns).
func LivePublished(msn int64, td time.Duration) time.Time {
	return time.Unix(0, (msn+1)*int64(td))
}

// LiveSegmentKey is the content number of live segment msn of rendition r of
// channel c (see SegmentBytes and SegmentCRC): 1<<62 | c<<44 | r<<40 | msn.
// It is unique for the objects an origin serves (c < 1<<16, r < 16,
// 0 <= msn < 1<<40), never a VOD key (bit 62 against 61), and shared with
// /stream/ only by segment numbers from 1<<61 up, which no playlist lists.
func LiveSegmentKey(c, r int, msn int64) int64 {
	return 1<<62 | int64(c)<<44 | int64(r)<<40 | msn
}

// VODSegmentKey is the content number of segment k of rendition r of VOD
// title t: 1<<61 | t<<28 | r<<24 | k, unique for t < 1<<30, r < 16 and
// k < 1<<24 (see LiveSegmentKey).
func VODSegmentKey(t, r, k int) int64 {
	return 1<<61 | int64(t)<<28 | int64(r)<<24 | int64(k)
}

// liveRef is a parsed live or VOD path.
type liveRef struct {
	vod   bool
	kind  objectKind // kindMaster, kindManifest or kindSegment
	id, r int        // channel or title; rendition
	seg   int64      // media sequence number, or VOD segment index
}

// parsePath reads a live or VOD path whose numbers are canonical decimal and
// within l (with its defaults filled in).
func (l Live) parsePath(p string) (liveRef, bool) {
	var ref liveRef
	rest, ok := strings.CutPrefix(p, "/live/")
	if !ok {
		if rest, ok = strings.CutPrefix(p, "/vod/"); !ok {
			return ref, false
		}
		ref.vod = true
	}
	ids, rest, ok := strings.Cut(rest, "/")
	if !ok {
		return ref, false
	}
	idLimit := l.Channels
	if ref.vod {
		idLimit = l.Titles
	}
	id, ok := canonicalBelow(ids, int64(idLimit))
	if !ok {
		return ref, false
	}
	ref.id = int(id)
	if rest == "master.m3u8" {
		ref.kind = kindMaster
		return ref, true
	}
	rs, name, ok := strings.Cut(rest, "/")
	if !ok {
		return ref, false
	}
	r, ok := canonicalBelow(rs, int64(len(l.Ladder)))
	if !ok {
		return ref, false
	}
	ref.r = int(r)
	if name == "index.m3u8" {
		ref.kind = kindManifest
		return ref, true
	}
	num, ok := strings.CutSuffix(name, ".ts")
	if !ok {
		return ref, false
	}
	segLimit := int64(maxLiveSequence)
	if ref.vod {
		segLimit = int64(l.TitleSegments)
	}
	if ref.seg, ok = canonicalBelow(num, segLimit); !ok {
		return ref, false
	}
	ref.kind = kindSegment
	return ref, true
}

// path renders ref back, the inverse of parsePath.
func (ref liveRef) path() string {
	switch {
	case ref.kind == kindMaster && ref.vod:
		return VODMasterPath(ref.id)
	case ref.kind == kindMaster:
		return LiveMasterPath(ref.id)
	case ref.kind == kindManifest && ref.vod:
		return VODMediaPath(ref.id, ref.r)
	case ref.kind == kindManifest:
		return LiveMediaPath(ref.id, ref.r)
	case ref.vod:
		return VODSegmentPath(ref.id, ref.r, int(ref.seg))
	}
	return LiveSegmentPath(ref.id, ref.r, ref.seg)
}

// canonicalBelow parses s as a decimal number in [0, limit) written with no
// sign and no leading zero, so that every object has exactly one path: a
// proxy's cache key and the origin's counters then agree.
func canonicalBelow(s string, limit int64) (int64, bool) {
	if s == "" || len(s) > 19 || (len(s) > 1 && s[0] == '0') {
		return 0, false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
	}
	v, err := strconv.ParseInt(s, 10, 64)
	return v, err == nil && v < limit
}

// liveObjects is what the live and VOD namespace precomputes.
type liveObjects struct {
	cfg Live
	// master is every live channel's and VOD title's master playlist, and
	// vodMedia every VOD rendition's media playlist: their URIs are
	// relative, so one body serves them all.
	master, vodMedia object
	sizes            []int64 // segment size per rendition
	extinf           string
}

func newLiveObjects(l Live) liveObjects {
	lo := liveObjects{cfg: l, extinf: extinf(l.TargetDuration)}
	lo.master = playlistObject(kindMaster, "lm", ladderPlaylist(l.Ladder))
	lo.vodMedia = playlistObject(kindManifest, "vp", vodPlaylist(l.TargetDuration, l.TitleSegments))
	for r := range l.Ladder {
		lo.sizes = append(lo.sizes, l.SegmentSize(r))
	}
	return lo
}

// liveWindow is a live media playlist and the edge it was built for.
type liveWindow struct {
	edge int64
	obj  object
}

// liveObject resolves a path under /live/ or /vod/; isLive is false for
// any other path. A live segment past the edge is not there yet.
func (o *Origin) liveObject(path string) (obj object, ok, isLive bool) {
	if !strings.HasPrefix(path, "/live/") && !strings.HasPrefix(path, "/vod/") {
		return object{}, false, false
	}
	lo := &o.live
	ref, ok := lo.cfg.parsePath(path)
	if !ok {
		return object{}, false, true
	}
	switch ref.kind {
	case kindMaster:
		return lo.master, true, true
	case kindManifest:
		if ref.vod {
			return lo.vodMedia, true, true
		}
		// Built by serveObject from the reading it stamps.
		return object{kind: kindManifest, liveMedia: true}, true, true
	}
	td := lo.cfg.TargetDuration
	var key int64
	var tag string
	var mod time.Time
	if ref.vod {
		key = VODSegmentKey(ref.id, ref.r, int(ref.seg))
		tag = "v"
	} else {
		if ref.seg > LiveEdge(o.now(), td) {
			return object{}, false, true
		}
		key = LiveSegmentKey(ref.id, ref.r, ref.seg)
		tag = "l"
		// Its publication, the same in every origin process, like its bytes.
		mod = LivePublished(ref.seg, td).Truncate(time.Second)
	}
	size := lo.sizes[ref.r]
	crc := fmt.Sprintf("%08x", o.segmentCRC(key, 0, size))
	etag := `"` + tag + strconv.Itoa(ref.id) + "." + strconv.Itoa(ref.r) + "." + strconv.FormatInt(ref.seg, 10) + "-" + crc + `"`
	return object{kind: kindSegment, n: key, size: size, crc: crc, etag: etag, modTime: mod}, true, true
}

// liveMediaAt is the live media playlist at now. Every channel and rendition
// shares it (its URIs are relative), and it changes once per segment, so the
// last one built is kept.
func (o *Origin) liveMediaAt(now time.Time) *liveWindow {
	lo := &o.live
	edge := LiveEdge(now, lo.cfg.TargetDuration)
	if w := o.liveWindow.Load(); w != nil && w.edge == edge {
		return w
	}
	w := &liveWindow{edge: edge, obj: playlistObject(kindManifest, "lp"+strconv.FormatInt(edge, 10), lo.livePlaylist(edge))}
	w.obj.modTime = LivePublished(edge, lo.cfg.TargetDuration).Truncate(time.Second)
	o.liveWindow.Store(w) // racing builders store equal playlists or a newer one: either will do
	return w
}

// The playlists of the live and VOD namespace.

// resolutions are plausible picture sizes for the ladder's steps; steps past
// the last repeat it.
var resolutions = []string{"416x234", "640x360", "1280x720", "1920x1080"}

func ladderPlaylist(ladder []int64) []byte {
	b := []byte("#EXTM3U\n#EXT-X-VERSION:3\n")
	for r, bps := range ladder {
		res := resolutions[min(r, len(resolutions)-1)]
		b = fmt.Appendf(b, "#EXT-X-STREAM-INF:BANDWIDTH=%d,RESOLUTION=%s\n%d/index.m3u8\n", bps, res, r)
	}
	return b
}

func extinf(td time.Duration) string { return strconv.FormatFloat(td.Seconds(), 'f', 3, 64) }

// pdtFormat is RFC 3339 with milliseconds, as EXT-X-PROGRAM-DATE-TIME takes it.
const pdtFormat = "2006-01-02T15:04:05.000Z07:00"

// livePlaylist lists segments max(0, edge-Window+1) to edge, none while
// edge is negative (a clock before the epoch).
func (lo *liveObjects) livePlaylist(edge int64) []byte {
	td := lo.cfg.TargetDuration
	first := max(0, edge-int64(lo.cfg.Window)+1)
	b := make([]byte, 0, 96+lo.cfg.Window*80)
	b = fmt.Appendf(b, "#EXTM3U\n#EXT-X-VERSION:3\n#EXT-X-TARGETDURATION:%d\n#EXT-X-MEDIA-SEQUENCE:%d\n", targetDuration(td), first)
	for n := first; n <= edge; n++ {
		b = append(b, "#EXT-X-PROGRAM-DATE-TIME:"...)
		b = time.Unix(0, n*int64(td)).UTC().AppendFormat(b, pdtFormat)
		b = append(b, "\n#EXTINF:"...)
		b = append(b, lo.extinf...)
		b = append(b, ",\n"...)
		b = strconv.AppendInt(b, n, 10)
		b = append(b, ".ts\n"...)
	}
	return b
}

func vodHeader(td time.Duration) string {
	return fmt.Sprintf("#EXTM3U\n#EXT-X-VERSION:3\n#EXT-X-TARGETDURATION:%d\n#EXT-X-PLAYLIST-TYPE:VOD\n#EXT-X-MEDIA-SEQUENCE:0\n", targetDuration(td))
}

const vodEnd = "#EXT-X-ENDLIST\n"

func vodPlaylist(td time.Duration, segments int) []byte {
	inf := extinf(td)
	b := make([]byte, 0, vodMediaSize(td, segments))
	b = append(b, vodHeader(td)...)
	for k := range segments {
		b = append(b, "#EXTINF:"...)
		b = append(b, inf...)
		b = append(b, ",\n"...)
		b = strconv.AppendInt(b, int64(k), 10)
		b = append(b, ".ts\n"...)
	}
	return append(b, vodEnd...)
}

// vodMediaSize is len(vodPlaylist(td, segments)), without building it.
func vodMediaSize(td time.Duration, segments int) int {
	entry := len("#EXTINF:") + len(extinf(td)) + len(",\n") + len(".ts\n")
	size := len(vodHeader(td)) + segments*entry + len(vodEnd)
	// Plus the digits of 0 … segments-1, one band of equal length at a time.
	for d, lo, hi := 1, 0, 10; lo < segments; d, lo, hi = d+1, hi, hi*10 {
		size += d * (min(segments, hi) - lo)
	}
	return size
}
