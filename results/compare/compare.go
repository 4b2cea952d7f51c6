// Package compare sets two groups of runs side by side: for every engine
// (with its runtime and topology) and test, the valid measured passes'
// values of the base runs against those of the new runs, judged with
// results/stats (medians, Mann-Whitney U, a direction-aware verdict).
//
// Runs are compared only under the same workload conditions
// (results.Conditions.Comparable): different conditions are an error, not
// a row. What may still explain a change — another host, another engine
// version, an interrupted run, busy CPUs — is returned as warnings and
// noted on the rows it concerns.
package compare

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/hlsbench/hlsbench/results"
	"github.com/hlsbench/hlsbench/results/stats"
)

// File is a run and the file it was read from.
type File struct {
	Path string
	Run  *results.Run
}

// Load reads a run file, or every run-*.json in a directory (not its
// subdirectories), in name order.
func Load(path string) ([]File, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	paths := []string{path}
	if fi.IsDir() {
		paths, err = filepath.Glob(filepath.Join(path, "run-*.json"))
		if err != nil {
			return nil, err
		}
		if len(paths) == 0 {
			return nil, fmt.Errorf("%s: no run-*.json in this directory", path)
		}
		sort.Strings(paths)
	}
	var out []File
	for _, p := range paths {
		r, err := results.Load(p)
		if err != nil {
			return nil, err
		}
		out = append(out, File{Path: p, Run: r})
	}
	return out, nil
}

// Options set what counts as a change.
type Options struct {
	// Threshold is the smallest change of the median, in percent of the
	// base median, that is reported as a regression or an improvement.
	Threshold float64
	// Alpha is the significance level of the U test.
	Alpha float64
	// ResolutionMs is the smallest change of a latency's median, in ms,
	// reported as a regression or an improvement: below it the generator's
	// own timing (its tolerance for lateness, loadgen.LagToleranceFloor)
	// cannot tell a change from noise.
	ResolutionMs float64
}

// DefaultResolutionMs is the generator's lateness tolerance floor.
const DefaultResolutionMs = 0.05

// Defaults are the options of `hlsbench compare` without flags.
func Defaults() Options {
	return Options{Threshold: stats.DefaultThreshold, Alpha: stats.DefaultAlpha, ResolutionMs: DefaultResolutionMs}
}

// Comparison is the outcome of Runs.
type Comparison struct {
	Threshold    float64 `json:"threshold_pct"`
	Alpha        float64 `json:"alpha"`
	ResolutionMs float64 `json:"resolution_ms"`
	// Base and New are the files compared.
	Base []string `json:"base"`
	New  []string `json:"new"`
	// Rows come one per engine and test, grouped by workload in the order
	// the files list them.
	Rows []Row `json:"rows"`
	// Warnings are what may explain a change other than the engine:
	// another host or version, unchecked conditions, unfinished runs.
	Warnings []string `json:"warnings"`
	// Incomplete names the runs that did not finish (failed, killed,
	// interrupted or still running): their finished passes are compared,
	// but a side that stopped early cannot give a verdict on what it did
	// not run, and a build that crashed is not one that got slower.
	Incomplete []string `json:"incomplete,omitempty"`
}

// Regressions are the rows whose verdict is a regression.
func (c *Comparison) Regressions() []Row {
	var out []Row
	for _, r := range c.Rows {
		if r.Verdict == stats.Regression {
			out = append(out, r)
		}
	}
	return out
}

// Status says whether a row was compared, and if not, why not.
type Status string

// Compared is the status of a row with values on both sides; the others
// read "missing in base", "invalid in new", "no value in both" and so on.
const Compared Status = "compared"

// State is one side's state of a test.
type State string

const (
	// OK: valid, with values.
	OK State = "ok"
	// Missing: no file of the side has the test.
	Missing State = "missing"
	// Invalid: no measured pass of the test is valid, in some file (a
	// test with some valid passes is compared on them, with NotePartial).
	Invalid State = "invalid"
	// NoValue: valid, but nothing was measured.
	NoValue State = "no value"
	// NotApplicable: the engine cannot be measured in this topology at
	// all (no TLS listener of its own), in some file.
	NotApplicable State = "not applicable"
)

