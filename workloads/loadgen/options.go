package loadgen

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/url"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Defaults for Options and Pass.
const (
	DefaultConnections = 50
	DefaultTimeout     = 30 * time.Second
	DefaultDuration    = 10 * time.Second
	// MaxLatency is the largest latency the histograms hold; larger values
	// are recorded at this value.
	MaxLatency = 60 * time.Second
	// LagTolerance and LagToleranceFloor bound how far the generator's own
	// lateness may move a published figure: a pass is invalid when a
	// quantile counted from the intended send time exceeds the same
	// quantile counted from the dispatch instant by more than
	// max(LagTolerance × the figure, LagToleranceFloor). Lateness that moves
	// nothing (a few hundred microseconds on a 200 ms answer) is harmless;
	// 50 µs on a 100 µs hit is not.
	LagTolerance      = 0.05
	LagToleranceFloor = 50 * time.Microsecond
	// QueuePerConnection and QueueMin size each event loop's queue of
	// requests waiting for a busy pool: QueuePerConnection entries per
	// connection of the loop, at least QueueMin (16 bytes an entry). A due
	// request that finds it full is dropped, counted and makes the pass
	// invalid, so an overload cannot grow memory, or the time the pass
	// needs to drain its backlog after its duration, without bound.
	QueuePerConnection = 64
	QueueMin           = 65536
	// CPULimit is the share of one core a generator thread may use before
	// the run is invalid: a saturated generator measures itself.
	CPULimit = 0.95
	// PoolLimitedShare is the share of requests that must have waited for a
	// connection before a run is reported as pool_limited.
	PoolLimitedShare = 0.001
)

// Options configure a Generator: where it connects and how. What is sent and
// when is a Pass.
type Options struct {
	// URL is the target: http:// or https://, host and port. Its path is the
	// default request path of a Pass.
	URL string
	// Connections is the size of the keep-alive pool, opened before any pass.
	Connections int
	// Timeout bounds each request from its intended send time to its last
	// byte; a request still unanswered then is a timeout error.
	Timeout time.Duration
	// Header is sent with every request, in order. Host may be overridden.
	Header [][2]string
	// Method is GET unless set (GET and HEAD are supported).
	Method string
	// TLS: CAFile adds a PEM bundle to the system roots; Insecure skips
	// verification (test certificates only). TLSConfig, when set, wins.
	CAFile    string
	Insecure  bool
	TLSConfig *tls.Config
	// Shards is the number of event-loop threads, each with its own
	// histograms and a share of the connections and of the schedule.
	// Zero means one loop per CPU of CPUs when CPUs is set, else one fewer
	// than the CPUs this process may use; at least one, at most Connections.
	// One loop per core keeps pace with any server on this machine, and the
	// spare core is the server's.
	Shards int
	// CPUs, when set, pins event loop i's thread to CPUs[i], so the
	// generator never shares a core with what it measures. Shards may not
	// exceed len(CPUs): two loops on one core would measure each other.
	// A pinned loop wakes before each slot of a rate pass and polls until
	// it is due (Result.SpinSeconds), since the core is its own.
	CPUs []int
	// ChecksumHeader, when set, names a response header in which the server
	// declares the CRC-32C (Castagnoli) of the whole body as 8 hex digits;
	// every full 200 body that carries it is checked against it (a
	// mismatch is a checksum error). hlsbench's origin declares it as
	// origin.ChecksumHeader.
	ChecksumHeader string
	// BodyCheck, when set, makes one BodyCheck per connection.
	BodyCheck func() BodyCheck
	// OnRecord, when set, is called for every request's outcome on the
	// thread of the shard that ran it (shard is its index, so callers can
	// keep per-shard state without locks). check is the connection's
	// BodyCheck, nil when there is none or the request never reached a
	// connection (it timed out in the queue, could not connect, was failed
	// at once during a connection backoff, or was dropped). It must not
	// keep rec.
	OnRecord func(shard int, rec *Record, check BodyCheck)
	// HDRLog, when set, receives an HdrHistogram V2 interval log (one
	// interval a second, tagged ttfb and total, corrected, in nanoseconds).
	HDRLog io.Writer
	// KeepGC leaves the garbage collector as it is during passes. By
	// default a pass collects first and holds the collector off while it
	// runs (holdGC); set KeepGC when what is measured runs in this process
	// (an in-process engine or origin): its collections are its own cost.
	KeepGC bool
}

