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

// Config is the protocol: how many passes of what length, and the load,
// and every workload's own settings, each declared (a Setting) in the file
// of its workload. Zero fields take the defaults (the reference page's).
type Config struct {
	Warmups      int           // unmeasured passes first (default 3)
	Passes       int           // measured passes (default 20)
	PassDuration time.Duration // rate workloads (default 5s)
	Rate         float64       // overrides every rate workload's rate
	Connections  int           // overrides every workload's connections
	Timeout      time.Duration // per request (default 30s)

	// CPUs pins the generator's event loops.
	CPUs []int

	// HostRepeats is how many times a rate pass (hit-path, segment) that
	// the host spoiled is run again: one invalid with the host's steal,
	// interrupts, other processes or stalls past their thresholds (see
	// HostStealShare and friends). Every spoiled attempt is kept in the
	// pass that counts. 0 repeats nothing.
	HostRepeats int

	// vals are the workloads' settings that were set, by name; the rest
	// take their declared defaults. Never written in place: a Config is
	// a value, and copies share the map.
	vals map[string]any
}

// Defaults are the reference page's protocol.
func Defaults() Config { return profileConfig(reference) }

// DefaultHostRepeats is Defaults' HostRepeats; Quick repeats once.
const DefaultHostRepeats = 2

// Quick is the --quick profile: every workload in about three minutes.
func Quick() Config { return profileConfig(quick) }

// Nightly is the regression profile: enough measured passes that a real
// change can be significant (3 against 3 passes can never reach p < 0.05;
// 10 against 10 reach p < 0.001), short enough that the nightly job's one
// suite (BASE's and HEAD's built-in cache, two copies each of Varnish and
// NGINX) over the workloads that can reach a verdict ends within 45 minutes
// on a 2-core machine (.ci/nightly prints its time).
func Nightly() Config { return profileConfig(nightly) }

// NightlyText says what --nightly runs, for the help text.
func NightlyText() string { return profileText(nightly) }

// QuickText says what --quick changes, for the help text.
func QuickText() string { return profileText(quick) }

// profileText lists the settings a profile changes, with their defaults.
func profileText(p profile) string {
	def, prof := Defaults(), profileConfig(p)
	var parts []string
	for _, s := range Settings() {
		if a, b := s.Text(def), s.Text(prof); a != b {
			parts = append(parts, fmt.Sprintf("%s %s (instead of %s)", s.Name(), b, a))
		}
	}
	return strings.Join(parts, ", ")
}

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
	return c
}

// Validate names the first setting that cannot run, as a *FieldError
// whose Field is the setting's name.
func (c Config) Validate() error {
	for _, s := range Settings() {
		if err := s.check(c); err != nil {
			return err
		}
	}
	for _, w := range all {
		if v, ok := w.(validates); ok {
			if err := v.validate(c); err != nil {
				return err
			}
		}
	}
	return nil
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
	// origin changes the rest of the origin's configuration, as the
	// workload's settings ask (set by its configure).
	origin func(*origin.Config)

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
	c := origin.Config{SegmentSize: s.SegmentSize, Live: s.Live, CacheControl: origin.CacheControl{
		Master:   engines.MaxAge(s.Policy.ManifestTTL),
		Manifest: engines.MaxAge(s.Policy.ManifestTTL),
		Segment:  engines.MaxAge(s.Policy.SegmentTTL),
	}}
	if s.origin != nil {
		s.origin(&c)
	}
	return c
}

// configures is a workload whose spec follows the run's settings (its
// origin's channels, its policy's purge).
type configures interface {
	configure(s Spec, cfg Config) Spec
}

// Configured is the workload as cfg runs it: at cfg's rate, with what its
// own settings change in its spec.
func (s Spec) Configured(cfg Config) Spec {
	s = s.WithRate(cfg.Rate)
	if c, ok := s.w.(configures); ok {
		s = c.configure(s, cfg.withDefaults())
	}
	return s
}

// measuresCache is a workload that measures a cache (its misses, its
// grace, its purges, its hit ratio): the null engine, which has none, has
// no cell in it.
type measuresCache interface{ measuresCache() }

// spreads is a workload whose passes can run on generator agents on other
// hosts (a placed run): its load is a schedule of requests (no plan of
// follow-ups) and what it measures comes back in the generators' results
// and from the origin, not from each request's record.
type spreads interface{ spreads() }

// Spreads says whether the workload runs in a placed run.
func (s Spec) Spreads() bool {
	_, ok := s.w.(spreads)
	return ok
}

// extends is a workload whose session can run measured passes past its
// planned ones (extender): a rate pass stands alone, so one more is one
// more sample of the same thing (hlsbench run --decide).
type extends interface{ extends() }

// Extends says whether the workload can run more passes than planned, for
// a comparison the planned ones leave undecided (RunSpec.More).
func (s Spec) Extends() bool {
	_, ok := s.w.(extends)
	return ok
}

// NeedsCache says whether the workload measures a cache.
func (s Spec) NeedsCache() bool {
	_, ok := s.w.(measuresCache)
	return ok
}
