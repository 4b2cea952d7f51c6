// Package workloads holds the four HLS tests of the reference page —
// hit-path TTFB, segment serve, miss-storm coalescing and origin-flap grace —
// and runs them against an engine with the evidence each needs: latency from
// the load generator, origin fetches counted at the origin, staleness proven
// from the origin's own stamps.
package workloads

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/hlsbench/hlsbench/engines"
	"github.com/hlsbench/hlsbench/origin"
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

	// purge-stampede: how the stream is invalidated ("": the policy's,
	// each engine's own way), the method of a per-object purge (default
	// PURGE), and the load before and after the purge in each pass.
	PurgeMode   string
	PurgeMethod string
	PurgeBefore time.Duration // default 2s
	PurgeAfter  time.Duration // default 6s

	// repeated-bans: measured passes (after one warm-up) of PurgeBefore
	// of load, then an object invalidated every second for BanFor.
	BanPasses int           // default 5
	BanFor    time.Duration // default 20s

	// live-audience: viewers joining over Ramp then watching for Watch
	// in each of AudiencePasses passes (after one warm-up); the origin's
	// channels, titles, ladder (bits per second) and target duration
	// (zero: the origin's defaults); the popularity exponent over channels
	// and titles and the share of viewers on VOD and switching rendition
	// (zero: the defaults, negative: zero, as a negative Ramp is none);
	// the miss-ratio curve's store sizes besides the policy's.
	Viewers        int
	Channels       int
	Titles         int
	Ladder         []int64
	TargetDuration time.Duration
	AudienceZipf   float64
	VODShare       float64
	SwitchShare    float64
	Ramp, Watch    time.Duration
	AudiencePasses int
	StoreSizes     []int64

	// capacity: each test's service level (missing: DefaultSLO), the
	// measured searches (each one step), the most probes of a search, and
	// each probe's warm-up and measured pass at its rate.
	SLO              map[string]SLO
	CapacityTests    []string      // the tests searched (empty: all three)
	CapacitySearches int           // default 3
	CapacityProbes   int           // default 20
	ProbeWarmup      time.Duration // default 1s
	ProbeDuration    time.Duration // default 3s

	// CPUs pins the generator's event loops.
	CPUs []int

	// HostRepeats is how many times a rate pass (hit-path, segment) that
	// the host spoiled is run again: one invalid with the host's steal,
	// interrupts, other processes or stalls past their thresholds (see
	// HostStealShare and friends). Every spoiled attempt is kept in the
	// pass that counts. 0 repeats nothing.
	HostRepeats int
}

// Defaults are the reference page's protocol.
func Defaults() Config {
	return Config{Warmups: 3, Passes: 20, PassDuration: 5 * time.Second, Timeout: 30 * time.Second,
		Clients: 200, Cycles: 5, HealthyPhase: 5 * time.Second, FailPhase: 10 * time.Second, FailMode: origin.Fail5xx,
		PurgeBefore: 2 * time.Second, PurgeAfter: 6 * time.Second, BanPasses: 5, BanFor: 20 * time.Second,
		Viewers: DefaultViewers, AudienceZipf: DefaultAudienceZipf, VODShare: DefaultVODShare, SwitchShare: DefaultSwitchShare,
		Ramp: DefaultRamp, Watch: DefaultWatch, AudiencePasses: DefaultAudiencePasses,
		CapacitySearches: 3, CapacityProbes: 20, ProbeWarmup: time.Second, ProbeDuration: 3 * time.Second,
		HostRepeats: DefaultHostRepeats}
}

// DefaultHostRepeats is Defaults' HostRepeats; Quick repeats once.
const DefaultHostRepeats = 2

// Quick is the --quick profile: every workload in about three minutes.
func Quick() Config {
	c := Defaults()
	c.Warmups, c.Passes, c.PassDuration = 1, 3, 2*time.Second
	c.Cycles, c.HealthyPhase, c.FailPhase = 3, 3*time.Second, 6*time.Second
	c.PurgeBefore, c.PurgeAfter = time.Second, 3*time.Second
	c.BanPasses, c.BanFor = 2, 5*time.Second
	c.Ramp, c.Watch, c.AudiencePasses = 4*time.Second, 8*time.Second, 1
	c.CapacitySearches, c.ProbeWarmup, c.ProbeDuration = 1, 500*time.Millisecond, time.Second
	c.HostRepeats = 1
	return c
}