// Arrival is how intended send times are spread.
type Arrival int

const (
	// Uniform spaces sends exactly 1/rate apart.
	Uniform Arrival = iota
	// Poisson draws exponential gaps with mean 1/rate.
	Poisson
)

// ParseArrival reads "uniform" or "poisson".
func ParseArrival(s string) (Arrival, error) {
	switch strings.ToLower(s) {
	case "", "uniform", "constant":
		return Uniform, nil
	case "poisson":
		return Poisson, nil
	}
	return 0, fmt.Errorf("arrival %q: want uniform or poisson", s)
}

func (a Arrival) String() string {
	if a == Poisson {
		return "poisson"
	}
	return "uniform"
}

// Pass is one measured stretch of load.
type Pass struct {
	// Path overrides the URL's path and query for this pass ("/x?y").
	Path string
	// Paths, when set instead of Path, are the objects of the pass: each
	// request asks for one of them, drawn at its slot with Zipf popularity
	// (the i-th path's weight is 1/(i+1)^Zipf; Zipf 0 draws uniformly).
	// Record.Object says which. The draws are repeatable with Seed.
	Paths []string
	Zipf  float64
	// Header is added to the Options' headers for this pass (Range, say).
	Header [][2]string
	// Rate is requests per second; 0 runs closed loop, every connection
	// sending its next request as soon as the last is answered.
	Rate     float64
	Arrival  Arrival
	Duration time.Duration
	// Requests, when above zero, stops the pass after that many requests
	// (with Duration still the upper bound when set).
	Requests int64
	// Burst, when above zero, releases that many requests at one instant,
	// one per connection (it must not exceed the pool), and waits for them.
	// Rate, Duration and Requests are ignored.
	Burst int
	// Seed makes Poisson arrivals repeatable; 0 picks one.
	Seed uint64
	// Plan, when set, decides every request of the pass: what is sent and
	// when comes from the caller (a player's clock), not from a rate. It
	// is called once per event loop as the pass starts, with the loop's
	// index, and that loop sends what its Plan says (see Plan). Paths are
	// the objects its requests name; Duration bounds the pass; Rate, Zipf,
	// Requests and Burst must be zero.
	Plan func(shard int) Plan
	// Share, when Of is above one, makes this generator one of Of that
	// carry the pass together (on other hosts, say): the pass's schedule
	// is the same one sequence of slots, and this generator sends the
	// slots k with k mod Of = Index. Rate, Requests and Burst are the
	// whole pass's; the result's Target is this generator's part. The
	// merged arrivals of the Of generators are exactly the schedule of one
	// generator (a Poisson schedule needs the same Seed on each).
	Share Share
	// StartAt, when set, is the instant the schedule starts (its slot 0),
	// on this host's clock: generators sharing a pass start together. It
	// may be at most MaxStartAhead ahead; a pass whose instant has passed
	// when it is set up fails.
	StartAt time.Time

	// lateBy makes every dispatch this late: tests use it to make the
	// generator late on purpose.
	lateBy time.Duration
}

// Share is one generator's part of a pass carried by several: see
// Pass.Share. The zero value is the whole pass.
type Share struct {
	Index int `json:"index"`
	Of    int `json:"of"`
}

// MaxStartAhead bounds how far ahead Pass.StartAt may be.
const MaxStartAhead = time.Minute