// Row is one engine and test, base against new.
type Row struct {
	ID            string `json:"id"`
	Workload      string `json:"workload"`
	Test          string `json:"test"`
	Title         string `json:"title"`
	Engine        string `json:"engine"`
	Runtime       string `json:"runtime"`
	Topology      string `json:"topology"`
	Unit          string `json:"unit"`
	LowerIsBetter bool   `json:"lower_is_better"`
	Status        Status `json:"status"`
	// Verdict is set when Status is Compared.
	Verdict stats.Verdict `json:"verdict,omitempty"`
	// Reason says why the verdict is not a regression or an improvement,
	// or why the row was not compared.
	Reason string `json:"reason,omitempty"`
	Base   Side   `json:"base"`
	New    Side   `json:"new"`
	// ChangePct is the new median's change from the base median in
	// percent; null when not compared or when the base median is 0 (and
	// the new one is not).
	ChangePct *float64 `json:"change_pct"`
	// P is the U test's two-sided p-value, Exact whether it came from the
	// exact distribution (else the normal approximation).
	P     *float64 `json:"p"`
	Exact bool     `json:"exact"`
	// Q is P adjusted for the many tests of one comparison
	// (Benjamini–Hochberg over the rows that could reach a verdict): a
	// regression or an improvement needs Q < alpha, which keeps the
	// expected share of false ones among them at alpha. Null where P is.
	Q *float64 `json:"q"`
	// Shift is the Hodges–Lehmann estimate of new − base in the test's
	// unit with its 1 − alpha confidence interval, ShiftPct the same in
	// percent of the base median; null when not compared.
	Shift    *Interval `json:"shift,omitempty"`
	ShiftPct *Interval `json:"shift_pct,omitempty"`
	// Notes name what differs between the sides besides the engine's
	// figures: NoteHost, NoteVersion, NoteConfig.
	Notes []string `json:"notes,omitempty"`
}

// Interval is an estimate and its confidence interval. Lo and Hi are
// null when the passes are too few for an interval at that level (3
// against 3 at 95 %), or unbounded in percent of a base median of 0.
type Interval struct {
	Estimate float64  `json:"estimate"`
	Lo       *float64 `json:"lo"`
	Hi       *float64 `json:"hi"`
	Level    float64  `json:"level"`
}

// A row's notes.
const (
	NoteHost    = "another host"
	NoteVersion = "another engine version"
	// NoteConfig: the sides ran other configuration files (a file of the
	// user's own, or hlsbench's rendering against one).
	NoteConfig = "another configuration"
	// NotePartial: some measured passes were invalid on a side; its valid
	// passes are compared, the invalid ones left out (a warning says
	// which).
	NotePartial = "invalid passes left out"
)

// Side is what one side holds for a row.
type Side struct {
	State State `json:"state"`
	// Reason explains a state other than OK, naming the file.
	Reason string `json:"reason,omitempty"`
	// Values are the valid measured passes' own values (warm-ups,
	// invalid passes and passes without a value left out), whatever the
	// state; Median is theirs when the state is OK.
	Values []float64 `json:"values"`
	Median *float64  `json:"median"`
	// EngineVersions and Hosts are those of the runs behind the side.
	EngineVersions []string `json:"engine_versions,omitempty"`
	Hosts          []string `json:"hosts,omitempty"`
	Files          []string `json:"files,omitempty"`
}

// ErrNothingInCommon is returned when no engine and test is in both sides.
var ErrNothingInCommon = errors.New("nothing in common")

// ConditionsError says a workload ran under different conditions in runs
// that were to be compared or merged.
type ConditionsError struct {
	Workload string
	// Between names the two sides or files, e.g. "base run-a.json and new
	// run-b.json".
	Between string
	// Diffs are results.Conditions.Comparable's: "rate_rps 5000 vs 1000".
	Diffs []string
}

func (e *ConditionsError) Error() string {
	return fmt.Sprintf("workload %s ran under different conditions in %s: %s; compare runs made under the same conditions (pass counts may differ)",
		e.Workload, e.Between, strings.Join(e.Diffs, ", "))
}

// key is what a row is about.
type key struct{ engine, runtime, topology, workload, test string }

