package workloads

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/hlsbench/hlsbench/engines/launch"
	"github.com/hlsbench/hlsbench/results"
)

// A cell's processes can end while it is measured: an engine that
// crashes, one the kernel kills for memory (a container's limit), a
// terminator or an origin that exits. The pass then measured the ending,
// not the engine: it is invalid with how it ended, the cell's tests keep
// no figure, the cell runs no further pass, and the workload fails with
// the exit status, the kill and the last lines of the output. The run's
// directory keeps every cell's output (keepLogs).

// vitals is what a cell's processes had been through before a step: the
// kernel's out-of-memory kills in their containers.
type vitals struct {
	kills, limit int64
	known        bool
}

// vitals reads the cell's out-of-memory kills so far.
func (c *cell) vitals() vitals {
	var v vitals
	for i, inst := range []any{c.inst, c.origInst()} {
		if oc, ok := inst.(launch.OOMCounter); ok {
			if n, lim, known := oc.OOMKills(); known {
				v.kills, v.known = v.kills+n, true
				if i == 0 {
					v.limit = lim
				}
			}
		}
	}
	return v
}

func (c *cell) origInst() launch.Instance {
	if c.orig == nil {
		return nil
	}
	return c.orig.inst
}

// ended says how the cell's engine, terminator or origin ended on its own,
// or that the kernel killed one of their processes for memory since
// before (a Varnish manager restarts its killed child: the container runs
// on, with an empty cache); nil while all run as started.
func (c *cell) ended(before vitals) error {
	var errs []error
	for _, inst := range []any{c.inst, c.origInst()} {
		if x, ok := inst.(launch.Exiter); ok {
			if e := x.Exited(); e != nil {
				errs = append(errs, e)
			}
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	if before.known {
		if now := c.vitals(); now.known && now.kills > before.kills {
			msg := fmt.Sprintf("%s: the kernel killed %d of its processes: %s", c.name, now.kills-before.kills, strings.TrimPrefix(launch.OOMNote(now.limit), "killed: "))
			if lg, ok := c.inst.(interface{ Logs() map[string]string }); ok {
				if tail := launch.LastLines(strings.TrimSpace(lg.Logs()["engine"]), 20); tail != "" {
					msg += "\n--- " + c.name + " output (last lines) ---\n" + tail
				}
			}
			return errors.New(msg)
		}
	}
	return nil
}

// crashed records that the cell's processes ended during pass (step) k,
// and why: every pass of the cell recorded since counts (their length
// before the step) is invalid with that reason, and each of the cell's
// tests of w keeps no figure (its protocol did not finish; a figure
// merged over the passes before would include the crash's).
func (rc *Recorder) crashed(w *Spec, c *cell, counts map[*results.Result]int, why error) error {
	first, _, _ := strings.Cut(why.Error(), "\n")
	for _, r := range rc.cellResults(w, c) {
		for i := counts[r]; i < len(r.Passes); i++ {
			p := &r.Passes[i]
			p.Valid = false
			p.InvalidReasons = append(p.InvalidReasons, "ended during the pass: "+first)
			p.InvalidBy = results.InvalidByEngine
		}
		r.Value = nil
		r.Recount()
		r.NoValue = "the cell did not finish its passes: " + first
	}
	return rc.Save()
}

// died marks the cell dead (dead: how, for the workload's error), records
// why in its tests (crashed) and stops what is left of it (its origin, a
// manager whose child was killed): a dead cell is neither frozen nor
// thawed again.
func (c *cell) died(ctx context.Context, rc *Recorder, w *Spec, counts map[*results.Result]int, why, dead error) error {
	c.dead = dead
	if err := rc.crashed(w, c, counts, why); err != nil {
		return err
	}
	if err := c.stop(ctx); err != nil {
		rc.Run.Warnings = append(rc.Run.Warnings, fmt.Sprintf("%s: stopping what was left after it ended: %v", c.label(), err))
	}
	return nil
}

// passCounts is how many passes each of the cell's tests of w holds now.
func (rc *Recorder) passCounts(w *Spec, c *cell) map[*results.Result]int {
	m := map[*results.Result]int{}
	for _, r := range rc.cellResults(w, c) {
		m[r] = len(r.Passes)
	}
	return m
}

func (rc *Recorder) cellResults(w *Spec, c *cell) []*results.Result {
	var out []*results.Result
	for _, r := range rc.list {
		if r.Workload == w.Name && r.Engine == c.name && r.Topology == c.topology {
			out = append(out, r)
		}
	}
	return out
}

// LogDir is where a run's outputs of its origins, engines and terminators
// are kept, beside its file in dir.
func LogDir(dir, runID string) string { return filepath.Join(dir, "run-"+runID+".logs") }

// logPath is the file keepLogs writes for the cell ("" without a run
// directory).
func (rc *Recorder) logPath(w *Spec, c *cell) string {
	if rc.Dir == "" {
		return ""
	}
	return filepath.Join(LogDir(rc.Dir, rc.Run.ID), w.Name+"-"+strings.ReplaceAll(c.label(), " ", "-")+".log")
}

// keepLogs appends the ends of the cell's outputs (engine, terminator,
// and with origin, the origin's) to its file in the run's log directory:
// one file per workload and cell, a section per part. It returns the file
// ("" when the run has no directory or nothing was said).
func (rc *Recorder) keepLogs(w *Spec, c *cell, origin bool) (string, error) {
	if rc.Dir == "" {
		return "", nil
	}
	parts := map[string]string{}
	if lg, ok := c.inst.(interface{ Logs() map[string]string }); ok {
		for k, v := range lg.Logs() {
			parts[k] = v
		}
	}
	if o := c.origInst(); o != nil && origin {
		parts["origin"] = o.Logs()
	}
	var names []string
	for k, v := range parts {
		if strings.TrimSpace(v) != "" {
			names = append(names, k)
		}
	}
	if len(names) == 0 {
		return "", nil
	}
	sort.Strings(names)
	path := rc.logPath(w, c)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return "", fmt.Errorf("keep %s's output: %w", c.label(), err)
	}
	var b strings.Builder
	for _, n := range names {
		fmt.Fprintf(&b, "--- %s (%s): the end of its output ---\n%s\n", n, c.label(), strings.TrimRight(parts[n], "\n"))
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return "", fmt.Errorf("keep %s's output: %w", c.label(), err)
	}
	if _, err := f.WriteString(b.String()); err != nil {
		f.Close()
		return "", fmt.Errorf("keep %s's output: %w", c.label(), err)
	}
	return path, f.Close()
}