// A Plan is one event loop's share of a planned pass: the intended send
// time of each request is the caller's, and a request may be planned from
// an earlier answer (a player asks for a segment once a playlist lists it).
// A request is counted from its intended time whatever the answers before
// it did, as in a rate pass: a plan that schedules from an answer's arrival
// (Answered's at) counts from the moment the caller would have asked. Its
// methods run on the loop's own thread, one at a time: a Plan needs no lock.
type Plan interface {
	// Next is the earliest planned request not yet sent; ok is false when
	// nothing is planned (an answer may plan more).
	Next() (p Planned, ok bool)
	// Pop takes the request Next returned; the loop sends it.
	Pop()
	// Answered is told every request's outcome as it is known, before
	// Options.OnRecord; at, from the pass's start, is when the outcome
	// reached the generator (the answer's arrival, the timeout's instant),
	// not when the loop handled it. check is as for OnRecord. It must not
	// keep rec.
	Answered(rec *Record, check BodyCheck, at time.Duration)
}

// Planned is one request of a Plan.
type Planned struct {
	At  time.Duration // its intended send time, from the pass's start
	Obj int           // the index of its path in Pass.Paths
	Tag int64         // the caller's, handed back in Record.Tag
}

// target is the parsed destination.
type target struct {
	scheme   string
	host     string // Host header
	hostname string // for SNI and resolution
	port     string
	path     string
	addr     net.IP
}

// ConfigError is a caller's mistake: a bad URL, flag or file. Field names what
// was wrong, as the user knows it.
type ConfigError struct {
	Field string
	Msg   string
}

func (e *ConfigError) Error() string { return e.Field + ": " + e.Msg }

func cfgErr(field, format string, args ...any) error {
	return &ConfigError{Field: field, Msg: fmt.Sprintf(format, args...)}
}

// IsConfigError reports whether err is a caller's mistake (exit code 2 in the CLI).
func IsConfigError(err error) bool {
	var ce *ConfigError
	return errors.As(err, &ce)
}

func (o *Options) withDefaults() Options {
	c := *o
	if c.Connections == 0 {
		c.Connections = DefaultConnections
	}
	if c.Timeout == 0 {
		c.Timeout = DefaultTimeout
	}
	if c.Method == "" {
		c.Method = "GET"
	}
	if c.Shards == 0 {
		c.Shards = defaultLoops(c.CPUs, c.Connections, runtime.NumCPU())
	}
	return c
}

// defaultLoops is how many event loops run when Options.Shards is zero:
// one per CPU of cpus when they are listed, else one fewer than the host's
// CPUs (hostCPUs); at least one, at most connections. It is a function of
// its arguments alone so that hosts this one is not can be tested.
func defaultLoops(cpus []int, connections, hostCPUs int) int {
	if len(cpus) > 0 {
		return max(1, min(len(cpus), connections))
	}
	return max(1, min(hostCPUs-1, connections))
}

// loopCPUs is the CPU each of loops event loops is pinned to: loop i on
// cpus[i], so no two share a core (validate keeps loops at most len(cpus)
// and the CPUs distinct). Nil when cpus is empty: no loop is pinned.
func loopCPUs(cpus []int, loops int) []int {
	if len(cpus) == 0 {
		return nil
	}
	return slices.Clone(cpus[:min(loops, len(cpus))])
}

// LoopCPUs is the CPU each event loop of a generator made with o is pinned
// to, loop by loop (nil: none is pinned).
func LoopCPUs(o Options) []int {
	o = o.withDefaults()
	return loopCPUs(o.CPUs, o.Shards)
}

