package builtin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// StatsPath is answered by the cache itself with its Stats as JSON.
const StatsPath = "/_hlsbench/stats"

// Defaults used by DefaultPolicy, and in place of a zero FetchTimeout,
// MaxBytes, ProbeInterval or ProbeTimeout.
const (
	DefaultGrace         = 10 * time.Second
	DefaultProbePath     = "/health"
	DefaultProbeInterval = time.Second
	DefaultProbeTimeout  = time.Second
	DefaultFetchTimeout  = 10 * time.Second
	DefaultMaxBytes      = 256 << 20
)

// defaultRetryGap spaces background fetches of a key when there is no probe
// interval to pace them.
const defaultRetryGap = time.Second

// Policy is how the cache treats objects and the origin. See the package
// documentation for the exact semantics.
type Policy struct {
	// ManifestTTL is the TTL of paths ending in .m3u8; 0 follows the origin's
	// Cache-Control (s-maxage wins over max-age), a positive value overrides it.
	ManifestTTL time.Duration
	// SegmentTTL is the same for paths ending in .ts.
	SegmentTTL time.Duration
	// DefaultTTL is the same for any other path, and the TTL of objects whose
	// origin answer gives no max-age.
	DefaultTTL time.Duration
	// Grace is how long past its TTL an object is served stale.
	Grace time.Duration
	// HealthyGrace caps Grace while the origin is healthy (Varnish's
	// req.grace, engines.Policy's healthy_grace): past it a request waits
	// for a fresh copy. 0 serves nothing stale while the origin is healthy.
	HealthyGrace time.Duration

	// ProbePath is a health path on the origin, e.g. "/health"; "" disables
	// the probe and the origin always counts as healthy.
	ProbePath     string
	ProbeInterval time.Duration // 0: DefaultProbeInterval
	ProbeTimeout  time.Duration // 0: DefaultProbeTimeout

	// FetchTimeout bounds the time to the origin's response headers and each
	// later gap between body reads. 0: DefaultFetchTimeout.
	FetchTimeout time.Duration
	// MaxBytes bounds the body bytes of stored objects (LRU eviction).
	// 0: DefaultMaxBytes.
	MaxBytes int64
	// Coalesce makes concurrent misses for one key share one origin fetch.
	Coalesce bool
}

// DefaultPolicy follows the origin's TTLs, with 10 s of grace (healthy or
// not), a probe of /health every second, coalescing on and a 256 MiB store.
func DefaultPolicy() Policy {
	return Policy{
		Grace:         DefaultGrace,
		HealthyGrace:  DefaultGrace,
		ProbePath:     DefaultProbePath,
		ProbeInterval: DefaultProbeInterval,
		ProbeTimeout:  DefaultProbeTimeout,
		FetchTimeout:  DefaultFetchTimeout,
		MaxBytes:      DefaultMaxBytes,
		Coalesce:      true,
	}
}

// Config is what New needs.
type Config struct {
	// Origin is the origin's base URL, e.g. "http://127.0.0.1:8081": http or
	// https, a host, and no path, query or user info.
	Origin string
	Policy Policy
}

// Stats are the cache's counters since New. Objects and StoredBytes are
// current values; the rest only grow.
type Stats struct {
	Hits              int64 `json:"hits"`               // answers with X-Cache: HIT
	Misses            int64 `json:"misses"`             // answers with X-Cache: MISS (coalesced ones included)
	Stale             int64 `json:"stale"`              // answers with X-Cache: STALE
	OriginFetches     int64 `json:"origin_fetches"`     // object fetches sent to the origin (not probes, not passes)
	OriginErrors      int64 `json:"origin_errors"`      // fetches and passes that failed: transport error, timeout, 5xx, short body
	BackgroundFetches int64 `json:"background_fetches"` // fetches started to revalidate a stale object (part of OriginFetches)
	Coalesced         int64 `json:"coalesced"`          // misses that joined a fetch already running
	BytesFromOrigin   int64 `json:"bytes_from_origin"`  // body bytes read by object fetches
	BytesServed       int64 `json:"bytes_served"`       // body bytes written to GET clients
	Objects           int64 `json:"objects"`            // objects stored now
	StoredBytes       int64 `json:"stored_bytes"`       // body bytes stored now
	Evictions         int64 `json:"evictions"`          // objects evicted by the LRU
	Purges            int64 `json:"purges"`             // PURGE requests that removed an object
	Bans              int64 `json:"bans"`               // BAN requests
	Banned            int64 `json:"banned"`             // objects BAN requests removed
	Passes            int64 `json:"passes"`             // requests of other methods passed to the origin
}

