package workloads

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"

	"github.com/hlsbench/hlsbench/results"
)

// Workload is one test of the protocol: what it asks of an engine, under
// which conditions, and how to run it pass by pass. Adding a workload is a
// file with its type and a line in all.
type Workload interface {
	// Spec is the workload's name, title, description, load and cache
	// policy.
	Spec() Spec
	// Conditions are what its figures depend on, as cfg runs it.
	Conditions(s Spec, cfg Config) results.Conditions
	// Estimate is how long it is planned to take on one engine.
	Estimate(cfg Config) time.Duration
	// Open prepares it on a target (its generator, a warm cache, its tests
	// in rc) for Steps passes, warm-ups first.
	Open(ctx context.Context, s Spec, cfg Config, tgt *Target, rc *Recorder) (Session, error)
}

// Session is a workload opened on one target. A suite interleaves the
// sessions of several engines step by step.
type Session interface {
	// Steps is the number of passes, warm-ups included.
	Steps() int
	// Step runs and records pass i (0 ≤ i < Steps, in order).
	Step(ctx context.Context, i int) error
	Close() error
}

// all lists the workloads in run order: one line each. capacity runs
// last: its search is open-ended and overloads every engine on purpose,
// so a run stopped during it keeps every figure of the fixed-rate
// protocol (the published comparison) before it.
var all = []Workload{hitPath{}, segment{}, missStorm{}, originFlap{}, purgeStampede{}, repeatedBans{}, liveAudience{}, llHLS{}, capacity{}}

// Names lists the workloads in run order.
func Names() []string {
	var n []string
	for _, w := range all {
		n = append(n, w.Spec().Name)
	}
	return n
}

func lookup(name string) (Workload, bool) {
	for _, w := range all {
		if w.Spec().Name == name {
			return w, true
		}
	}
	return nil, false
}

// Describe is the workload as it runs under cfg, for the results file.
func (s Spec) Describe(cfg Config) results.Workload {
	c := s.w.Conditions(s, cfg.withDefaults())
	if b, err := json.Marshal(s.Policy); err == nil {
		sum := sha256.Sum256(b)
		c.Policy = hex.EncodeToString(sum[:8])
	}
	return results.Workload{Name: s.Name, Title: s.Title, Description: s.Description, Conditions: c}
}

// Run runs one workload against a target, recording every pass in rc and
// saving after each. A cancelled ctx stops it after the passes that
// finished.
func Run(ctx context.Context, spec Spec, cfg Config, tgt *Target, rc *Recorder) error {
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return err
	}
	if spec.w == nil {
		return fmt.Errorf("workload %q: not from Specs", spec.Name)
	}
	s, err := spec.w.Open(ctx, spec, cfg, tgt, rc)
	if err != nil {
		return err
	}
	for i := 0; i < s.Steps(); i++ {
		if err := s.Step(ctx, i); err != nil {
			s.Close()
			return err
		}
	}
	return s.Close()
}

// protocol is the common conditions of a workload's passes.
func protocol(cfg Config) results.Conditions {
	return results.Conditions{Warmups: max(cfg.Warmups, 0), Passes: cfg.Passes, Timeout: results.Duration(cfg.Timeout)}
}
