package agent

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/hlsbench/hlsbench/results"
	"github.com/hlsbench/hlsbench/workloads/loadgen"
)

// ClockTolerance is the default bound of a shared pass's clocks: how far an
// agent's clock may be from the controller's, how uncertain that offset
// may be, and how far from the common instant an agent may have started.
const ClockTolerance = 5 * time.Millisecond

// Part is one agent's generator in a shared pass, named as the results name
// its host.
type Part struct {
	Name   string
	Remote *Remote
}

// PartReport is what one agent did in a shared pass and how its clock
// stood.
type PartReport struct {
	Name string
	// Before and After are the agent's clock measured before and after
	// the pass; StartError bounds how far from the common instant it
	// started: the offset's uncertainty plus how far the offset moved.
	Before, After Clock
	StartError    time.Duration
	Result        *loadgen.Result
	// Records are the part's requests when the pass asked for them
	// (PassSpec.Records), on the agent's clock: Before.Offset is how far
	// ahead of the controller's it was.
	Records []Record
}

// Shared runs one pass split over parts: request slot k goes to part
// k mod len(parts), all from one instant that each agent reads on its own
// clock (the common instant plus its measured offset). Their results merge
// exactly (loadgen.MergeShares); a part is invalid, and with it the pass,
// when its clock's offset, the offset's uncertainty or its start error is
// past tolerance (ClockTolerance when zero). An agent's failure fails the
// pass and interrupts the others; cancelling ctx interrupts every part,
// and the pass keeps what they measured (Interrupted).
func Shared(ctx context.Context, parts []Part, spec PassSpec, tolerance time.Duration) (*loadgen.Result, []PartReport, error) {
	if len(parts) == 0 {
		return nil, nil, errors.New("a shared pass needs at least one agent")
	}
	if tolerance <= 0 {
		tolerance = ClockTolerance
	}
	if spec.Seed == 0 {
		// Every part draws the one schedule's gaps and objects.
		spec.Seed = rand.Uint64() | 1
	}
	reps := make([]PartReport, len(parts))
	var slowest time.Duration
	for i, p := range parts {
		c, err := p.Remote.c.Clock(ctx)
		if err != nil {
			return nil, nil, err
		}
		reps[i] = PartReport{Name: p.Name, Before: c}
		slowest = max(slowest, c.RTT)
	}
	start := time.Now().Add(max(250*time.Millisecond, 10*slowest))

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errs := make([]error, len(parts))
	var wg sync.WaitGroup
	for i, p := range parts {
		s := spec
		s.Share = loadgen.Share{Index: i, Of: len(parts)}
		s.StartAt = start.Add(reps[i].Before.Offset)
		wg.Go(func() {
			if reps[i].Result, reps[i].Records, errs[i] = p.Remote.Run(ctx, s); errs[i] != nil {
				errs[i] = fmt.Errorf("%s: %w", p.Name, errs[i])
				cancel()
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, nil, err
	}
	// Measured even when ctx ended (an interrupted pass keeps what it
	// measured, and its clocks).
	after, cancelAfter := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancelAfter()
	rs := make([]*loadgen.Result, len(parts))
	for i, p := range parts {
		c, err := p.Remote.c.Clock(after)
		if err != nil {
			return nil, nil, err
		}
		reps[i].After = c
		reps[i].StartError = reps[i].Before.Uncertainty + (c.Offset - reps[i].Before.Offset).Abs()
		for _, why := range reps[i].clockChecks(tolerance) {
			reps[i].Result.Invalidate(why)
		}
		rs[i] = reps[i].Result
	}
	m := loadgen.MergeShares(rs)
	for _, r := range reps {
		m.Parts = append(m.Parts, results.GeneratorHost{Name: r.Name, Requests: r.Result.Requests, OK: r.Result.OK,
			CPUSeconds: round3(r.Result.CPUSeconds), ClockOffsetMs: round3(ms(r.Before.Offset)),
			ClockUncertaintyMs: round3(ms(r.Before.Uncertainty)), StartErrorMs: round3(ms(r.StartError)),
			Valid: r.Result.Valid, InvalidReasons: r.Result.InvalidReasons})
	}
	return m, reps, nil
}

func round3(v float64) float64 { return math.Round(v*1000) / 1000 }

// SpecOf is pass as an agent takes it: everything but a plan (a function
// of this process's) travels.
func SpecOf(p loadgen.Pass) (PassSpec, error) {
	if p.Plan != nil {
		return PassSpec{}, &loadgen.ConfigError{Field: "plan", Msg: "a planned pass (each request's follow-ups) runs on a generator in this process, not on agents"}
	}
	return PassSpec{Path: p.Path, Paths: p.Paths, Zipf: p.Zipf, Header: p.Header, Rate: p.Rate, Arrival: p.Arrival,
		Duration: p.Duration, Requests: p.Requests, Burst: p.Burst, Seed: p.Seed}, nil
}

// clockChecks are the reasons the part's clock makes the pass invalid.
func (r PartReport) clockChecks(tolerance time.Duration) []string {
	var why []string
	b := r.Before
	if b.Offset.Abs() > tolerance {
		side := "ahead of"
		if b.Offset < 0 {
			side = "behind"
		}
		why = append(why, fmt.Sprintf(
			"%s's clock is %.3f ms %s the controller's (±%.3f ms), past the %v tolerance: its records' times and its start are on a clock that far off; synchronize the hosts' clocks (NTP, chrony)",
			r.Name, ms(b.Offset.Abs()), side, ms(b.Uncertainty), tolerance))
	}
	if b.Uncertainty > tolerance {
		why = append(why, fmt.Sprintf(
			"%s's clock offset is known only to ±%.3f ms (round trip %.3f ms), past the %v tolerance: the controller is too far from it",
			r.Name, ms(b.Uncertainty), ms(b.RTT), tolerance))
	}
	if r.StartError > tolerance {
		why = append(why, fmt.Sprintf(
			"%s may have started %.3f ms from the common instant (its clock moved %.3f ms during the pass), past the %v tolerance",
			r.Name, ms(r.StartError), ms((r.After.Offset-b.Offset).Abs()), tolerance))
	}
	return why
}

func ms(d time.Duration) float64 { return float64(d) / 1e6 }