type counters struct {
	hits, misses, stale          atomic.Int64
	originFetches, originErrors  atomic.Int64
	backgroundFetches, coalesced atomic.Int64
	bytesFromOrigin, bytesServed atomic.Int64
	evictions, purges, passes    atomic.Int64
	bans, banned                 atomic.Int64
}

// Cache is the caching reverse proxy. Its methods are safe for concurrent use.
type Cache struct {
	p        Policy
	origin   string // scheme://host, no trailing slash
	gap      time.Duration
	now      func() time.Time
	tr       *http.Transport
	probeTr  *http.Transport
	pass     *httputil.ReverseProxy
	ctx      context.Context
	cancel   context.CancelFunc
	wg       sync.WaitGroup
	healthy  atomic.Bool
	st       counters
	closeOne sync.Once

	mu      sync.Mutex
	closed  bool
	items   map[string]*item
	lru     lruList
	objects int64
	bytes   int64
}

// New validates cfg and returns a cache; it starts the probe when the policy
// has one. Close releases it.
func New(cfg Config) (*Cache, error) {
	u, err := validate(&cfg)
	if err != nil {
		return nil, err
	}
	p := cfg.Policy
	c := &Cache{
		p:      p,
		origin: u.Scheme + "://" + u.Host,
		gap:    p.ProbeInterval,
		now:    time.Now,
		items:  make(map[string]*item),
	}
	if c.gap <= 0 {
		c.gap = defaultRetryGap
	}
	c.lru.init()
	c.healthy.Store(true)
	dialer := &net.Dialer{Timeout: p.FetchTimeout, KeepAlive: 30 * time.Second}
	c.tr = &http.Transport{
		DialContext:           dialer.DialContext,
		MaxIdleConns:          1024,
		MaxIdleConnsPerHost:   1024,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   p.FetchTimeout,
		DisableCompression:    true,
		ExpectContinueTimeout: time.Second,
		ReadBufferSize:        64 << 10,
		WriteBufferSize:       16 << 10,
	}
	// Probes open a new connection each time, so a listener that refuses
	// connections is seen even while pooled connections still work.
	c.probeTr = &http.Transport{
		DialContext:        dialer.DialContext,
		DisableKeepAlives:  true,
		DisableCompression: true,
	}
	c.pass = &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(u)
			pr.SetXForwarded()
		},
		Transport: c.tr,
		ModifyResponse: func(resp *http.Response) error {
			if resp.StatusCode >= 500 {
				c.st.originErrors.Add(1)
			}
			resp.Header["X-Cache"] = missValue
			resp.Header["Age"] = ageValues[0]
			return nil
		},
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			c.st.originErrors.Add(1)
			unavailable(w)
		},
	}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	if p.ProbePath != "" {
		c.wg.Add(1)
		go c.probeLoop()
	}
	return c, nil
}