func keyOf(r *results.Result) key {
	wl, test := r.Workload, r.Test
	if wl == "" || test == "" {
		wl, test, _ = strings.Cut(r.ID, "/")
	}
	return key{r.Engine, r.Runtime, r.Topology, wl, test}
}

func (k key) String() string {
	s := k.engine
	if k.runtime != "" && k.runtime != "process" && k.runtime != k.engine {
		s += " (" + k.runtime + ")"
	}
	if k.topology != "" && k.topology != "plaintext" {
		s += " " + k.topology
	}
	return s + " " + k.workload + "/" + k.test
}

// gathered is one side's figures for one key, over its files.
type gathered struct {
	first    *results.Result
	values   []float64
	invalid  []string
	partial  []string // files whose test had some invalid passes
	noValue  []string
	na       []string // not applicable, with why
	versions []string
	configs  []string
	hosts    []string
	files    []string
}

// Runs compares the new runs with the base runs. Errors are the input's
// fault: options out of range, a workload under different conditions,
// nothing in common.
func Runs(base, new []File, o Options) (*Comparison, error) {
	if !(o.Alpha > 0 && o.Alpha < 1) {
		return nil, fmt.Errorf("alpha %g: want a level between 0 and 1, e.g. 0.05", o.Alpha)
	}
	if !(o.Threshold >= 0) || math.IsInf(o.Threshold, 0) {
		return nil, fmt.Errorf("threshold %g%%: want 0 or more, e.g. 5", o.Threshold)
	}
	c := &Comparison{Threshold: o.Threshold, Alpha: o.Alpha, ResolutionMs: o.ResolutionMs, Base: paths(base), New: paths(new), Rows: []Row{}, Warnings: []string{}}
	var order []key
	seen := map[key]bool{}
	sides := [2]map[key]*gathered{gather(base, &order, seen), gather(new, &order, seen)}
	common := 0
	for _, k := range order {
		if sides[0][k] != nil && sides[1][k] != nil {
			common++
		}
	}
	if common == 0 {
		return nil, fmt.Errorf("%w: base has %s; new has %s", ErrNothingInCommon, summary(sides[0], order), summary(sides[1], order))
	}
	warn := warnings{}
	if err := checkConditions(base, new, sides, &warn); err != nil {
		return nil, err
	}
	for _, f := range base {
		runWarnings("base", f, &warn)
	}
	for _, f := range new {
		runWarnings("new", f, &warn)
	}
	for i, files := range [][]File{base, new} {
		for _, f := range files {
			switch st := f.Run.Status; st {
			case results.StatusComplete, results.StatusUnknown:
			case results.StatusFailed:
				c.Incomplete = append(c.Incomplete, fmt.Sprintf("%s %s: failed: %s", [2]string{"base", "new"}[i], filepath.Base(f.Path), f.Run.Error))
			default:
				c.Incomplete = append(c.Incomplete, fmt.Sprintf("%s %s: %s", [2]string{"base", "new"}[i], filepath.Base(f.Path), st))
			}
		}
	}
	// Rows grouped by workload, then engine, each in order of first
	// appearance (base first).
	wlOrder, engOrder := map[string]int{}, map[key]int{}
	for _, k := range order {
		if _, ok := wlOrder[k.workload]; !ok {
			wlOrder[k.workload] = len(wlOrder)
		}
		if e := (key{engine: k.engine, runtime: k.runtime, topology: k.topology}); !hasKey(engOrder, e) {
			engOrder[e] = len(engOrder)
		}
	}
	engineOf := func(k key) int { return engOrder[key{engine: k.engine, runtime: k.runtime, topology: k.topology}] }
	sort.SliceStable(order, func(i, j int) bool {
		a, b := order[i], order[j]
		if wlOrder[a.workload] != wlOrder[b.workload] {
			return wlOrder[a.workload] < wlOrder[b.workload]
		}
		return engineOf(a) < engineOf(b)
	})
	for _, k := range order {
		c.Rows = append(c.Rows, row(k, sides[0][k], sides[1][k], o, &warn))
	}
	adjust(c.Rows, o.Alpha)
	c.Warnings = append(c.Warnings, warn.list...)
	return c, nil
}

