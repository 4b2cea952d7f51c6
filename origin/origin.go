// Package origin is hlsbench's synthetic HLS origin: a master playlist, a
// media playlist of an exact size and segments of an exact size whose bytes
// are a deterministic function of a seed and the segment number, so any
// answer, whole or ranged, can be checked by whoever receives it.
//
// Beside that one stream it serves a live-audience namespace (see Live):
// live channels whose media playlists move with the wall clock, and VOD
// titles, each with an ABR ladder of renditions, and a low-latency namespace
// (see LL): live channels cut into parts, with preload hints and blocking
// playlist reloads, whose answers say when their part became ready
// (PartReadyHeader).
//
// Every object answer carries the origin's evidence in headers a proxy passes
// through: the checksum of the whole object (ChecksumHeader), when
// this copy was generated (GeneratedHeader) and how many copies of that
// request URI were generated so far (VersionHeader). Date will not do:
// proxies rewrite it.
//
// An Origin is an http.Handler for the data and another for its control API
// (failure modes, counters). Server runs both on their own listeners, so the
// control API keeps answering while the data listener refuses connections,
// and Client drives that API from another process.
package origin

import (
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Defaults for the zero fields of Config. The first-byte delay and the
// transfer rate make a miss cost what it costs at a real origin: 4 MiB at
// 25 MiB/s is 160 ms of transfer after 50 ms of waiting.
const (
	DefaultManifestSize    = 2048
	DefaultSegmentSize     = 4 << 20
	DefaultSegmentDuration = 4 * time.Second
	DefaultFirstByteDelay  = 50 * time.Millisecond
	DefaultTransferRate    = 25 << 20 // bytes per second

	DefaultMasterCacheControl   = "public, max-age=60"
	DefaultManifestCacheControl = "public, max-age=2"
	DefaultSegmentCacheControl  = "public, max-age=3600"

	// MaxManifestSize bounds the media playlist, which is held in memory.
	MaxManifestSize = 16 << 20
)

// NoDelay and Unlimited switch the first-byte delay and the transfer rate
// off. Zero cannot, as zero takes the default (like net.Dialer.KeepAlive, any
// negative value means off).
const (
	NoDelay   time.Duration = -1
	Unlimited int64         = -1
)

// Headers of every object answer.
const (
	// GeneratedHeader is when this copy was generated (the answer started),
	// in Unix nanoseconds.
	GeneratedHeader = "X-Origin-Generated"
	// VersionHeader counts the copies generated for one request URI: 1 for
	// the first, then 2, 3… It keeps counting across ResetStats.
	VersionHeader = "X-Origin-Version"
	// ChecksumHeader is the CRC-32C (Castagnoli) of the whole object, as
	// eight lowercase hex digits, on every answer (a Range too): a proxy
	// passes it through and a client checks every full body against it.
	ChecksumHeader = "X-Hlsbench-Crc32c"
)

// Paths the origin answers on its data listener.
const (
	MasterPath   = "/stream/master.m3u8"
	ManifestPath = "/stream/index.m3u8"
	HealthPath   = "/health"
	segmentStem  = "/stream/segment-"
)

// SegmentPath is the path of segment n, as the media playlist lists it.
func SegmentPath(n int64) string { return segmentStem + strconv.FormatInt(n, 10) + ".ts" }

// Config shapes an Origin. Zero fields take the defaults above.
type Config struct {
	// ManifestSize is the exact size of the media playlist in bytes.
	ManifestSize int
	// SegmentSize is the exact size of every segment in bytes.
	SegmentSize int64
	// SegmentDuration is the EXTINF of every segment.
	SegmentDuration time.Duration
	// FirstByteDelay is slept before the status line of every object
	// answer (not health). Negative (NoDelay): none.
	FirstByteDelay time.Duration
	// TransferRate paces the body of every answer, in bytes per second.
	// Negative (Unlimited): as fast as the connection takes it.
	TransferRate int64
	// CacheControl is sent per object class.
	CacheControl CacheControl
	// Seed chooses the segment bytes (see SegmentBytes).
	Seed uint64
	// Live shapes the live channels and VOD titles served beside the
	// stream.
	Live Live
	// LL shapes the low-latency live channels (see LL).
	LL LL
}

// CacheControl holds the Cache-Control value of each object class.
type CacheControl struct {
	Master, Manifest, Segment string
}

// ConfigError names the Config field at fault.
type ConfigError struct {
	Field string
	Msg   string
}

func (e *ConfigError) Error() string { return "origin: " + e.Field + ": " + e.Msg }

func cfgErr(field, format string, args ...any) error {
	return &ConfigError{Field: field, Msg: fmt.Sprintf(format, args...)}
}

// withDefaults fills zero fields and checks the rest.
func (c Config) withDefaults() (Config, error) {
	if c.SegmentDuration == 0 {
		c.SegmentDuration = DefaultSegmentDuration
	}
	if c.SegmentDuration < time.Millisecond {
		return c, cfgErr("SegmentDuration", "%v: want at least 1ms", c.SegmentDuration)
	}
	if c.ManifestSize == 0 {
		c.ManifestSize = DefaultManifestSize
	}
	if lo := minMediaSize(c.SegmentDuration); c.ManifestSize < lo || c.ManifestSize > MaxManifestSize {
		return c, cfgErr("ManifestSize", "%d: want %d (a playlist of one segment) to %d bytes", c.ManifestSize, lo, MaxManifestSize)
	}
	if c.SegmentSize == 0 {
		c.SegmentSize = DefaultSegmentSize
	}
	if c.SegmentSize < 0 {
		return c, cfgErr("SegmentSize", "%d: want a positive size in bytes", c.SegmentSize)
	}
	switch {
	case c.FirstByteDelay == 0:
		c.FirstByteDelay = DefaultFirstByteDelay
	case c.FirstByteDelay < 0:
		c.FirstByteDelay = NoDelay
	}
	switch {
	case c.TransferRate == 0:
		c.TransferRate = DefaultTransferRate
	case c.TransferRate < 0:
		c.TransferRate = Unlimited
	}
	for _, f := range []struct {
		name string
		v    *string
		def  string
	}{
		{"CacheControl.Master", &c.CacheControl.Master, DefaultMasterCacheControl},
		{"CacheControl.Manifest", &c.CacheControl.Manifest, DefaultManifestCacheControl},
		{"CacheControl.Segment", &c.CacheControl.Segment, DefaultSegmentCacheControl},
	} {
		if *f.v == "" {
			*f.v = f.def
		}
		if strings.ContainsFunc(*f.v, func(r rune) bool { return r < ' ' && r != '\t' || r == 0x7f }) {
			return c, cfgErr(f.name, "%q: control characters are not allowed in a header value", *f.v)
		}
	}
	// A copy, so the caller's slice cannot change the origin's ladder.
	c.Live.Ladder = slices.Clone(c.Live.Ladder)
	c.Live = c.Live.WithDefaults()
	if err := c.Live.validate(); err != nil {
		return c, err
	}
	c.LL = c.LL.WithDefaults()
	if err := c.LL.validate(); err != nil {
		return c, err
	}
	return c, nil
}

// Mode is the origin's health as its clients see it.
type Mode int

// Modes. Refuse and Drop act on connections, so they need a Server; a bare
// Origin that gets a request in either aborts the answer.
const (
	Healthy Mode = iota
	Fail5xx      // objects and health answer 503
	Refuse       // the data listener is closed: connections are refused
	Drop         // connections are accepted and closed at once
)

var modeNames = [...]string{"healthy", "5xx", "refuse", "drop"}

func (m Mode) String() string {
	if m >= 0 && int(m) < len(modeNames) {
		return modeNames[m]
	}
	return "Mode(" + strconv.Itoa(int(m)) + ")"
}

// ParseMode is the inverse of Mode.String.
func ParseMode(s string) (Mode, error) {
	for i, n := range modeNames {
		if s == n {
			return Mode(i), nil
		}
	}
	return 0, fmt.Errorf("mode %q: want one of %s", s, strings.Join(modeNames[:], ", "))
}

// MarshalText makes a Mode its name in JSON.
func (m Mode) MarshalText() ([]byte, error) {
	if m < 0 || int(m) >= len(modeNames) {
		return nil, fmt.Errorf("origin: unknown %v", m)
	}
	return []byte(m.String()), nil
}

// UnmarshalText parses a Mode's name.
func (m *Mode) UnmarshalText(b []byte) error {
	v, err := ParseMode(string(b))
	if err != nil {
		return err
	}
	*m = v
	return nil
}

// Origin is the synthetic HLS origin. Its methods are safe for concurrent use.
type Origin struct {
	cfg     Config
	pat     *pattern
	modTime time.Time // start, to the second: Last-Modified
	lastMod string
	master  object
	media   object
	control http.Handler
	// now is the clock of every answer: its stamp, its pacing and the live
	// window all come from one reading. Tests move it (and then send
	// unpaced, as pacing waits on the real clock).
	now func() time.Time

	live       liveObjects
	liveWindow atomic.Pointer[liveWindow] // the last live media playlist built

	ll         llObjects
	llPlaylist atomic.Pointer[llPlaylist] // the last low-latency playlist built
	// holdSleep waits d on the real clock while an LL request is held (see
	// hold); tests replace it to move their clock instead.
	holdSleep func(ctx context.Context, d time.Duration) bool

	crcMu sync.Mutex
	crcs  map[crcKey]uint32

	mode     atomic.Int32
	modeMu   sync.Mutex                 // serialises mode changes and their watchers
	changed  atomic.Pointer[modeChange] // the last change, for Stats
	watchers map[int]func(Mode) error
	nextID   int

	stats statsBook
}

// maxCachedCRCs bounds the cache of segment checksums (20 bytes each).
const maxCachedCRCs = 1 << 16

// crcKey is a byte range of a content number: live and VOD segments have a
// size per rendition, and a low-latency part is a range of its segment.
type crcKey struct{ n, off, size int64 }

// New returns an Origin; zero fields of cfg take defaults, and a bad field is
// a *ConfigError naming it.
func New(cfg Config) (*Origin, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	now := time.Now().Truncate(time.Second)
	o := &Origin{
		cfg:      cfg,
		pat:      newPattern(cfg.Seed),
		modTime:  now,
		lastMod:  now.UTC().Format(http.TimeFormat),
		now:      time.Now,
		crcs:     make(map[crcKey]uint32),
		watchers: make(map[int]func(Mode) error),
	}
	o.stats.objects = make(map[string]*objectEntry)
	o.changed.Store(&modeChange{mode: Healthy, at: o.now().UnixNano()})
	o.master = playlistObject(kindMaster, "m", masterPlaylist(cfg.SegmentSize, cfg.SegmentDuration))
	o.media = playlistObject(kindManifest, "p", mediaPlaylist(cfg.ManifestSize, cfg.SegmentDuration))
	o.live = newLiveObjects(cfg.Live)
	o.ll = newLLObjects(cfg.LL)
	o.holdSleep = func(ctx context.Context, d time.Duration) bool {
		var t *time.Timer
		return sleep(ctx, &t, d)
	}
	o.control = o.newControl()
	return o, nil
}

// Config is the configuration in effect, defaults filled in.
func (o *Origin) Config() Config {
	c := o.cfg
	c.Live.Ladder = slices.Clone(c.Live.Ladder) // the origin's own stays unchanged
	return c
}

// Mode is the current failure mode.
func (o *Origin) Mode() Mode { return Mode(o.mode.Load()) }

// SetMode switches the failure mode (an unknown one is ignored). With a Server, Refuse closes the data
// listener and its connections, Drop closes the connections and every new
// one, and any other mode listens again on the same address; should that
// fail, the Server keeps trying in the background and the control API's
// POST /mode reports the failure.
func (o *Origin) SetMode(m Mode) { _ = o.setMode(m) }

func (o *Origin) setMode(m Mode) error {
	if m < 0 || int(m) >= len(modeNames) {
		return fmt.Errorf("origin: unknown %v", m)
	}
	o.modeMu.Lock()
	defer o.modeMu.Unlock()
	if o.Mode() != m {
		// Taken before the store, under the lock: every answer in m comes
		// after it, and the watchers (a Server cutting connections, up to
		// cutWait) may take long after it, so SetMode's return is no
		// measure of when the origin started failing.
		o.changed.Store(&modeChange{mode: m, at: o.now().UnixNano()})
		o.mode.Store(int32(m))
	}
	var errs []error
	for _, w := range o.watchers {
		errs = append(errs, w(m))
	}
	return errors.Join(errs...)
}

// modeChange is a mode and the instant (Unix ns) the origin entered it.
type modeChange struct {
	mode Mode
	at   int64
}

// watch calls fn with the current mode and then with every change, until
// the returned function is called. fn runs with mode changes held off.
func (o *Origin) watch(fn func(Mode) error) (unwatch func(), err error) {
	o.modeMu.Lock()
	defer o.modeMu.Unlock()
	if err := fn(o.Mode()); err != nil {
		return nil, err
	}
	id := o.nextID
	o.nextID++
	o.watchers[id] = fn
	return func() {
		o.modeMu.Lock()
		defer o.modeMu.Unlock()
		delete(o.watchers, id)
	}, nil
}

type objectKind uint8

const (
	kindMaster objectKind = iota
	kindManifest
	kindSegment
)

// object is what one answer is about.
type object struct {
	kind objectKind
	n    int64 // content number: the segment number, or a live or VOD segment's key
	size int64
	crc  string // ChecksumHeader value
	etag string
	body []byte // playlists; segments are generated as they are sent
	// off is where the object starts in content n: 0, but for a
	// low-latency part, a range of its segment.
	off int64
	// modTime is the Last-Modified, to the second; zero: the origin's start.
	modTime time.Time
	// liveMedia marks a live media playlist: serveObject builds body, size,
	// crc, etag and modTime from the answer's clock.
	liveMedia bool
	// cacheControl, if set, replaces the Cache-Control of the kind.
	cacheControl string
	// ll is a low-latency path, answered by serveLL.
	ll *llRef
	// built is the clock reading a low-latency answer was built from, and
	// so the one serveObject stamps; zero: serveObject reads the clock.
	built time.Time
}

func playlistObject(kind objectKind, tag string, body []byte) object {
	crc := fmt.Sprintf("%08x", crc32.Checksum(body, castagnoli))
	return object{kind: kind, size: int64(len(body)), crc: crc, etag: `"` + tag + "-" + crc + `"`, body: body}
}

func (o *Origin) object(path string) (object, bool) {
	switch path {
	case MasterPath:
		return o.master, true
	case ManifestPath:
		return o.media, true
	}
	if obj, ok, isLive := o.liveObject(path); isLive {
		return obj, ok
	}
	if ref, ok, isLL := o.ll.cfg.parsePath(path); isLL {
		return object{kind: ref.kind, ll: &ref}, ok
	}
	n, ok := segmentNumber(path)
	if !ok {
		return object{}, false
	}
	crc := fmt.Sprintf("%08x", o.segmentCRC(n, 0, o.cfg.SegmentSize))
	return object{kind: kindSegment, n: n, size: o.cfg.SegmentSize, crc: crc,
		etag: `"s` + strconv.FormatInt(n, 10) + "-" + crc + `"`}, true
}

// segmentNumber parses /stream/segment-N.ts, N in canonical decimal form.
func segmentNumber(path string) (int64, bool) {
	s, ok := strings.CutPrefix(path, segmentStem)
	if !ok {
		return 0, false
	}
	if s, ok = strings.CutSuffix(s, ".ts"); !ok || s == "" || (len(s) > 1 && s[0] == '0') {
		return 0, false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return n, err == nil
}

func (o *Origin) segmentCRC(n, off, size int64) uint32 {
	k := crcKey{n, off, size}
	o.crcMu.Lock()
	c, ok := o.crcs[k]
	o.crcMu.Unlock()
	if ok {
		return c
	}
	c = o.pat.crc(n, off, size)
	o.crcMu.Lock()
	if len(o.crcs) >= maxCachedCRCs {
		clear(o.crcs)
	}
	o.crcs[k] = c
	o.crcMu.Unlock()
	return c
}

func (o *Origin) contentType(k objectKind) string {
	if k == kindSegment {
		return "video/mp2t"
	}
	return "application/vnd.apple.mpegurl"
}

func (o *Origin) cacheControl(k objectKind) string {
	switch k {
	case kindMaster:
		return o.cfg.CacheControl.Master
	case kindManifest:
		return o.cfg.CacheControl.Manifest
	}
	return o.cfg.CacheControl.Segment
}

// requestKey is the request URI as received (path and query), the key of
// the counters: a benchmark adds a nonce query to make an object cold.
func requestKey(r *http.Request) string {
	if strings.HasPrefix(r.RequestURI, "/") {
		return r.RequestURI
	}
	return r.URL.RequestURI()
}

// ServeHTTP answers the data paths: MasterPath, ManifestPath, SegmentPath(n),
// the live and VOD paths (LiveMasterPath and the rest) and HealthPath;
// anything else is 404. In Refuse or Drop mode it aborts the
// answer (panic(http.ErrAbortHandler)), as the connection would have been.
func (o *Origin) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	obj, ok := o.object(r.URL.Path)
	if !ok {
		w.Header().Set("Cache-Control", "no-store")
		if r.URL.Path == HealthPath {
			o.serveHealth(w, r)
			return
		}
		http.NotFound(w, r)
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	if obj.ll != nil {
		o.countLLRequest(r, obj.ll)
	}
	key := requestKey(r)
	if m := o.Mode(); m == Refuse || m == Drop {
		o.stats.fail(key)
		panic(http.ErrAbortHandler)
	}
	if d := o.cfg.FirstByteDelay; d > 0 {
		var t *time.Timer
		if !sleep(r.Context(), &t, d) {
			return // the client left
		}
	}
	if o.failing(w, key) {
		return
	}
	if obj.ll != nil {
		o.serveLL(w, r, key, *obj.ll)
		return
	}
	o.serveObject(w, r, key, &obj)
}

// failing answers as the failure mode demands, if it is not Healthy.
func (o *Origin) failing(w http.ResponseWriter, key string) bool {
	switch o.Mode() {
	case Fail5xx:
		o.stats.fail(key)
		// An explicit max-age would make a shared cache store the error.
		w.Header().Set("Cache-Control", "no-store")
		http.Error(w, "origin failing (mode 5xx)", http.StatusServiceUnavailable)
		return true
	case Refuse, Drop:
		o.stats.fail(key)
		panic(http.ErrAbortHandler)
	}
	return false
}

func (o *Origin) serveHealth(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	switch o.Mode() {
	case Healthy:
		o.stats.health(true)
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("Content-Length", "2")
		_, _ = w.Write([]byte("ok"))
	case Fail5xx:
		o.stats.health(false)
		http.Error(w, "origin failing (mode 5xx)", http.StatusServiceUnavailable)
	default:
		o.stats.health(false)
		panic(http.ErrAbortHandler)
	}
}

func (o *Origin) serveObject(w http.ResponseWriter, r *http.Request, key string, obj *object) {
	now := obj.built
	if now.IsZero() {
		now = o.now()
	}
	h := w.Header()
	if obj.liveMedia {
		win := o.liveMediaAt(now)
		*obj = win.obj
		h.Set(LiveEdgeHeader, strconv.FormatInt(win.edge, 10))
	}
	h.Set("Content-Type", o.contentType(obj.kind))
	if obj.cacheControl != "" {
		h.Set("Cache-Control", obj.cacheControl)
	} else {
		h.Set("Cache-Control", o.cacheControl(obj.kind))
	}
	h.Set("ETag", obj.etag)
	if obj.modTime.IsZero() {
		h.Set("Last-Modified", o.lastMod) // formatted once
	} else {
		h.Set("Last-Modified", obj.modTime.UTC().Format(http.TimeFormat))
	}
	h.Set("Accept-Ranges", "bytes")
	h.Set(ChecksumHeader, obj.crc)

	if o.notModified(r, obj) {
		o.stamp(h, key, now, 0)
		w.WriteHeader(http.StatusNotModified)
		return
	}
	status, off, n := http.StatusOK, int64(0), obj.size
	if rh := r.Header.Get("Range"); rh != "" && o.ifRange(r, obj) {
		start, end, res := parseRange(rh, obj.size)
		switch res {
		case rangeOne:
			status, off, n = http.StatusPartialContent, start, end-start+1
			h.Set("Content-Range", "bytes "+strconv.FormatInt(start, 10)+"-"+strconv.FormatInt(end, 10)+"/"+strconv.FormatInt(obj.size, 10))
		case rangeUnsatisfiable:
			h.Set("Content-Range", "bytes */"+strconv.FormatInt(obj.size, 10))
			h.Set("Cache-Control", "no-store")
			h.Del("Accept-Ranges")
			http.Error(w, "range not satisfiable", http.StatusRequestedRangeNotSatisfiable)
			return
		}
	}
	h.Set("Content-Length", strconv.FormatInt(n, 10))
	planned := n
	if r.Method == http.MethodHead {
		planned = 0
	}
	start := o.stamp(h, key, now, planned)
	w.WriteHeader(status)
	if r.Method == http.MethodHead {
		return
	}
	rc := http.NewResponseController(w)
	_ = rc.Flush() // the status line leaves now, whatever the body's pace
	if err := o.writeBody(r.Context(), w, rc, start, obj, off, n); err != nil {
		if m := o.Mode(); m == Refuse || m == Drop {
			o.stats.fail(key) // cut short by the failure mode
		}
	}
}

// stamp counts a copy generated at now, of size body bytes to send, and sets
// its evidence headers. now is the reading the answer was built from, so a
// live playlist and its stamp agree.
func (o *Origin) stamp(h http.Header, key string, now time.Time, size int64) time.Time {
	v := o.stats.generated(key, now.UnixNano(), size)
	h.Set(GeneratedHeader, strconv.FormatInt(now.UnixNano(), 10))
	h.Set(VersionHeader, strconv.FormatInt(v, 10))
	return now
}

// modTimeOf is obj's Last-Modified.
func (o *Origin) modTimeOf(obj *object) time.Time {
	if obj.modTime.IsZero() {
		return o.modTime
	}
	return obj.modTime
}

// notModified applies If-None-Match (weak comparison) or, without it,
// If-Modified-Since.
func (o *Origin) notModified(r *http.Request, obj *object) bool {
	if inm := r.Header.Get("If-None-Match"); inm != "" {
		return etagListMatch(inm, obj.etag)
	}
	if ims := r.Header.Get("If-Modified-Since"); ims != "" {
		t, err := http.ParseTime(ims)
		return err == nil && !o.modTimeOf(obj).After(t)
	}
	return false
}

// ifRange reports whether a Range header applies: no If-Range, or one that
// matches the current ETag (strongly) or Last-Modified (exactly).
func (o *Origin) ifRange(r *http.Request, obj *object) bool {
	ir := r.Header.Get("If-Range")
	switch {
	case ir == "":
		return true
	case strings.HasPrefix(ir, `"`):
		return ir == obj.etag
	case strings.HasPrefix(ir, "W/"):
		return false
	}
	t, err := http.ParseTime(ir)
	return err == nil && t.Equal(o.modTimeOf(obj))
}

// writeBody sends n bytes of obj from off, paced so that byte k leaves no
// earlier than start + k/TransferRate. Pacing against the answer's start,
// not chunk by chunk, keeps late wake-ups from adding up.
func (o *Origin) writeBody(ctx context.Context, w http.ResponseWriter, rc *http.ResponseController, start time.Time, obj *object, off, n int64) error {
	rate := o.cfg.TransferRate
	chunk := int64(chunkSize)
	if rate > 0 {
		// About 5 ms of transfer per write, so a proxy sees a steady stream.
		chunk = min(max(rate/200, 4<<10), chunkSize)
	}
	var buf *[chunkSize]byte
	if obj.body == nil {
		buf = getChunk()
		defer putChunk(buf)
	}
	var t *time.Timer
	for sent := int64(0); sent < n; {
		k := min(chunk, n-sent)
		if rate > 0 {
			due := start.Add(time.Duration(float64(sent+k) * float64(time.Second) / float64(rate)))
			if d := time.Until(due); d > 0 && !sleep(ctx, &t, d) {
				return ctx.Err()
			}
		}
		var p []byte
		if obj.body != nil {
			p = obj.body[off+sent : off+sent+k]
		} else {
			p = buf[:k]
			o.pat.fill(obj.n, obj.off+off+sent, p)
		}
		if _, err := w.Write(p); err != nil {
			return err
		}
		if rate > 0 {
			_ = rc.Flush()
		}
		sent += k
	}
	return nil
}

// sleep waits d on a reused timer; false if ctx ended first.
func sleep(ctx context.Context, t **time.Timer, d time.Duration) bool {
	if *t == nil {
		*t = time.NewTimer(d)
	} else {
		(*t).Reset(d)
	}
	select {
	case <-(*t).C:
		return true
	case <-ctx.Done():
		(*t).Stop()
		return false
	}
}
