package loadgen

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"math"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// Generator holds a pool of open connections spread over event-loop shards
// and runs passes on it. Passes run one at a time; connections stay open
// between them.
type Generator struct {
	opts      Options
	t         *target
	sa        unix.Sockaddr
	family    int
	tlsConfig *tls.Config
	shards    []*shard
	log       *hdrLog
	passes    int

	// wall0 and mono0 pin nanotime to wall-clock time for Records.
	wall0 time.Time
	mono0 int64

	mu     sync.Mutex
	closed bool
}

func (g *Generator) wallOf(mono int64) time.Time {
	return g.wall0.Add(time.Duration(mono - g.mono0))
}

// Shards is the number of event loops (the range of OnRecord's shard).
func (g *Generator) Shards() int { return len(g.shards) }

// New resolves the target and opens every connection of the pool (TLS
// handshakes included) before returning, so no pass pays for them.
func New(ctx context.Context, o Options) (*Generator, error) {
	opts := o.withDefaults()
	t, err := opts.validate()
	if err != nil {
		return nil, err
	}
	g := &Generator{opts: opts, t: t, wall0: time.Now(), mono0: nanotime()}
	// One P per loop plus a spare: a pinned loop holds its P while it
	// waits in epoll (a raw system call, see sys_linux.go), and an
	// unpinned one gives it up only once the runtime's monitor takes it.
	if runtime.GOMAXPROCS(0) < opts.Shards+1 {
		runtime.GOMAXPROCS(opts.Shards + 1)
	}
	if ip := net.ParseIP(t.hostname); ip != nil {
		t.addr = ip
	} else {
		ips, err := net.DefaultResolver.LookupIP(ctx, "ip", t.hostname)
		if err != nil || len(ips) == 0 {
			return nil, cfgErr("url", "resolve %s: %v", t.hostname, err)
		}
		t.addr = ips[0]
	}
	if g.sa, g.family, err = sockaddr(t.addr, t.port); err != nil {
		return nil, cfgErr("url", "port %q: %v", t.port, err)
	}
	if t.scheme == "https" {
		if g.tlsConfig, err = opts.tlsConfig(t); err != nil {
			return nil, err
		}
	}
	for i := 0; i < opts.Shards; i++ {
		s, err := newShard(g, i)
		if err != nil {
			g.Close()
			return nil, fmt.Errorf("start event loop: %w", err)
		}
		g.shards = append(g.shards, s)
	}
	for _, s := range g.shards {
		var err error
		s.do(func() { err = s.pinErr })
		if err != nil {
			g.Close()
			return nil, cfgErr("cpus", "pin the generator to CPUs %v: %v", opts.CPUs, err)
		}
	}
	for i := 0; i < opts.Connections; i++ {
		g.shards[i%opts.Shards].addConn()
	}
	if err := g.openAll(); err != nil {
		g.Close()
		return nil, fmt.Errorf("connect to %s: %w", net.JoinHostPort(t.addr.String(), t.port), err)
	}
	if opts.HDRLog != nil {
		g.log = newHDRLog(opts.HDRLog, opts.Shards)
	}
	return g, nil
}

func (g *Generator) openAll() error {
	errs := make([]error, len(g.shards))
	var wg sync.WaitGroup
	for i, s := range g.shards {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.do(func() {
				for _, c := range s.conns {
					if err := s.openBlocking(c); err != nil {
						errs[i] = err
						return
					}
				}
			})
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// Connections is the size of the pool.
func (g *Generator) Connections() int { return g.opts.Connections }

// Close closes every connection and stops the shards. It is idempotent.
func (g *Generator) Close() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return nil
	}
	g.closed = true
	for _, s := range g.shards {
		s.close()
	}
	if g.log != nil {
		return g.log.close()
	}
	return nil
}

func (g *Generator) spec(p *Pass) (*passSpec, error) {
	reqs, ex, err := buildRequests(&g.opts, g.t, p)
	if err != nil {
		return nil, err
	}
	sp := &passSpec{reqs: reqs, pick: Popularity(len(p.Paths), p.Zipf), ex: ex, timeout: int64(g.opts.Timeout), shards: len(g.shards),
		arrival: p.Arrival, rate: p.Rate, seed: p.Seed, requests: p.Requests, burst: p.Burst, share: p.Share,
		stop: new(atomic.Bool), late: int64(p.lateBy)}
	if sp.share.Of == 0 {
		sp.share.Of = 1
	}
	if err := p.Validate(g.opts.Connections); err != nil {
		return nil, err
	}
	switch {
	case p.Plan != nil:
		sp.mode, sp.plan, sp.pick = modePlan, p.Plan, nil // the plan names each object
	case p.Burst > 0:
		sp.mode = modeBurst
	case p.Rate == 0:
		sp.mode = modeClosed
	default:
		sp.mode = modeRate
		sp.period = 1e9 / p.Rate
	}
	if sp.seed == 0 {
		sp.seed = uint64(time.Now().UnixNano())
	}
	if g.log != nil {
		sp.ivEvery = int64(time.Second)
	}
	return sp, nil
}