// Verdicts counts the rows that reached a verdict: a regression, an
// improvement or no significant change. With none, the comparison
// decided nothing.
func (c *Comparison) Verdicts() int {
	n := 0
	for _, r := range c.Rows {
		if r.Status == Compared && r.Verdict != stats.NotComparable && r.Verdict != "" {
			n++
		}
	}
	return n
}

func hasKey(m map[key]int, k key) bool {
	_, ok := m[k]
	return ok
}

func paths(fs []File) []string {
	out := []string{}
	for _, f := range fs {
		out = append(out, f.Path)
	}
	return out
}

// gather collects each key's figures over the files, adding new keys to
// order.
func gather(files []File, order *[]key, seen map[key]bool) map[key]*gathered {
	out := map[key]*gathered{}
	for _, f := range files {
		name := filepath.Base(f.Path)
		host := hostOf(f.Run.Host)
		for i := range f.Run.Results {
			r := &f.Run.Results[i]
			k := keyOf(r)
			if !seen[k] {
				seen[k] = true
				*order = append(*order, k)
			}
			g := out[k]
			if g == nil {
				g = &gathered{first: r}
				out[k] = g
			}
			g.files = appendNew(g.files, name)
			if host != "" {
				g.hosts = appendNew(g.hosts, host)
			}
			if v := versionOf(f.Run, r); v != "" {
				g.versions = appendNew(g.versions, v)
			}
			if c := configOf(f.Run, r); c != "" {
				g.configs = appendNew(g.configs, c)
			}
			var vals []float64
			for _, p := range r.Passes {
				if !p.Warmup && p.Valid && p.Value != nil {
					vals = append(vals, *p.Value)
				}
			}
			// A test is compared on its valid passes (its value comes from
			// them); it is invalid only when none is.
			switch {
			case r.NotApplicable != "":
				g.na = append(g.na, name+": "+r.NotApplicable)
			case (r.Value == nil || len(vals) == 0) && !r.Valid:
				g.invalid = append(g.invalid, name+": "+invalidReason(r))
			case r.Value == nil || len(vals) == 0:
				why := r.NoValue
				if why == "" {
					why = "no valid measured pass has a value"
				}
				g.noValue = append(g.noValue, name+": "+why)
			case !r.Valid:
				g.partial = append(g.partial, fmt.Sprintf("%s: %d of %d measured passes invalid (%s)",
					name, r.MeasuredPasses-len(vals), r.MeasuredPasses, invalidReason(r)))
			}
			g.values = append(g.values, vals...)
		}
	}
	return out
}

func invalidReason(r *results.Result) string {
	switch {
	case len(r.InvalidReasons) > 0:
		if n := len(r.InvalidReasons); n > 1 {
			return fmt.Sprintf("%s (and %d more)", r.InvalidReasons[0], n-1)
		}
		return r.InvalidReasons[0]
	case r.NoValue != "":
		return r.NoValue
	case r.MeasuredPasses == 0:
		return "no measured pass"
	}
	return "marked invalid, no reason recorded"
}

func hostOf(h results.Host) string {
	switch {
	case h.CPUModel == "":
		return h.Hostname
	case h.Hostname == "":
		return h.CPUModel
	}
	return h.Hostname + " (" + h.CPUModel + ")"
}

// versionOf is the version of the engine a result ran on.
func versionOf(run *results.Run, r *results.Result) string {
	if e := engineOf(run, r); e != nil {
		return e.Version
	}
	return ""
}

// configOf names the configuration a result's engine ran: a file of the
// user's own by its path and digest, else hlsbench's rendering ("" when
// the run does not say).
func configOf(run *results.Run, r *results.Result) string {
	e := engineOf(run, r)
	switch {
	case e == nil:
		return ""
	case e.Config != nil:
		return fmt.Sprintf("%s (sha256 %.12s)", e.Config.Path, e.Config.SHA256)
	}
	return "hlsbench's own"
}

func engineOf(run *results.Run, r *results.Result) *results.Engine {
	for i, e := range run.Engines {
		if e.Name == r.Engine && (e.Runtime == "" || e.Runtime == r.Runtime) && (e.Topology == "" || e.Topology == r.Topology) {
			return &run.Engines[i]
		}
	}
	return nil
}