// Nightly is the regression profile: enough measured passes that a real
// change can be significant (3 against 3 passes can never reach p < 0.05;
// 10 against 10 reach p < 0.001), short enough that the nightly job's one
// suite (BASE's and HEAD's built-in cache, two copies each of Varnish and
// NGINX) over the workloads that can reach a verdict ends within 45 minutes
// on a 2-core machine (.ci/nightly prints its time).
func Nightly() Config {
	c := Defaults()
	c.Warmups, c.Passes, c.PassDuration = 1, 10, 3*time.Second
	c.Cycles, c.HealthyPhase, c.FailPhase = 5, 4*time.Second, 8*time.Second
	c.BanFor = 10 * time.Second
	c.CapacitySearches, c.ProbeWarmup, c.ProbeDuration = 3, time.Second, 2*time.Second
	return c
}

// NightlyText says what --nightly runs, for the help text.
const NightlyText = "1 warm-up and 10 measured passes of 3s; miss-storm 1+10 bursts; origin-flap 5 cycles of 4s healthy + 8s failing; purge-stampede 1+10 passes of 2s + 6s; repeated-bans 1+5 passes of 2s + 10s; live-audience 1+3 passes of 10s + 30s, then 1+1 at each other store size; capacity 3 searches of probes of 1s warm-up + 2s"

// QuickText says what --quick changes, for the help text.
const QuickText = "1 warm-up and 3 measured passes of 2s (instead of 3 and 20 of 5s); miss-storm 1+3 bursts; origin-flap 3 cycles of 3s healthy + 6s failing (instead of 5 of 5s + 10s); purge-stampede 1+3 passes of 1s + 3s around the purge (instead of 2s + 6s); repeated-bans 1+2 passes of 1s + 5s of bans (instead of 1+5 of 2s + 20s); live-audience 1+1 passes of 4s ramp + 8s watching, and 1+1 at each other store size (instead of 1+3 of 10s + 30s); capacity 1 search of probes of 0.5s warm-up + 1s (instead of 3 of 1s + 3s); a pass the host spoiled is run again once (instead of up to twice)"

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
	if c.PurgeBefore == 0 {
		c.PurgeBefore = d.PurgeBefore
	}
	if c.PurgeAfter == 0 {
		c.PurgeAfter = d.PurgeAfter
	}
	if c.BanPasses == 0 {
		c.BanPasses = d.BanPasses
	}
	if c.BanFor == 0 {
		c.BanFor = d.BanFor
	}
	if c.Viewers == 0 {
		c.Viewers = d.Viewers
	}
	if c.AudienceZipf == 0 {
		c.AudienceZipf = d.AudienceZipf
	}
	if c.VODShare == 0 {
		c.VODShare = d.VODShare
	}
	if c.SwitchShare == 0 {
		c.SwitchShare = d.SwitchShare
	}
	if c.Ramp == 0 {
		c.Ramp = d.Ramp
	}
	if c.Watch == 0 {
		c.Watch = d.Watch
	}
	if c.AudiencePasses == 0 {
		c.AudiencePasses = d.AudiencePasses
	}
	if c.CapacitySearches == 0 {
		c.CapacitySearches = d.CapacitySearches
	}
	if c.CapacityProbes == 0 {
		c.CapacityProbes = d.CapacityProbes
	}
	if c.ProbeWarmup == 0 {
		c.ProbeWarmup = d.ProbeWarmup
	}
	if c.ProbeDuration == 0 {
		c.ProbeDuration = d.ProbeDuration
	}
	return c
}