// Validate checks a pass against a pool of the given size.
func (p *Pass) Validate(connections int) error {
	if err := p.validateShare(); err != nil {
		return err
	}
	if p.Plan != nil {
		switch {
		case p.Rate != 0 || p.Burst != 0 || p.Requests != 0:
			return cfgErr("plan", "a planned pass sets no rate, burst or request count: its plan decides")
		case p.Zipf != 0:
			return cfgErr("zipf", "a planned pass draws no path: its plan names each request's")
		case p.Duration <= 0:
			return cfgErr("duration", "%v: a planned pass needs a positive duration", p.Duration)
		}
		return nil
	}
	switch {
	case p.Burst < 0:
		return cfgErr("burst", "%d: want 0 or more", p.Burst)
	case p.Share.Of > 1 && p.Burst > 0 && p.burstHere() > int64(connections):
		return cfgErr("burst", "%d requests over %d generators need %d connections on generator %d; its pool has %d",
			p.Burst, p.Share.Of, p.burstHere(), p.Share.Index, connections)
	case p.Share.Of <= 1 && p.Burst > connections:
		return cfgErr("burst", "%d requests need as many connections; the pool has %d", p.Burst, connections)
	case p.Burst > 0:
		return nil
	case p.Rate < 0 || math.IsNaN(p.Rate) || p.Rate > 10_000_000:
		return cfgErr("rate", "%v: want 0 (closed loop) to 10000000 requests per second", p.Rate)
	case p.Duration < 0:
		return cfgErr("duration", "%v: want a positive duration", p.Duration)
	case p.Requests < 0:
		return cfgErr("requests", "%d: want 0 or more", p.Requests)
	case p.Duration == 0 && p.Requests == 0:
		return cfgErr("duration", "a pass needs a duration or a request count")
	}
	return nil
}

func (p *Pass) validateShare() error {
	sh := p.Share
	switch {
	case sh.Of < 0 || sh.Of > 1024:
		return cfgErr("share", "%d generators: want 1 to 1024", sh.Of)
	case sh.Of == 0 && sh.Index != 0, sh.Of > 0 && (sh.Index < 0 || sh.Index >= sh.Of):
		return cfgErr("share", "generator %d of %d: want 0 to %d", sh.Index, sh.Of, max(sh.Of-1, 0))
	case sh.Of > 1 && p.Plan != nil:
		return cfgErr("share", "a planned pass cannot be split: its plan is one generator's")
	case sh.Of > 1 && p.Arrival == Poisson && p.Seed == 0 && p.Rate > 0 && p.Burst == 0:
		return cfgErr("seed", "a Poisson schedule split over %d generators needs the same nonzero seed on each", sh.Of)
	case !p.StartAt.IsZero() && time.Until(p.StartAt) > MaxStartAhead:
		return cfgErr("start_at", "%s is %v ahead: want at most %v", p.StartAt.Format(time.RFC3339Nano),
			time.Until(p.StartAt).Round(time.Millisecond), MaxStartAhead)
	}
	return nil
}

// burstHere is how many of a shared burst's requests are this generator's.
func (p *Pass) burstHere() int64 {
	return slotsBelow(int64(p.Burst), int64(p.Share.Index), int64(max(p.Share.Of, 1)))
}

// Run executes one pass and returns what it measured. A cancelled ctx ends the
// pass early: the result holds what was finished and says it was interrupted.
func (g *Generator) Run(ctx context.Context, p Pass) (*Result, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return nil, errors.New("loadgen: generator is closed")
	}
	sp, err := g.spec(&p)
	if err != nil {
		return nil, err
	}
	if !g.opts.KeepGC {
		defer holdGC()()
	}
	start := time.Now()
	cpu0 := processCPU()
	sp.left.Store(int32(len(g.shards)))
	// A short lead lets every shard reach t0 asleep, so all start together.
	sp.t0 = nanotime() + int64(2*time.Millisecond)
	if !p.StartAt.IsZero() {
		lead := time.Until(p.StartAt)
		if lead < 0 {
			return nil, fmt.Errorf("loadgen: the pass was to start at %s, %v ago", p.StartAt.Format(time.RFC3339Nano), -lead.Round(time.Microsecond))
		}
		sp.t0, start = nanotime()+int64(lead), p.StartAt
	}
	sp.end = math.MaxInt64
	if p.Duration > 0 && sp.mode != modeBurst {
		sp.end = sp.t0 + int64(p.Duration)
	}
	stopWatch := context.AfterFunc(ctx, func() {
		sp.stop.Store(true)
		for _, s := range g.shards {
			s.wake()
		}
	})
	defer stopWatch()

	results := make([]shardResult, len(g.shards))
	var wg sync.WaitGroup
	for i, s := range g.shards {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.do(func() { results[i] = s.run(sp) })
		}()
	}
	wg.Wait()
	var logErr error
	if g.log != nil {
		logErr = g.log.finishPass()
	}
	g.passes++

	var errs []error
	for _, r := range results {
		if r.err != nil {
			errs = append(errs, r.err)
		}
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("open connections before the pass: %w", errors.Join(errs...))
	}
	res := g.result(sp, &p, results, start, processCPU()-cpu0)
	return res, logErr
}
