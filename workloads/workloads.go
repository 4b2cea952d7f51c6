// Package workloads holds the four HLS tests of the reference page —
// hit-path TTFB, segment serve, miss-storm coalescing and origin-flap grace —
// and runs them against an engine with the evidence each needs: latency from
// the load generator, origin fetches counted at the origin, staleness proven
// from the origin's own stamps.
package workloads

import (
	"fmt"
	"strings"
	"time"

	"github.com/hlsbench/hlsbench/engines"
	"github.com/hlsbench/hlsbench/origin"
)

// Workload names.
const (
	HitPath    = "hit-path"
	Segment    = "segment"
	MissStorm  = "miss-storm"
	OriginFlap = "origin-flap"
)

// Names lists the workloads in run order.
var Names = []string{HitPath, Segment, MissStorm, OriginFlap}

// Paths the workloads request (the origin serves any segment number).
const (
	ManifestPath = "/stream/index.m3u8"
	SegmentPath  = "/stream/segment-%d.ts"
)

// Config is the protocol: how many passes of what length, and the load.
// Zero fields take the workload's defaults (the reference page's).
type Config struct {
	Warmups      int           // unmeasured passes first (default 3)
	Passes       int           // measured passes (default 20)
	PassDuration time.Duration // rate workloads (default 5s)
	Rate         float64       // overrides every rate workload's rate
	Connections  int           // overrides every workload's connections
	Timeout      time.Duration // per request (default 30s)

	// miss-storm
	Clients int // released together (default 200)

	// origin-flap: each cycle is one pass, healthy then failing.
	Cycles       int           // default 5
	HealthyPhase time.Duration // default 5s
	FailPhase    time.Duration // default 10s
	FailMode     origin.Mode   // default Fail5xx

	// CPUs pins the generator's event loops.
	CPUs []int
}

// Defaults are the reference page's protocol.
func Defaults() Config {
	return Config{Warmups: 3, Passes: 20, PassDuration: 5 * time.Second, Timeout: 30 * time.Second,
		Clients: 200, Cycles: 5, HealthyPhase: 5 * time.Second, FailPhase: 10 * time.Second, FailMode: origin.Fail5xx}
}

// Quick is the --quick profile: every workload in under two minutes.
func Quick() Config {
	c := Defaults()
	c.Warmups, c.Passes, c.PassDuration = 1, 3, 2*time.Second
	c.Cycles, c.HealthyPhase, c.FailPhase = 3, 3*time.Second, 6*time.Second
	return c
}

// QuickText says what --quick changes, for the help text.
const QuickText = "1 warm-up and 3 measured passes of 2s (instead of 3 and 20 of 5s); miss-storm 1+3 bursts; origin-flap 3 cycles of 3s healthy + 6s failing (instead of 5 of 5s + 10s)"

func (c Config) withDefaults() Config {
	d := Defaults()
	if c.Warmups < 0 {
		c.Warmups = 0
	} else if c.Warmups == 0 && c.Passes == 0 {
		c.Warmups = d.Warmups
	}
	if c.Passes == 0 {
		c.Passes = d.Passes
	}
	if c.PassDuration == 0 {
		c.PassDuration = d.PassDuration
	}
	if c.Timeout == 0 {
		c.Timeout = d.Timeout
	}
	if c.Clients == 0 {
		c.Clients = d.Clients
	}
	if c.Cycles == 0 {
		c.Cycles = d.Cycles
	}
	if c.HealthyPhase == 0 {
		c.HealthyPhase = d.HealthyPhase
	}
	if c.FailPhase == 0 {
		c.FailPhase = d.FailPhase
	}
	if c.FailMode == origin.Healthy {
		c.FailMode = d.FailMode
	}
	return c
}

// Validate names the first setting that cannot run.
func (c Config) Validate() error {
	switch {
	case c.Passes < 1:
		return fmt.Errorf("--passes %d: want 1 or more", c.Passes)
	case c.PassDuration < 100*time.Millisecond:
		return fmt.Errorf("--pass-duration %v: want at least 100ms", c.PassDuration)
	case c.Rate < 0:
		return fmt.Errorf("--rate %v: want 0 (each workload's own) or more", c.Rate)
	case c.Clients < 1 || c.Clients > 10000:
		return fmt.Errorf("clients %d: want 1 to 10000", c.Clients)
	case c.Cycles < 1:
		return fmt.Errorf("cycles %d: want 1 or more", c.Cycles)
	}
	return nil
}