func appendNew(s []string, v string) []string {
	if slices.Contains(s, v) {
		return s
	}
	return append(s, v)
}

func summary(side map[key]*gathered, order []key) string {
	var ks []string
	for _, k := range order {
		if side[k] != nil {
			ks = append(ks, k.String())
		}
	}
	switch {
	case len(ks) == 0:
		return "no results"
	case len(ks) > 3:
		return fmt.Sprintf("%s and %d more", strings.Join(ks[:3], ", "), len(ks)-3)
	}
	return strings.Join(ks, ", ")
}

func row(k key, b, n *gathered, o Options, warn *warnings) Row {
	first := b
	if first == nil {
		first = n
	}
	r := Row{ID: k.workload + "/" + k.test, Workload: k.workload, Test: k.test, Title: first.first.Title,
		Engine: k.engine, Runtime: k.runtime, Topology: k.topology, Unit: first.first.Unit,
		LowerIsBetter: first.first.LowerIsBetter, Base: side(b), New: side(n)}
	if b != nil && n != nil {
		label := strings.TrimSuffix(k.String(), " "+r.ID)
		if len(b.hosts) > 0 && len(n.hosts) > 0 && !sameSet(b.hosts, n.hosts) {
			r.Notes = append(r.Notes, NoteHost)
			warn.add(fmt.Sprintf("base ran on %s, new on %s: a change may be the machine's, not the engine's",
				strings.Join(b.hosts, ", "), strings.Join(n.hosts, ", ")))
		}
		if len(b.versions) > 0 && len(n.versions) > 0 && !sameSet(b.versions, n.versions) {
			r.Notes = append(r.Notes, NoteVersion)
			warn.add(fmt.Sprintf("%s: base ran version %s, new %s", label, strings.Join(b.versions, ", "), strings.Join(n.versions, ", ")))
		}
		if len(b.configs) > 0 && len(n.configs) > 0 && !sameSet(b.configs, n.configs) {
			r.Notes = append(r.Notes, NoteConfig)
			warn.add(fmt.Sprintf("%s: base ran the configuration %s, new %s", label, strings.Join(b.configs, ", "), strings.Join(n.configs, ", ")))
		}
	}
	for _, g := range []*gathered{b, n} {
		if g == nil || len(g.partial) == 0 || len(g.invalid) > 0 || len(g.noValue) > 0 {
			continue
		}
		if !slices.Contains(r.Notes, NotePartial) {
			r.Notes = append(r.Notes, NotePartial)
		}
		for _, p := range g.partial {
			warn.add(fmt.Sprintf("%s: compared on its valid passes only; %s", r.ID, p))
		}
	}
	for _, s := range []State{Missing, NotApplicable, Invalid, NoValue} {
		switch {
		case r.Base.State == s && r.New.State == s:
			r.Status, r.Reason = Status(string(s)+" in both"), r.Base.Reason+"; "+r.New.Reason
		case r.Base.State == s:
			r.Status, r.Reason = Status(string(s)+" in base"), r.Base.Reason
		case r.New.State == s:
			r.Status, r.Reason = Status(string(s)+" in new"), r.New.Reason
		default:
			continue
		}
		return r
	}
	r.Status = Compared
	if b.first.Unit != n.first.Unit || b.first.LowerIsBetter != n.first.LowerIsBetter {
		r.Verdict, r.Reason = stats.NotComparable, fmt.Sprintf("the test changed: %s, %s in base; %s, %s in new",
			b.first.Unit, better(b.first.LowerIsBetter), n.first.Unit, better(n.first.LowerIsBetter))
		return r
	}
	d := Judge(b.values, n.values, r.Unit, r.LowerIsBetter, o)
	r.Verdict, r.Reason, r.Exact = d.Verdict, d.Reason, d.Exact
	r.ChangePct, r.P = finite(d.Change), finite(d.P)
	if sh := d.Shift; sh.Level > 0 {
		r.Shift = &Interval{Estimate: sh.Estimate, Lo: finite(sh.Lo), Hi: finite(sh.Hi), Level: sh.Level}
		if m := d.BaseMedian; m != 0 && !math.IsNaN(m) {
			pct := func(v float64) float64 { return v / math.Abs(m) * 100 }
			r.ShiftPct = &Interval{Estimate: pct(sh.Estimate), Lo: finite(pct(sh.Lo)), Hi: finite(pct(sh.Hi)), Level: sh.Level}
		}
	}
	return r
}