// validate checks cfg, fills zero values that have defaults, and returns the
// parsed origin. Every problem is reported, each naming its field.
func validate(cfg *Config) (*url.URL, error) {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	u, err := url.Parse(cfg.Origin)
	switch {
	case err != nil:
		bad("builtin cache: Origin %q: %v", cfg.Origin, err)
	case u.Scheme != "http" && u.Scheme != "https", u.Host == "", u.User != nil,
		u.Path != "" && u.Path != "/", u.RawQuery != "", u.Fragment != "", u.Opaque != "":
		bad("builtin cache: Origin %q: want http://host[:port] or https://host[:port]", cfg.Origin)
	}
	p := &cfg.Policy
	for _, d := range []struct {
		name string
		v    time.Duration
	}{
		{"ManifestTTL", p.ManifestTTL}, {"SegmentTTL", p.SegmentTTL}, {"DefaultTTL", p.DefaultTTL},
		{"Grace", p.Grace}, {"HealthyGrace", p.HealthyGrace}, {"ProbeInterval", p.ProbeInterval}, {"ProbeTimeout", p.ProbeTimeout},
		{"FetchTimeout", p.FetchTimeout},
	} {
		if d.v < 0 {
			bad("builtin cache: Policy.%s is %v: want a duration ≥ 0", d.name, d.v)
		}
	}
	if p.MaxBytes < 0 {
		bad("builtin cache: Policy.MaxBytes is %d: want a byte count ≥ 0 (0: %d)", p.MaxBytes, DefaultMaxBytes)
	}
	if p.ProbePath != "" && p.ProbePath[0] != '/' {
		bad("builtin cache: Policy.ProbePath %q: want an absolute path such as %q, or empty for no probe", p.ProbePath, DefaultProbePath)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	if p.FetchTimeout == 0 {
		p.FetchTimeout = DefaultFetchTimeout
	}
	if p.MaxBytes == 0 {
		p.MaxBytes = DefaultMaxBytes
	}
	if p.ProbePath != "" && p.ProbeInterval == 0 {
		p.ProbeInterval = DefaultProbeInterval
	}
	if p.ProbePath != "" && p.ProbeTimeout == 0 {
		p.ProbeTimeout = DefaultProbeTimeout
	}
	return u, nil
}

// Prebuilt header values; the hit path puts them in responses as they are.
var (
	hitValue   = []string{"HIT"}
	missValue  = []string{"MISS"}
	staleValue = []string{"STALE"}
)

// ServeHTTP answers r from the store or the origin.
func (c *Cache) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == StatsPath {
		c.serveStats(w)
		return
	}
	switch r.Method {
	case http.MethodGet, http.MethodHead:
	case "PURGE":
		c.purge(w, r)
		return
	case "BAN":
		c.ban(w, r)
		return
	default:
		c.st.passes.Add(1)
		c.pass.ServeHTTP(w, r)
		return
	}
	key := r.RequestURI
	if key == "" || key[0] != '/' {
		// Absolute-form or a request built in-process: normalise to origin-form.
		key = r.URL.RequestURI()
	}
	now := c.now()

	c.mu.Lock()
	it := c.items[key]
	if it != nil && it.cur != nil {
		o := it.cur
		age := now.Sub(o.fetched)
		if age < o.ttl {
			c.lru.moveToFront(it)
			c.mu.Unlock()
			c.st.hits.Add(1)
			c.writeObject(w, r, o, hitValue, age)
			return
		}
		if healthy := c.healthy.Load(); age < o.ttl+c.grace(healthy) || !healthy {
			c.revalidateLocked(it, now)
			c.lru.moveToFront(it)
			c.mu.Unlock()
			c.st.stale.Add(1)
			c.writeObject(w, r, o, staleValue, age)
			return
		}
	}
	var f *fill
	if c.p.Coalesce && it != nil && it.fill != nil {
		f = it.fill
		c.st.coalesced.Add(1)
	} else {
		f = c.startFillLocked(key, it, false, now)
	}
	c.mu.Unlock()
	c.st.misses.Add(1)
	if f == nil {
		unavailable(w) // closed
		return
	}
	c.serveFill(w, r, f)
}

// Stats returns the counters now.
func (c *Cache) Stats() Stats {
	c.mu.Lock()
	objects, bytes := c.objects, c.bytes
	c.mu.Unlock()
	return Stats{
		Hits:              c.st.hits.Load(),
		Misses:            c.st.misses.Load(),
		Stale:             c.st.stale.Load(),
		OriginFetches:     c.st.originFetches.Load(),
		OriginErrors:      c.st.originErrors.Load(),
		BackgroundFetches: c.st.backgroundFetches.Load(),
		Coalesced:         c.st.coalesced.Load(),
		BytesFromOrigin:   c.st.bytesFromOrigin.Load(),
		BytesServed:       c.st.bytesServed.Load(),
		Objects:           objects,
		StoredBytes:       bytes,
		Evictions:         c.st.evictions.Load(),
		Purges:            c.st.purges.Load(),
		Bans:              c.st.bans.Load(),
		Banned:            c.st.banned.Load(),
		Passes:            c.st.passes.Load(),
	}
}