// Validate names the first setting that cannot run, as a *FieldError
// whose Field is the setting (the CLI maps it to its flag).
func (c Config) Validate() error {
	switch {
	case c.Passes < 1:
		return fieldErr("passes", "%d: want 1 or more", c.Passes)
	case c.PassDuration < 100*time.Millisecond:
		return fieldErr("pass-duration", "%v: want at least 100ms", c.PassDuration)
	case c.Rate < 0:
		return fieldErr("rate", "%v: want 0 (each workload's own) or more", c.Rate)
	case c.Clients < 1 || c.Clients > 10000:
		return fieldErr("clients", "%d: want 1 to 10000", c.Clients)
	case c.Cycles < 1:
		return fieldErr("cycles", "%d: want 1 or more", c.Cycles)
	case c.PurgeMode != "" && c.PurgeMode != PurgeModeAuto && c.PurgeMode != engines.PurgeBan && c.PurgeMode != engines.PurgeObject:
		return fieldErr("purge-mode", "%q: want %s, %s or %s", c.PurgeMode, PurgeModeAuto, engines.PurgeBan, engines.PurgeObject)
	case c.PurgeMethod != "" && !validMethod(c.PurgeMethod):
		return fieldErr("purge-method", "%q: want an HTTP method, a token such as PURGE or BAN", c.PurgeMethod)
	case c.PurgeBefore < 500*time.Millisecond:
		return fieldErr("purge-before", "%v: want at least 500ms of load before the purge", c.PurgeBefore)
	case c.PurgeAfter < time.Second:
		return fieldErr("purge-after", "%v: want at least 1s of load after the purge", c.PurgeAfter)
	case c.BanPasses < 1:
		return fieldErr("ban-passes", "%d: want 1 or more", c.BanPasses)
	case c.BanFor < 4*BanEvery:
		return fieldErr("ban-for", "%v: want at least %v of repeated bans", c.BanFor, 4*BanEvery)
	case c.Viewers < 1 || c.Viewers > 100000:
		return fieldErr("viewers", "%d: want 1 to 100000", c.Viewers)
	case c.AudienceZipf > 10 || math.IsNaN(c.AudienceZipf):
		return fieldErr("audience-zipf", "%v: want an exponent from 0 (uniform) to 10", c.AudienceZipf)
	case c.VODShare > 1 || math.IsNaN(c.VODShare):
		return fieldErr("vod-share", "%v: want a share from 0 to 1", c.VODShare)
	case c.SwitchShare > 1 || math.IsNaN(c.SwitchShare):
		return fieldErr("switch-share", "%v: want a share from 0 to 1", c.SwitchShare)
	case c.Watch < time.Second:
		return fieldErr("watch", "%v: want at least 1s of watching after the ramp", c.Watch)
	case c.AudiencePasses < 1:
		return fieldErr("audience-passes", "%d: want 1 or more", c.AudiencePasses)
	case c.CapacitySearches < 1:
		return fieldErr("capacity-searches", "%d: want 1 or more", c.CapacitySearches)
	case c.CapacityProbes < 2:
		return fieldErr("capacity-probes", "%d: want 2 or more probes per search", c.CapacityProbes)
	case c.ProbeWarmup < 0:
		return fieldErr("probe-warmup", "%v: want 0 or more", c.ProbeWarmup)
	case c.ProbeDuration < 200*time.Millisecond:
		return fieldErr("probe-duration", "%v: want at least 200ms", c.ProbeDuration)
	}
	for _, test := range c.CapacityTests {
		if _, ok := DefaultSLO[test]; !ok {
			return fieldErr("capacity-tests", "%q: want hit-path, segment-full or segment-range", test)
		}
	}
	for test, s := range c.SLO {
		if _, ok := DefaultSLO[test]; !ok {
			return fieldErr("slo", "%q: unknown test: want hit-path, segment-full or segment-range", test)
		}
		if _, ok := sloQuantiles[quantileName(s.Quantile)]; !ok || s.Max <= 0 {
			return fieldErr("slo", "%s=%s: want a quantile p50, p90, p99 or p999 and a duration above 0", test, s)
		}
	}
	for _, n := range c.StoreSizes {
		if n < 1<<20 {
			return fieldErr("store-sizes", "%d bytes: want sizes of at least 1MiB", n)
		}
	}
	if _, err := origin.New(origin.Config{Live: origin.Live{Channels: c.Channels, Titles: c.Titles, Ladder: c.Ladder,
		TargetDuration: c.TargetDuration}}); err != nil {
		var ce *origin.ConfigError
		if errors.As(err, &ce) {
			return fieldErr(liveFlag(ce.Field), "%s", ce.Msg)
		}
		return err
	}
	return nil
}