// adjust sets each row's Q, the Benjamini–Hochberg adjustment of the
// p-values of the rows that could reach a verdict (compared, and not
// "not comparable": a test whose sizes or ties keep it from p < alpha
// can make no false discovery, so it does not count among the tests,
// as Tarone's refinement has it), and turns a regression or an
// improvement whose Q is not below alpha into no significant change.
func adjust(rows []Row, alpha float64) {
	var idx []int
	var p []float64
	for i, r := range rows {
		if r.Status == Compared && r.P != nil && r.Verdict != stats.NotComparable {
			idx, p = append(idx, i), append(p, *r.P)
		}
	}
	q := stats.AdjustBH(p)
	for j, i := range idx {
		r := &rows[i]
		r.Q = finite(q[j])
		if (r.Verdict == stats.Regression || r.Verdict == stats.Improvement) && !(q[j] < alpha) {
			r.Verdict = stats.NoChange
			r.Reason = fmt.Sprintf("p = %.3g, but q = %.3g after the Benjamini–Hochberg adjustment over the %d tests that could reach a verdict is not below alpha %g",
				*r.P, q[j], len(idx), alpha)
		}
	}
}

func better(lower bool) string {
	if lower {
		return "lower is better"
	}
	return "higher is better"
}

func side(g *gathered) Side {
	if g == nil {
		return Side{State: Missing, Reason: "no file has it", Values: []float64{}}
	}
	s := Side{State: OK, Values: g.values, EngineVersions: g.versions, Hosts: g.hosts, Files: g.files}
	if s.Values == nil {
		s.Values = []float64{}
	}
	switch {
	case len(g.na) > 0:
		s.State, s.Reason = NotApplicable, strings.Join(g.na, "; ")
	case len(g.invalid) > 0:
		s.State, s.Reason = Invalid, strings.Join(g.invalid, "; ")
	case len(g.noValue) > 0:
		s.State, s.Reason = NoValue, strings.Join(g.noValue, "; ")
	}
	if s.State == OK && len(g.values) > 0 {
		s.Median = finite(stats.Median(g.values))
	}
	return s
}

func finite(v float64) *float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return nil
	}
	return &v
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

// warnings keeps each warning once, in order.
type warnings struct{ list []string }

func (w *warnings) add(s string) {
	if !slices.Contains(w.list, s) {
		w.list = append(w.list, s)
	}
}

// runWarnings are what one run's file says about its own figures.
func runWarnings(which string, f File, warn *warnings) {
	name := which + " " + filepath.Base(f.Path)
	switch r := f.Run; r.Status {
	case results.StatusInterrupted:
		warn.add(name + ": the run was interrupted; only its finished passes are compared")
	case results.StatusKilled, results.StatusRunning:
		warn.add(name + ": the run never finished (killed, or still running); only its finished passes are compared")
	case results.StatusFailed:
		warn.add(fmt.Sprintf("%s: the run failed (%s); only its finished passes are compared", name, r.Error))
	}
	if in := f.Run.Interference; in != nil && in.BusyPasses > 0 {
		warn.add(fmt.Sprintf("%s: other processes were busy on the measured CPUs in %d of %d passes", name, in.BusyPasses, in.Passes))
	}
}

// conds is a workload's conditions in one file. known is nil when the
// file recorded them (every field counts, zero included); otherwise it
// holds the fields read from the run's config, for files written before
// runs recorded their workloads.
type conds struct {
	c     results.Conditions
	known map[string]bool
	where string
}