// Spec is one workload: its tests, its load and its cache policy.
type Spec struct {
	Name        string
	Title       string
	Description string
	Rate        float64
	Connections int
	// Policy is what every engine is asked for this workload.
	Policy engines.Policy
}

// Specs returns the workloads named (all of them for "all"), or an error
// naming what is accepted.
func Specs(names string) ([]Spec, error) {
	var out []Spec
	seen := map[string]bool{}
	for _, n := range strings.Split(names, ",") {
		n = strings.TrimSpace(n)
		if n == "all" {
			for _, m := range Names {
				if !seen[m] {
					seen[m] = true
					out = append(out, specOf(m))
				}
			}
			continue
		}
		if !known(n) {
			return nil, fmt.Errorf("--workload %q: want %s or all (a comma list runs several)", n, strings.Join(Names, ", "))
		}
		if !seen[n] {
			seen[n] = true
			out = append(out, specOf(n))
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("--workload: want %s or all", strings.Join(Names, ", "))
	}
	return out, nil
}

func known(n string) bool {
	for _, m := range Names {
		if m == n {
			return true
		}
	}
	return false
}

// specOf gives each workload its load and its policy. The policy is the
// engine-independent part; every engine renders the same one.
func specOf(name string) Spec {
	p := engines.DefaultPolicy()
	switch name {
	case HitPath:
		// A TTL longer than any run: every request is a pure hit.
		p.ManifestTTL = 24 * time.Hour
		return Spec{Name: name, Title: "Hit-path TTFB", Rate: 5000, Connections: 50, Policy: p,
			Description: "TTFB at 5000 rps on the 2 KB media playlist, warm cache"}
	case Segment:
		p.SegmentTTL = 24 * time.Hour
		return Spec{Name: name, Title: "4 MB segment serve", Rate: 500, Connections: 20, Policy: p,
			Description: "4 MiB full GET and 64 KiB Range GET, each at 500 rps, warm cache"}
	case MissStorm:
		p.SegmentTTL = 24 * time.Hour
		return Spec{Name: name, Title: "Miss-storm coalescing", Policy: p,
			Description: "200 clients released together on a never-requested 4 MiB segment; origin fetches counted at the origin"}
	case OriginFlap:
		// The TTL expires inside every failure phase; the probe notices the
		// failure within it; grace outlasts the phase plus the TTL.
		p.ManifestTTL = 2 * time.Second
		p.Grace = 60 * time.Second
		p.HealthyGrace = 2 * time.Second
		p.ProbeInterval, p.ProbeTimeout = 500*time.Millisecond, 500*time.Millisecond
		p.ProbeWindow, p.ProbeThreshold = 3, 2
		p.FirstByteTimeout, p.BetweenBytesTimeout, p.ConnectTimeout = time.Second, time.Second, 500*time.Millisecond
		return Spec{Name: name, Title: "Origin-flap grace", Rate: 200, Connections: 10, Policy: p,
			Description: "200 rps on the media playlist while the origin fails; answers proven fresh or stale from the origin's stamps"}
	}
	panic("unknown workload " + name)
}

// WithRate is the workload at another rate (--rate), its description saying
// so: the tables state the conditions as run.
func (s Spec) WithRate(rate float64) Spec {
	if rate <= 0 || s.Rate <= 0 {
		return s
	}
	s.Description = strings.Replace(s.Description, fmt.Sprintf("%g rps", s.Rate), fmt.Sprintf("%g rps", rate), 1)
	s.Rate = rate
	return s
}

// OriginConfig is the origin for a workload: its Cache-Control follows the
// policy's TTLs, so a proxy that obeys the origin gets the same TTLs.
func (s Spec) OriginConfig() origin.Config {
	return origin.Config{CacheControl: origin.CacheControl{
		Master:   engines.MaxAge(s.Policy.ManifestTTL),
		Manifest: engines.MaxAge(s.Policy.ManifestTTL),
		Segment:  engines.MaxAge(s.Policy.SegmentTTL),
	}}
}