// liveFlag is the setting behind an origin.Live field.
func liveFlag(field string) string {
	switch field {
	case "Live.Channels":
		return "channels"
	case "Live.Titles":
		return "titles"
	case "Live.Ladder":
		return "ladder"
	case "Live.TargetDuration":
		return "target-duration"
	}
	return strings.ToLower(strings.TrimPrefix(field, "Live."))
}

// validMethod is an HTTP method token (RFC 9110: tchar), not GET or HEAD,
// which would fetch instead of purging.
func validMethod(m string) bool {
	if m == "" || len(m) > 32 || m == "GET" || m == "HEAD" {
		return false
	}
	for _, r := range m {
		if !(r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || strings.ContainsRune("!#$%&'*+-.^_`|~", r)) {
			return false
		}
	}
	return true
}

// FieldError is a caller's mistake in one setting: Field names it as the
// protocol knows it ("passes", "workload"), Msg says what is accepted.
type FieldError struct {
	Field string
	Msg   string
}

func (e *FieldError) Error() string { return e.Field + " " + e.Msg }

func fieldErr(field, format string, args ...any) error {
	return &FieldError{Field: field, Msg: fmt.Sprintf(format, args...)}
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
	// SegmentSize is the origin's segment size, when not its default.
	SegmentSize int64
	// Live is the origin's live channels and VOD titles (live-audience).
	Live origin.Live

	w Workload
}

// overTopologies is a workload measured in every topology the run asks
// for (the reference page's hit-path and segment), whose tests are known
// before it runs.
type overTopologies interface {
	Tests() []latencyDef
}

// OverTopologies says whether the workload runs over every topology of
// the run, rather than plaintext alone.
func (s Spec) OverTopologies() bool {
	_, ok := s.w.(overTopologies)
	return ok
}

// listed is a workload measured in plaintext alone that still names its
// tests before it runs, so that a cell not applicable to it (the null
// engine, which has no cache) records each of them with its reason.
type listed interface {
	listTests() []latencyDef
}

// tests are the tests of a workload run over topologies, or listed.
func (s Spec) tests() []latencyDef {
	if o, ok := s.w.(overTopologies); ok {
		return o.Tests()
	}
	if l, ok := s.w.(listed); ok {
		return l.listTests()
	}
	return nil
}

// Specs returns the workloads named (all of them for "all"), or a
// *FieldError for "workload" naming what is accepted.
func Specs(names string) ([]Spec, error) {
	var out []Spec
	seen := map[string]bool{}
	add := func(w Workload) {
		if s := w.Spec(); !seen[s.Name] {
			seen[s.Name] = true
			s.w = w
			out = append(out, s)
		}
	}
	for _, n := range strings.Split(names, ",") {
		n = strings.TrimSpace(n)
		if n == "all" {
			for _, w := range all {
				add(w)
			}
			continue
		}
		w, ok := lookup(n)
		if !ok {
			return nil, fieldErr("workload", "%q: want %s or all (a comma list runs several)", n, strings.Join(Names(), ", "))
		}
		add(w)
	}
	if len(out) == 0 {
		return nil, fieldErr("workload", "none given: want %s or all", strings.Join(Names(), ", "))
	}
	return out, nil
}

// specOf is the named workload's spec (for tests and callers that know it).
func specOf(name string) Spec {
	w, ok := lookup(name)
	if !ok {
		panic("unknown workload " + name)
	}
	s := w.Spec()
	s.w = w
	return s
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
	return origin.Config{SegmentSize: s.SegmentSize, Live: s.Live, CacheControl: origin.CacheControl{
		Master:   engines.MaxAge(s.Policy.ManifestTTL),
		Manifest: engines.MaxAge(s.Policy.ManifestTTL),
		Segment:  engines.MaxAge(s.Policy.SegmentTTL),
	}}
}

// WithPurge is the workload with the run's purge mode (--purge-mode) in
// its policy, which the engines render.
func (s Spec) WithPurge(mode string) Spec {
	if mode != "" && s.Policy.Purge != "" {
		s.Policy.Purge = mode
	}
	return s
}