func (o *Options) validate() (*target, error) {
	if o.Connections < 1 || o.Connections > 100000 {
		return nil, cfgErr("connections", "%d: want 1 to 100000", o.Connections)
	}
	if o.Timeout < time.Millisecond || o.Timeout > MaxLatency {
		return nil, cfgErr("timeout", "%v: want 1ms to %v", o.Timeout, MaxLatency)
	}
	if o.Shards < 1 || o.Shards > o.Connections {
		return nil, cfgErr("shards", "%d: want 1 to the number of connections (%d)", o.Shards, o.Connections)
	}
	for i, c := range o.CPUs {
		if c < 0 || c >= cpuSetBits {
			return nil, cfgErr("cpus", "%v: CPU %d is not a CPU number (want 0 to %d)", o.CPUs, c, cpuSetBits-1)
		}
		if slices.Contains(o.CPUs[:i], c) {
			return nil, cfgErr("cpus", "%v lists CPU %d twice: two event loops on one core would measure each other", o.CPUs, c)
		}
	}
	if len(o.CPUs) > 0 && o.Shards > len(o.CPUs) {
		return nil, cfgErr("shards", "%d event loops on %d pinned CPUs (cpus %v): want at most one loop per CPU; lower shards or list more cpus",
			o.Shards, len(o.CPUs), o.CPUs)
	}
	switch o.Method {
	case "GET", "HEAD":
	default:
		return nil, cfgErr("method", "%q: want GET or HEAD", o.Method)
	}
	for _, h := range o.Header {
		if err := checkHeader(h); err != nil {
			return nil, err
		}
	}
	return parseTarget(o.URL)
}

func checkHeader(h [2]string) error {
	if h[0] == "" || strings.ContainsAny(h[0], " \t\r\n:") {
		return cfgErr("header", "%q: want a header name without spaces or colons", h[0])
	}
	if strings.ContainsAny(h[1], "\r\n") {
		return cfgErr("header", "%s: value must not contain line breaks", h[0])
	}
	switch strings.ToLower(h[0]) {
	case "content-length", "transfer-encoding", "connection":
		return cfgErr("header", "%s is managed by the generator and cannot be set", h[0])
	case "range":
		if _, _, ok := parseRangeHeader(h[1]); !ok {
			return cfgErr("header", "Range %q: want one range, bytes=a-b, bytes=a- or bytes=-n", h[1])
		}
	}
	return nil
}

// ParseHeader reads "Name: value" as given to --header.
func ParseHeader(s string) ([2]string, error) {
	name, val, ok := strings.Cut(s, ":")
	if !ok {
		return [2]string{}, cfgErr("header", "%q: want \"Name: value\"", s)
	}
	h := [2]string{strings.TrimSpace(name), strings.TrimSpace(val)}
	return h, checkHeader(h)
}

func parseTarget(raw string) (*target, error) {
	if raw == "" {
		return nil, cfgErr("url", "missing: want http://host:port/path or https://…")
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, cfgErr("url", "%q: %v", raw, err)
	}
	t := &target{scheme: u.Scheme, host: u.Host, hostname: u.Hostname(), port: u.Port()}
	switch u.Scheme {
	case "http":
		if t.port == "" {
			t.port = "80"
		}
	case "https":
		if t.port == "" {
			t.port = "443"
		}
	default:
		return nil, cfgErr("url", "%q: scheme must be http or https", raw)
	}
	if t.hostname == "" {
		return nil, cfgErr("url", "%q: no host", raw)
	}
	if p, err := strconv.Atoi(t.port); err != nil || p < 1 || p > 65535 {
		return nil, cfgErr("url", "%q: port must be 1 to 65535", raw)
	}
	if u.User != nil {
		return nil, cfgErr("url", "%q: user info is not supported", raw)
	}
	t.path = u.EscapedPath()
	if t.path == "" {
		t.path = "/"
	}
	if u.RawQuery != "" {
		t.path += "?" + u.RawQuery
	}
	return t, nil
}