// checkConditions returns a ConditionsError for the first workload in
// both sides whose conditions differ between any two files, and warns
// where they could be checked only in part, or not at all.
func checkConditions(base, new []File, sides [2]map[key]*gathered, warn *warnings) error {
	inBoth := map[string]bool{}
	var wls []string
	for k := range sides[0] {
		if sides[1][k] != nil && !inBoth[k.workload] {
			inBoth[k.workload] = true
			wls = append(wls, k.workload)
		}
	}
	sort.Strings(wls)
	type gap struct{ files, workloads []string }
	partial, unknown := map[string]*gap{}, map[string]*gap{}
	note := func(m map[string]*gap, which, file, wl string) {
		g := m[which]
		if g == nil {
			g = &gap{}
			m[which] = g
		}
		g.files, g.workloads = appendNew(g.files, file), appendNew(g.workloads, wl)
	}
	for _, wl := range wls {
		var all []conds
		for i, files := range [][]File{base, new} {
			which := [2]string{"base", "new"}[i]
			for _, f := range files {
				if !hasWorkload(f.Run, wl) {
					continue
				}
				name := filepath.Base(f.Path)
				c, ok := conditionsOf(f.Run, wl)
				switch {
				case !ok:
					note(unknown, which, name, wl)
					continue
				case c.known != nil:
					note(partial, which, name, wl)
				}
				c.where = which + " " + name
				all = append(all, c)
			}
		}
		for i := range all {
			for j := i + 1; j < len(all); j++ {
				if diff := differ(all[i], all[j]); len(diff) > 0 {
					return &ConditionsError{Workload: wl, Between: all[i].where + " and " + all[j].where, Diffs: diff}
				}
			}
		}
	}
	for _, which := range []string{"base", "new"} {
		if g := partial[which]; g != nil {
			warn.add(fmt.Sprintf("%s %s predate%s recorded workload conditions: for %s only the rate, connections, pass duration and timeout in the config were checked",
				which, filesText(g.files), plural(len(g.files) == 1, "s", ""), strings.Join(g.workloads, ", ")))
		}
		if g := unknown[which]; g != nil {
			warn.add(fmt.Sprintf("%s %s record%s no workload conditions: those of %s were not checked",
				which, filesText(g.files), plural(len(g.files) == 1, "s", ""), strings.Join(g.workloads, ", ")))
		}
	}
	return nil
}

func filesText(files []string) string {
	if len(files) > 3 {
		return fmt.Sprintf("%s and %d more files", strings.Join(files[:3], ", "), len(files)-3)
	}
	return strings.Join(files, ", ")
}

func plural(one bool, a, b string) string {
	if one {
		return a
	}
	return b
}

func hasWorkload(run *results.Run, wl string) bool {
	for i := range run.Results {
		if keyOf(&run.Results[i]).workload == wl {
			return true
		}
	}
	return false
}

// conditionsOf finds a workload's conditions in a run: recorded, else read
// in part from the config of older files, else unknown (false).
func conditionsOf(run *results.Run, wl string) (conds, bool) {
	if w, ok := run.WorkloadOf(wl); ok {
		return conds{c: w.Conditions}, true
	}
	ws, _ := run.Config["workload_settings"].(map[string]any)
	s, ok := ws[wl].(map[string]any)
	if !ok {
		return conds{}, false
	}
	c := conds{known: map[string]bool{}}
	if rate, ok := s["rate"].(float64); ok {
		if over, _ := run.Config["rate_override"].(float64); over > 0 && rate > 0 {
			rate = over // as workloads.Spec.WithRate applied it
		}
		c.c.RateRPS, c.known["rate_rps"] = rate, true
		if d, ok := durationIn(run.Config, "pass_duration"); ok && rate > 0 {
			c.c.PassDuration, c.known["pass_duration"] = d, true
		}
	}
	if n, ok := s["connections"].(float64); ok {
		c.c.Connections, c.known["connections"] = int(n), true
	}
	if d, ok := durationIn(run.Config, "timeout"); ok {
		c.c.Timeout, c.known["timeout"] = d, true
	}
	return c, true
}

func durationIn(m map[string]any, name string) (results.Duration, bool) {
	s, _ := m[name].(string)
	d, err := time.ParseDuration(s)
	return results.Duration(d), err == nil && s != ""
}