// Close stops the probe and every fetch in flight, and waits for them. It is
// idempotent. Requests after Close that need the origin get 503.
func (c *Cache) Close() error {
	c.closeOne.Do(func() {
		c.mu.Lock()
		c.closed = true
		c.mu.Unlock()
		c.cancel()
		c.wg.Wait()
		c.tr.CloseIdleConnections()
		c.probeTr.CloseIdleConnections()
	})
	return nil
}

func (c *Cache) serveStats(w http.ResponseWriter) {
	b, _ := json.Marshal(c.Stats())
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	w.Write(append(b, '\n'))
}

func (c *Cache) purge(w http.ResponseWriter, r *http.Request) {
	key := r.RequestURI
	if key == "" || key[0] != '/' {
		key = r.URL.RequestURI()
	}
	c.mu.Lock()
	found := c.purgeLocked(key)
	c.mu.Unlock()
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	if !found {
		w.WriteHeader(http.StatusNotFound)
		w.Write([]byte("not in cache\n"))
		return
	}
	c.st.purges.Add(1)
	w.Write([]byte("purged\n"))
}

// BannedHeader is the header in which a BAN's answer says how many
// objects it removed.
const BannedHeader = "X-Hlsbench-Banned"

// ban removes every object whose key starts with the request URI (BAN
// /stream/ invalidates a whole stream), at once: fetches in flight for
// them are not stored. It answers 200 with the count in BannedHeader.
func (c *Cache) ban(w http.ResponseWriter, r *http.Request) {
	prefix := r.RequestURI
	if prefix == "" || prefix[0] != '/' {
		prefix = r.URL.RequestURI()
	}
	n := 0
	c.mu.Lock()
	for key := range c.items {
		if strings.HasPrefix(key, prefix) && c.purgeLocked(key) {
			n++
		}
	}
	c.mu.Unlock()
	c.st.bans.Add(1)
	c.st.banned.Add(int64(n))
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set(BannedHeader, strconv.Itoa(n))
	fmt.Fprintf(w, "banned %d objects\n", n)
}

// writeObject answers from a complete stored object.
func (c *Cache) writeObject(w http.ResponseWriter, r *http.Request, o *object, xcache []string, age time.Duration) {
	if rv := r.Header["Range"]; len(rv) == 1 && o.status == http.StatusOK {
		size := int64(len(o.body))
		start, end, res := parseRange(rv[0], size)
		if res != rangeIgnore {
			h := w.Header()
			status := rangeHeaders(h, o.header, res, start, end, size)
			h["X-Cache"] = xcache
			h["Age"] = ageValue(age)
			w.WriteHeader(status)
			if res == rangeOK && r.Method != http.MethodHead {
				n, _ := w.Write(o.body[start:end])
				c.st.bytesServed.Add(int64(n))
			}
			return
		}
	}
	h := w.Header()
	for k, v := range o.header {
		h[k] = v
	}
	h["X-Cache"] = xcache
	h["Age"] = ageValue(age)
	w.WriteHeader(o.status)
	if r.Method == http.MethodHead {
		return
	}
	n, _ := w.Write(o.body)
	c.st.bytesServed.Add(int64(n))
}

// unavailable is the answer when the origin could not be reached.
func unavailable(w http.ResponseWriter) {
	h := w.Header()
	h["Content-Type"] = []string{"text/plain; charset=utf-8"}
	h["X-Cache"] = missValue
	h["Age"] = ageValues[0]
	w.WriteHeader(http.StatusServiceUnavailable)
	w.Write([]byte("origin unavailable\n"))
}

var _ http.Handler = (*Cache)(nil)

// grace is how long past its TTL an object is served stale: Grace, capped
// at HealthyGrace while the origin is healthy.
func (c *Cache) grace(healthy bool) time.Duration {
	if healthy {
		return min(c.p.Grace, c.p.HealthyGrace)
	}
	return c.p.Grace
}