func (o *Options) tlsConfig(t *target) (*tls.Config, error) {
	if o.TLSConfig != nil {
		c := o.TLSConfig.Clone()
		if c.ServerName == "" {
			c.ServerName = t.hostname
		}
		if c.ClientSessionCache == nil {
			c.ClientSessionCache = tls.NewLRUClientSessionCache(o.Connections)
		}
		return c, nil
	}
	c := &tls.Config{
		ServerName:         t.hostname,
		InsecureSkipVerify: o.Insecure,
		ClientSessionCache: tls.NewLRUClientSessionCache(o.Connections),
		NextProtos:         []string{"http/1.1"},
	}
	if o.CAFile != "" {
		pem, err := os.ReadFile(o.CAFile)
		if err != nil {
			return nil, cfgErr("ca", "%v", err)
		}
		pool, err := x509.SystemCertPool()
		if err != nil || pool == nil {
			pool = x509.NewCertPool()
		}
		if !pool.AppendCertsFromPEM(pem) {
			return nil, cfgErr("ca", "%s: no PEM certificate found", o.CAFile)
		}
		c.RootCAs = pool
	}
	return c, nil
}

// MaxPaths bounds Pass.Paths.
const MaxPaths = 1 << 20

// buildRequests renders each path's request bytes once; every send reuses
// them.
func buildRequests(o *Options, t *target, p *Pass) ([][]byte, expect, error) {
	switch {
	case len(p.Paths) > 0 && p.Path != "":
		return nil, expect{}, cfgErr("paths", "set either a path or paths, not both")
	case len(p.Paths) > MaxPaths:
		return nil, expect{}, cfgErr("paths", "%d: want at most %d", len(p.Paths), MaxPaths)
	case p.Zipf < 0 || math.IsNaN(p.Zipf) || p.Zipf > 10:
		return nil, expect{}, cfgErr("zipf", "%v: want an exponent from 0 (uniform) to 10", p.Zipf)
	case p.Zipf != 0 && len(p.Paths) == 0:
		return nil, expect{}, cfgErr("zipf", "a popularity needs paths to choose from")
	}
	paths := p.Paths
	if len(paths) == 0 {
		paths = []string{p.Path}
	}
	reqs := make([][]byte, len(paths))
	var ex expect
	for i, path := range paths {
		var err error
		if reqs[i], ex, err = buildRequest(o, t, p, path); err != nil {
			return nil, expect{}, err
		}
	}
	return reqs, ex, nil
}

// buildRequest renders one path's request ("" is the URL's).
func buildRequest(o *Options, t *target, p *Pass, reqPath string) ([]byte, expect, error) {
	path := t.path
	if reqPath != "" {
		if !strings.HasPrefix(reqPath, "/") || strings.ContainsAny(reqPath, " \r\n") {
			return nil, expect{}, cfgErr("path", "%q: want an absolute path without spaces", reqPath)
		}
		path = reqPath
	}
	ex := expect{status: 200, head: o.Method == "HEAD", crcHeader: o.ChecksumHeader}
	var b strings.Builder
	b.WriteString(o.Method)
	b.WriteByte(' ')
	b.WriteString(path)
	b.WriteString(" HTTP/1.1\r\n")
	host := t.host
	hdrs := make([][2]string, 0, len(o.Header)+len(p.Header))
	hdrs = append(hdrs, o.Header...)
	hdrs = append(hdrs, p.Header...)
	ua := false
	for _, h := range hdrs {
		if err := checkHeader(h); err != nil {
			return nil, expect{}, err
		}
		switch strings.ToLower(h[0]) {
		case "host":
			host = h[1]
		case "user-agent":
			ua = true
		case "range":
			f, l, _ := parseRangeHeader(h[1]) // checked by checkHeader
			ex.status = 206
			ex.hasRange = true
			ex.rangeFirst, ex.rangeLast = f, l
		}
	}
	b.WriteString("Host: ")
	b.WriteString(host)
	b.WriteString("\r\n")
	if !ua {
		b.WriteString("User-Agent: hlsbench\r\n")
	}
	for _, h := range hdrs {
		if strings.EqualFold(h[0], "host") {
			continue
		}
		b.WriteString(h[0])
		b.WriteString(": ")
		b.WriteString(h[1])
		b.WriteString("\r\n")
	}
	b.WriteString("\r\n")
	return []byte(b.String()), ex, nil
}
