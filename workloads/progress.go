package workloads

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
)

// Progress tells a person what a run is doing: the engine, the workload, the
// pass and an estimate of the time left. On a terminal it keeps one live
// line; elsewhere (a CI log) it prints a plain line per step. A nil
// *Progress prints nothing.
type Progress struct {
	w    io.Writer
	live bool
	now  func() time.Time

	mu      sync.Mutex
	start   time.Time
	planned time.Duration // the whole run, estimated from its protocol
	done    time.Duration // planned time of the steps finished
	pending time.Duration // planned time of the step under way
	shown   bool          // a live line is on the screen
	where   string
}

// NewProgress writes to w; live is true when w is a terminal.
func NewProgress(w io.Writer, live bool) *Progress {
	return &Progress{w: w, live: live, now: time.Now}
}

// begin starts the clock for a run planned to take about planned.
func (p *Progress) begin(planned time.Duration) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.start, p.planned = p.now(), planned
}

// Note prints a line that stays (a start, a saved file).
func (p *Progress) Note(format string, args ...any) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.clearLocked()
	fmt.Fprintf(p.w, "hlsbench: "+format+"\n", args...)
}

// at says where the run is now: "[builtin] hit-path".
func (p *Progress) at(where string) {
	if p == nil {
		return
	}
	p.setWhere(where)
	p.step("starting the origin and the engine", startEstimate)
}

// unplan takes d off the plan: a cell that runs no pass.
func (p *Progress) unplan(d time.Duration) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.planned -= d
}

// where says which engine and workload the next step is of, without a
// line of its own (interleaved passes change it every step).
func (p *Progress) setWhere(w string) {
	if p == nil {
		return
	}
	p.mu.Lock()
	p.where = w
	p.mu.Unlock()
}

// step shows what starts now, planned to take planned; the step before it
// is done.
func (p *Progress) step(what string, planned time.Duration) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.done += p.pending
	p.pending = planned
	elapsed := p.now().Sub(p.start)
	line := fmt.Sprintf("%s: %s · %s elapsed · %s", p.where, what, clock(elapsed), p.etaLocked(elapsed))
	if p.live {
		fmt.Fprintf(p.w, "\r\033[K%s %s", bar(p.done, p.planned), line)
		p.shown = true
		return
	}
	fmt.Fprintln(p.w, line)
}

// etaLocked scales what is left of the plan by how fast the plan has gone
// so far (engine starts and slow bursts make it run over).
func (p *Progress) etaLocked(elapsed time.Duration) string {
	left := p.planned - p.done
	if left <= 0 {
		return "finishing"
	}
	if p.done > 0 && elapsed > p.done {
		left = time.Duration(float64(left) * float64(elapsed) / float64(p.done))
	}
	return "about " + clock(left) + " left"
}

// Clear removes the live line before other output.
func (p *Progress) Clear() {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.clearLocked()
}

func (p *Progress) clearLocked() {
	if p.shown {
		fmt.Fprint(p.w, "\r\033[K")
		p.shown = false
	}
}

// bar is a ten-step progress bar of done against planned.
func bar(done, planned time.Duration) string {
	f := 0.0
	if planned > 0 {
		f = min(float64(done)/float64(planned), 1)
	}
	n := int(f * 10)
	return fmt.Sprintf("[%s%s] %3.0f%%", strings.Repeat("#", n), strings.Repeat("-", 10-n), 100*f)
}

func clock(d time.Duration) string {
	d = d.Round(time.Second)
	if d >= time.Hour {
		return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
	}
	return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
}

// passLabel is "warm-up 2/3" or "pass 4/20".
func passLabel(i, warmups, passes int, unit string) string {
	if unit == "" {
		unit = "pass"
	}
	if i < warmups {
		return fmt.Sprintf("warm-up %d/%d", i+1, warmups)
	}
	return fmt.Sprintf("%s %d/%d", unit, i+1-warmups, passes)
}

// burstEstimate is what one miss-storm burst is planned to take: a cold
// 4 MiB fetch from the origin (≈ 210 ms) and the 200 answers, with margin.
const burstEstimate = 500 * time.Millisecond

// startEstimate is the planned cost of starting an origin and an engine and
// warming the cache.
const startEstimate = 2 * time.Second

// Estimate is how long a workload's protocol is planned to take on one
// engine.
func Estimate(spec Spec, cfg Config) time.Duration {
	if spec.w == nil {
		return startEstimate
	}
	return spec.w.Estimate(cfg.withDefaults())
}

// EstimateRun adds up Estimate over every cell the run will start: each
// engine in each topology a workload runs over, less the cells a resumed
// suite skips. A cell found not applicable as it starts is taken off the
// plan then (Progress.unplan).
func EstimateRun(spec RunSpec, cfg Config) time.Duration {
	var d time.Duration
	for _, w := range spec.Workloads {
		for _, e := range spec.Engines {
			for _, topo := range topologiesOf(spec, w) {
				if spec.Skip == nil || !spec.Skip(e, topo, w.Name) {
					d += Estimate(w, cfg)
				}
			}
		}
	}
	return d
}

// names lists the workloads' names.
func names(specs []Spec) string {
	var n []string
	for _, s := range specs {
		n = append(n, s.Name)
	}
	return strings.Join(n, ", ")
}