// differ is Comparable's list of differences. When a side's conditions
// were read from an old config, only the fields both sides know are
// compared; a recorded field that is zero (left out of the file) is not
// known then.
func differ(a, b conds) []string {
	if a.known == nil && b.known == nil {
		_, diff := a.c.Comparable(b.c)
		return diff
	}
	ka, kb := fieldsKnown(a), fieldsKnown(b)
	keep := func(f string) bool { return ka[f] && kb[f] }
	_, diff := project(a.c, keep).Comparable(project(b.c, keep))
	return diff
}

func fieldsKnown(c conds) map[string]bool {
	if c.known != nil {
		return c.known
	}
	m := map[string]bool{}
	for f := range asMap(c.c) {
		m[f] = true
	}
	return m
}

// asMap is the conditions as JSON names them, zero fields left out.
func asMap(c results.Conditions) map[string]any {
	b, _ := json.Marshal(c)
	m := map[string]any{}
	_ = json.Unmarshal(b, &m)
	return m
}

// project keeps the fields keep accepts and zeroes the others.
func project(c results.Conditions, keep func(string) bool) results.Conditions {
	m := asMap(c)
	for f := range m {
		if !keep(f) {
			delete(m, f)
		}
	}
	b, _ := json.Marshal(m)
	var out results.Conditions
	_ = json.Unmarshal(b, &out)
	return out
}

// Judge compares two samples of pass values as compare does: the U test
// and threshold of stats.Compare, and a latency change under the
// generator's resolution is no change. The report calls ties with it.
func Judge(base, new []float64, unit string, lowerIsBetter bool, o Options) stats.Delta {
	d := stats.Compare(base, new, lowerIsBetter, o.Threshold, o.Alpha)
	if (d.Verdict == stats.Regression || d.Verdict == stats.Improvement) && unit == "ms" &&
		math.Abs(d.Shift.Estimate) < o.ResolutionMs {
		d.Verdict, d.Reason = stats.NoChange, fmt.Sprintf("the shift, %+.3f ms, is under the %g ms resolution of the generator's timing",
			d.Shift.Estimate, o.ResolutionMs)
	}
	return d
}

// Variants compares variants of one run or suite side by side: the rows of
// base[i] against those of new[i], for each i, over the same files (an A/B
// suite runs them interleaved pass by pass: --engine a=varnish,b=varnish).
// Each pair's rows are named "base→new"; a name not in the files is an
// error that lists the ones there.
func Variants(files []File, base, new []string, o Options) (*Comparison, error) {
	if len(base) == 0 || len(base) != len(new) {
		return nil, fmt.Errorf("base %v and new %v: want as many names on each side, paired in order", base, new)
	}
	have := map[string]bool{}
	var names []string
	for _, f := range files {
		for _, r := range f.Run.Results {
			if !have[r.Engine] {
				have[r.Engine] = true
				names = append(names, r.Engine)
			}
		}
	}
	pair := map[string]string{} // engine → its pair's name
	for i := range base {
		for _, n := range []string{base[i], new[i]} {
			switch {
			case !have[n]:
				return nil, fmt.Errorf("%s: no results of that name (these files have %s)", n, strings.Join(names, ", "))
			case pair[n] != "":
				return nil, fmt.Errorf("%s: named twice", n)
			}
		}
		if base[i] == new[i] {
			return nil, fmt.Errorf("%s: the same on both sides", base[i])
		}
		p := base[i] + "→" + new[i]
		pair[base[i]], pair[new[i]] = p, p
	}
	side := func(keep []string) []File {
		var out []File
		for _, f := range files {
			run := *f.Run
			run.Results, run.Engines = nil, nil
			for _, r := range f.Run.Results {
				if slices.Contains(keep, r.Engine) {
					r.Engine = pair[r.Engine]
					run.Results = append(run.Results, r)
				}
			}
			for _, e := range f.Run.Engines {
				if slices.Contains(keep, e.Name) {
					e.Name = pair[e.Name]
					run.Engines = append(run.Engines, e)
				}
			}
			if len(run.Results) > 0 {
				out = append(out, File{Path: f.Path, Run: &run})
			}
		}
		return out
	}
	c, err := Runs(side(base), side(new), o)
	if err != nil {
		return nil, err
	}
	return c, nil
}
