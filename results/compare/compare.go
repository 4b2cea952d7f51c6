// Package compare sets two groups of runs side by side: for every engine
// (with its runtime and topology) and test, the measured passes of the
// base runs against those of the new runs, judged with results/stats
// (medians, Mann-Whitney U, a direction-aware verdict).
//
// A side is never judged on the passes that survived. A measured pass
// that gave no exact value because of the engine — saturated (it did not
// carry its rate), failed, censored (a bound, "did not recover within
// 30 s"), or without a value — enters the U test at the worst rank, worse
// than every valid pass of either side and tied with the other such
// passes. A pass spoiled by the instrument (the generator's own lateness
// or busy CPUs) says nothing of the engine: the verdict must hold with it
// counted worst and counted best, or the row is inconclusive.
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
	// ToleranceMs is the generator's timing tolerance: the smallest change
	// of a latency's median, in ms, reported as a regression or an
	// improvement. Below it the generator's own timing (its tolerance for
	// lateness, loadgen.LagToleranceFloor) cannot tell a change from noise.
	// It is a tolerance, not a resolution: the histograms resolve 1 µs.
	ToleranceMs float64
}

// DefaultToleranceMs is the generator's timing tolerance: its lateness
// tolerance floor.
const DefaultToleranceMs = 0.05

// Defaults are the options of `hlsbench compare` without flags.
func Defaults() Options {
	return Options{Threshold: stats.DefaultThreshold, Alpha: stats.DefaultAlpha, ToleranceMs: DefaultToleranceMs}
}

// Comparison is the outcome of Runs.
type Comparison struct {
	Threshold   float64 `json:"threshold_pct"`
	Alpha       float64 `json:"alpha"`
	ToleranceMs float64 `json:"tolerance_ms"`
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

// Inconclusive is the verdict of a row whose passes spoiled by the
// instrument leave it undecided: counted at the worst rank they make it a
// regression or an improvement, counted at the best they do not. It is no
// verdict: measure again, on a quieter machine or with more passes.
const Inconclusive stats.Verdict = "inconclusive"

// Inconclusive are the rows whose verdict is Inconclusive.
func (c *Comparison) Inconclusive() []Row {
	var out []Row
	for _, r := range c.Rows {
		if r.Verdict == Inconclusive {
			out = append(out, r)
		}
	}
	return out
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
	// percent of the base median; null when not compared, or when the
	// estimate lies among the passes that gave no value (ShiftBeyond).
	Shift    *Interval `json:"shift,omitempty"`
	ShiftPct *Interval `json:"shift_pct,omitempty"`
	// ShiftBeyond is +1 when the shift's estimate is new's passes that gave
	// no value against base's valid ones (new is beyond every valid pass,
	// in the direction that is worse for the test), −1 the other way, 0
	// when the estimate is a figure.
	ShiftBeyond int `json:"shift_beyond,omitempty"`
	// Outright says the verdict needed no test: one side's median pass
	// gave no value (saturated, failed, censored) and the other's did. A
	// test of null against a figure has nothing to be unsure of, and it
	// takes no part in the Benjamini–Hochberg adjustment.
	Outright bool `json:"outright,omitempty"`
	// Cause is, for an outright verdict, what the side without a value
	// met, in a few words ("saturated: carried 299.9 of 1000 rps, 3 of 3
	// passes"): Reason has it whole.
	Cause string `json:"cause,omitempty"`
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
	// NotePartial: some measured passes gave no valid value on a side;
	// they enter the test at the worst rank, or both ways when the
	// instrument spoiled them (a warning says which).
	NotePartial = "invalid passes ranked"
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
	// Worst counts the measured passes that gave no exact value because
	// of the engine (saturated, failed, censored, none): they enter the
	// test at the worst rank. Late counts those the instrument spoiled
	// (the generator's own lateness or busy CPUs): the verdict must hold
	// with them counted worst and best.
	Worst int `json:"worst,omitempty"`
	Late  int `json:"late,omitempty"`
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
	first  *results.Result
	values []float64
	worst  int // measured passes without an exact value, the engine's doing
	late   int // measured passes the instrument spoiled
	// lateMax are the published values of the spoiled passes of a
	// latency (a part of late): counted from the intended send time,
	// they hold the generator's lateness on top of the engine's, so the
	// engine's figure was at most that.
	lateMax []float64
	invalid []string
	partial []string // files whose test had some invalid passes
	noValue []string
	// brief is each of invalid, partial and noValue in a few words (the
	// first clause of its reason, with how many passes), for a summary.
	brief    []string
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
	c := &Comparison{Threshold: o.Threshold, Alpha: o.Alpha, ToleranceMs: o.ToleranceMs, Base: paths(base), New: paths(new), Rows: []Row{}, Warnings: []string{}}
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
// improvement or no significant change (not an inconclusive row). With
// none, the comparison decided nothing.
func (c *Comparison) Verdicts() int {
	n := 0
	for _, r := range c.Rows {
		if r.Status == Compared && r.Verdict != stats.NotComparable && r.Verdict != Inconclusive && r.Verdict != "" {
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
			worst, late := 0, 0
			var lateMax []float64
			for _, p := range r.Passes {
				switch {
				case p.Warmup:
				case p.Valid && p.Value != nil && p.NoValue == "":
					vals = append(vals, *p.Value)
				case instrumentSpoiled(p):
					late++
					if p.Value != nil && p.NoValue == "" && r.Unit == "ms" && r.LowerIsBetter {
						lateMax = append(lateMax, *p.Value)
					}
				default:
					worst++
				}
			}
			if r.Value == nil && r.NotApplicable == "" && worst+late == 0 {
				// The test says it has no figure though its passes have
				// values: it is null, and a null ranks below every figure.
				worst, vals = len(vals), nil
			}
			// A test's state says whether it has valid passes (its value
			// comes from them): it is invalid when none is.
			switch {
			case r.NotApplicable != "":
				g.na = append(g.na, name+": "+r.NotApplicable)
			case (r.Value == nil || len(vals) == 0) && !r.Valid:
				g.invalid = append(g.invalid, name+": "+invalidReason(r))
				g.brief = appendNew(g.brief, briefReason(r, worst+late, worst+late+len(vals)))
			case r.Value == nil || len(vals) == 0:
				why := r.NoValue
				if why == "" {
					why = "no valid measured pass has a value"
				}
				g.noValue = append(g.noValue, name+": "+why)
				g.brief = appendNew(g.brief, firstClause(why))
			case worst+late > 0:
				g.partial = append(g.partial, fmt.Sprintf("%s: %d of %d measured passes without a valid value (%s)",
					name, worst+late, worst+late+len(vals), invalidReason(r)))
				g.brief = appendNew(g.brief, briefReason(r, worst+late, worst+late+len(vals)))
			}
			g.values = append(g.values, vals...)
			if r.NotApplicable == "" {
				g.worst += worst
				g.late += late
				g.lateMax = append(g.lateMax, lateMax...)
			}
		}
	}
	return out
}

// instrumentSpoiled says whether a measured pass is invalid only because
// of the instrument: every reason is the generator's (its own lateness,
// its busy CPUs) or the host's (other processes, stalls), and the engine
// carried the rate. Such a pass says nothing of the engine, better or
// worse; a saturated, failed or censored pass does. The pass's class
// (results.Pass.InvalidBy) says so where it was recorded; a file written
// before it was is read by its reasons' words, as it always was.
func instrumentSpoiled(p results.Pass) bool {
	if p.Valid || p.Saturated != "" || p.Errors > 0 || len(p.InvalidReasons) == 0 {
		return false
	}
	if p.InvalidBy != "" {
		return p.ByInstrument()
	}
	for _, why := range p.InvalidReasons {
		if !slices.ContainsFunc(instrumentReasons, func(s string) bool { return strings.Contains(why, s) }) {
			return false
		}
	}
	return true
}

// instrumentReasons mark a pass's invalid reason as the instrument's in a
// file that did not record its class: workloads' words for the
// generator's lateness and busy cores, and for the host that spoiled a
// pass (workloads.hostSpoil, the stalls of its CPUs).
var instrumentReasons = []string{"generator", "the host spoiled the pass", "stalls of", "stalled"}

// briefReason is invalidReason in a few words: the first clause of the
// first reason, and how many of the measured passes gave no valid value
// ("saturated: carried 299.9 of 1000 rps, 3 of 3 passes").
func briefReason(r *results.Result, bad, measured int) string {
	why := ""
	for _, p := range r.Passes {
		if !p.Warmup && p.Saturated != "" {
			why = p.Saturated
			break
		}
	}
	switch {
	case why != "":
	case len(r.InvalidReasons) > 0:
		why = r.InvalidReasons[0]
	case r.NoValue != "":
		why = r.NoValue
	default:
		why = "no valid value"
	}
	return fmt.Sprintf("%s, %d of %d passes", firstClause(why), bad, measured)
}

// firstClause is a reason up to its first "; ": the workloads' reasons
// put what happened first and its evidence after.
func firstClause(why string) string {
	s, _, _ := strings.Cut(why, "; ")
	return s
}

func invalidReason(r *results.Result) string {
	// Saturation first: the engine did not carry its rate, whatever else
	// the host or the generator did in the pass.
	for _, p := range r.Passes {
		if !p.Warmup && p.Saturated != "" {
			if r.SaturatedPasses > 1 {
				return fmt.Sprintf("pass %d: %s (and %d more saturated)", p.Index, p.Saturated, r.SaturatedPasses-1)
			}
			return fmt.Sprintf("pass %d: %s", p.Index, p.Saturated)
		}
	}
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
	// A valid test lists no reason for the passes the host or the
	// instrument spoiled: their own say it.
	for _, p := range r.Passes {
		if !p.Warmup && p.ByInstrument() {
			why := fmt.Sprintf("pass %d: %s", p.Index, p.InvalidReasons[0])
			if r.SpoiledPasses > 1 {
				why += fmt.Sprintf(" (and %d more spoiled by the host or the instrument)", r.SpoiledPasses-1)
			}
			return why
		}
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
			warn.add(fmt.Sprintf("%s: passes without a valid value enter the test at the worst rank (the instrument's both ways); %s", r.ID, p))
		}
	}
	states := []State{Missing, NotApplicable, Invalid, NoValue}
	if b != nil && n != nil && (len(b.values)+len(n.values) > 0 || b.late+n.late > 0) && b.measured() > 0 && n.measured() > 0 {
		// A side with no valid value against one with values is judged,
		// not skipped: null where the base had a figure is a regression.
		// So is a failed side against one the instrument spoiled, which
		// carried its rate. Failures on both sides are a tie, nothing
		// compared.
		states = states[:2]
	}
	for _, s := range states {
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
	d, outright := judgeBounded(b, n, r.Unit, r.LowerIsBetter, o)
	if len(b.values)+len(n.values) == 0 && !outright {
		// Ranks alone, with no figure on either side, decide only a
		// failure against a pass that carried its rate: "no change" between
		// two sides that measured nothing is no finding.
		d.Verdict = Inconclusive
		d.Reason = fmt.Sprintf("%s: no valid pass on either side (the instrument spoiled %d of base's %d and %d of new's %d measured passes): nothing measured to decide on; measure again on a quieter machine",
			Inconclusive, b.late, b.measured(), n.late, n.measured())
	}
	r.Verdict, r.Reason, r.Exact, r.Outright = d.Verdict, d.Reason, d.Exact, outright
	if outright {
		// No figure measures a null against a figure: the shift is beyond
		// every one.
		r.ShiftBeyond = 1
		if d.Verdict == stats.Improvement {
			r.ShiftBeyond = -1
		}
		d.Shift = stats.Shift{}
		// The null side's own reasons say what happened: "saturated:
		// carried 2000 of 5000 rps", "did not recover within 30 s".
		g := n
		if d.Verdict == stats.Improvement {
			g = b
		}
		if why := slices.Concat(g.invalid, g.noValue, g.partial); len(why) > 0 {
			r.Reason += "; " + strings.Join(why, "; ")
		}
		r.Cause = strings.Join(g.brief, "; ")
	}
	r.ChangePct, r.P = finite(d.Change), finite(d.P)
	if sh := d.Shift; math.IsInf(sh.Estimate, 0) {
		r.ShiftBeyond = 1
		if (sh.Estimate > 0) != r.LowerIsBetter {
			r.ShiftBeyond = -1
		}
	} else if sh.Level > 0 {
		r.Shift = &Interval{Estimate: sh.Estimate, Lo: finite(sh.Lo), Hi: finite(sh.Hi), Level: sh.Level}
		if m := stats.Median(b.values); m != 0 && !math.IsNaN(m) {
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
// as Tarone's refinement has it, and neither does an inconclusive row,
// which decides nothing), and turns a regression or an
// improvement whose Q is not below alpha into no significant change.
func adjust(rows []Row, alpha float64) {
	var idx []int
	var p []float64
	for i, r := range rows {
		if r.Status == Compared && r.P != nil && r.Verdict != stats.NotComparable && r.Verdict != Inconclusive && !r.Outright {
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
	s := Side{State: OK, Values: g.values, Worst: g.worst, Late: g.late, EngineVersions: g.versions, Hosts: g.hosts, Files: g.files}
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
// generator's timing tolerance is no change. The report calls ties with it.
func Judge(base, new []float64, unit string, lowerIsBetter bool, o Options) stats.Delta {
	d := stats.Compare(base, new, lowerIsBetter, o.Threshold, o.Alpha)
	if (d.Verdict == stats.Regression || d.Verdict == stats.Improvement) && unit == "ms" &&
		math.Abs(d.Shift.Estimate) < o.ToleranceMs {
		d.Verdict, d.Reason = stats.NoChange, fmt.Sprintf("the shift, %+.3f ms, is under the generator's %g ms timing tolerance",
			d.Shift.Estimate, o.ToleranceMs)
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

// measured counts a side's measured passes that entered the test: valid,
// the engine's worst and the instrument's spoiled.
func (g *gathered) measured() int { return len(g.values) + g.worst + g.late }

// JudgeRanked is Judge with the passes that gave no exact value:
// baseWorst and newWorst of them (saturated, failed, censored, without a
// value) enter the U test tied at the worst rank, worse than every valid
// pass of either side — a pass that did not carry its rate is slower than
// every pass that did — and the Hodges–Lehmann shift counts them beyond
// every valid value (an estimate among them is ±Inf). When one side's
// median pass is among them and the other's is not, the verdict needs no
// test: a null where the other side has a figure is a regression (or an
// improvement). With no such passes it is Judge.
func JudgeRanked(base, new []float64, baseWorst, newWorst int, unit string, lowerIsBetter bool, o Options) stats.Delta {
	d, _ := judgeRanked(base, new, [2]int{baseWorst, newWorst}, [2]int{}, [2]int{}, unit, lowerIsBetter, o)
	return d
}

// judgeBounded judges a row's sides. Passes the instrument spoiled are
// neither the engine's failures nor its figures: the verdict is judged
// twice, once with them at the worst rank on new's side and the best on
// base's, once the other way round, and must be the same both times.
// When one way finds a regression or an improvement and the other does
// not, the row is Inconclusive.
func judgeBounded(b, n *gathered, unit string, lowerIsBetter bool, o Options) (stats.Delta, bool) {
	if b.late == 0 && n.late == 0 {
		return judgeRanked(b.values, n.values, [2]int{b.worst, n.worst}, [2]int{}, [2]int{}, unit, lowerIsBetter, o)
	}
	// For new: base's spoiled passes worst, new's best; against new: the
	// other way round. Counted worst, a spoiled pass still carried its
	// rate: it ranks below every valid pass and above every failure — or,
	// for a latency, at its own published value, counted from the
	// intended send time: the engine's was no slower.
	worst := [2]int{b.worst, n.worst}
	bMax, nMax := append(slices.Clone(b.values), b.lateMax...), append(slices.Clone(n.values), n.lateMax...)
	bPoor, nPoor := b.late-len(b.lateMax), n.late-len(n.lateMax)
	fav, favOut := judgeRanked(bMax, n.values, worst, [2]int{bPoor, 0}, [2]int{0, n.late}, unit, lowerIsBetter, o)
	unf, unfOut := judgeRanked(b.values, nMax, worst, [2]int{0, nPoor}, [2]int{b.late, 0}, unit, lowerIsBetter, o)
	decides := func(v stats.Verdict) bool { return v == stats.Regression || v == stats.Improvement }
	switch {
	case fav.Verdict == unf.Verdict && fav.Verdict == stats.Improvement:
		// The figures of the way least favourable to the verdict.
		return unf, unfOut
	case fav.Verdict == unf.Verdict || !decides(fav.Verdict) && !decides(unf.Verdict):
		return fav, favOut && unfOut
	}
	d, _ := judgeRanked(b.values, n.values, worst, [2]int{}, [2]int{}, unit, lowerIsBetter, o)
	d.Verdict = Inconclusive
	d.Reason = fmt.Sprintf("%s: the instrument spoiled %d of base's and %d of new's measured passes (the generator's own lateness or busy CPUs; they say nothing of the engine): counted worst for new it is %s, counted best %s; measure again on a quieter machine or with more passes",
		Inconclusive, b.late, n.late, unf.Verdict, fav.Verdict)
	return d, false
}

// judgeRanked is JudgeRanked with worst[i] passes at the worst rank,
// poor[i] just above it (worse than every valid pass, better than every
// failure) and best[i] at the best rank, on base's (0) and new's (1)
// side; outright says the verdict needed no test.
func judgeRanked(base, new []float64, worst, poor, best [2]int, unit string, lowerIsBetter bool, o Options) (stats.Delta, bool) {
	if worst == [2]int{} && poor == [2]int{} && best == [2]int{} {
		return Judge(base, new, unit, lowerIsBetter, o), false
	}
	bad := math.Inf(1)
	if !lowerIsBetter {
		bad = math.Inf(-1)
	}
	// A quarter of the largest float: the mean of two is still finite.
	low := math.Copysign(math.MaxFloat64/4, bad)
	b, n := ranked(base, worst[0], poor[0], best[0], bad, low), ranked(new, worst[1], poor[1], best[1], bad, low)
	d := stats.Delta{BaseMedian: stats.Median(b), NewMedian: stats.Median(n), Change: math.NaN(), P: math.NaN(),
		MinP: math.NaN(), ShiftPct: math.NaN(), BaseN: len(b), NewN: len(n)}
	not := func(why string) (stats.Delta, bool) {
		d.Verdict, d.Reason = stats.NotComparable, why
		return d, false
	}
	switch {
	case len(b) == 0 && len(n) == 0:
		return not("no values in base or new")
	case len(b) == 0:
		return not("no values in base")
	case len(n) == 0:
		return not("no values in new")
	}
	d.Change = change(d.BaseMedian, d.NewMedian)
	level := 1 - o.Alpha
	// For the shift a poor pass is as far as a failure: beyond every
	// figure.
	if sh, err := shiftRanked(base, new, [2]int{worst[0] + poor[0], worst[1] + poor[1]}, best, lowerIsBetter, level); err == nil {
		d.Shift = sh
		d.ShiftPct = change(stats.Median(base), stats.Median(base)+sh.Estimate)
		if math.IsInf(sh.Estimate, 0) {
			d.ShiftPct = sh.Estimate
		}
	}
	t, err := stats.MannWhitneyU(b, n)
	if err != nil {
		return not(err.Error())
	}
	d.P, d.Exact, d.MinP = t.P, t.Exact, t.MinP
	worse := func(d stats.Delta) stats.Verdict {
		if (d.Shift.Estimate > 0) == lowerIsBetter {
			return stats.Regression
		}
		return stats.Improvement
	}
	spoiled := fmt.Sprintf("%d of base's %d and %d of new's %d measured passes gave no valid value (saturated, failed, censored or none)",
		worst[0], len(b), worst[1], len(n))
	switch bm, nm := d.BaseMedian == bad, d.NewMedian == bad; {
	case nm && !bm:
		d.Verdict, d.Reason = stats.Regression, "new's median pass gave no valid value, base's did: "+spoiled
		return d, true
	case bm && !nm:
		d.Verdict, d.Reason = stats.Improvement, "base's median pass gave no valid value, new's did: "+spoiled
		return d, true
	}
	if floor := stats.SmallestP(len(b), len(n)); floor >= o.Alpha {
		return not(fmt.Sprintf("too few measured passes: %d in base and %d in new can never give p < %g (the smallest p is %.3g); %d in each can",
			len(b), len(n), o.Alpha, floor, stats.MinSamples(o.Alpha)))
	}
	if t.MinP >= o.Alpha && d.Shift.Estimate != 0 && math.Abs(d.ShiftPct) >= o.Threshold {
		return not(fmt.Sprintf("too many ties: %s, tied at the worst rank, and no split of the passes into %d and %d can give p < %g (the smallest p is %.3g)",
			spoiled, len(b), len(n), o.Alpha, t.MinP))
	}
	// The threshold and the timing tolerance are held against the shift, a
	// figure; a pass that gave none is no figure a few percent off. When
	// the U test finds new worse (or better), new has the larger (or
	// smaller) share of such passes, and the shares themselves differ
	// (the same test on "gave none" against "gave one"), that difference
	// is the change, whatever the shift of the rest: one such pass in 20
	// does not turn a shift under the threshold into a regression.
	share := func(x []float64) float64 { return float64(count(x, bad)+count(x, low)) / float64(len(x)) }
	newWorse := (t.U < float64(len(b)*len(n))/2) == lowerIsBetter
	byRank := d.P < o.Alpha && share(n) != share(b) && newWorse == (share(n) > share(b))
	if byRank {
		ind := func(x []float64) []float64 {
			out := make([]float64, len(x))
			for i, v := range x {
				if v == bad || v == low {
					out[i] = 1
				}
			}
			return out
		}
		s, err := stats.MannWhitneyU(ind(b), ind(n))
		byRank = err == nil && s.P < o.Alpha
	}
	small := ""
	switch {
	case d.Shift.Estimate == 0:
		small = "the shift is 0"
	case !(math.Abs(d.ShiftPct) >= o.Threshold):
		small = fmt.Sprintf("the shift, %+.2f%%, is under the %g%% threshold", d.ShiftPct, o.Threshold)
	case unit == "ms" && math.Abs(d.Shift.Estimate) < o.ToleranceMs:
		small = fmt.Sprintf("the shift, %+.3f ms, is under the generator's %g ms timing tolerance", d.Shift.Estimate, o.ToleranceMs)
	}
	switch {
	case d.P >= o.Alpha:
		d.Verdict, d.Reason = stats.NoChange, fmt.Sprintf("p = %.3g is not below alpha %g", d.P, o.Alpha)
	case small != "" && byRank:
		d.Verdict = stats.Improvement
		if newWorse {
			d.Verdict = stats.Regression
		}
		d.Reason = small + ", but " + spoiled + ": ranked worst, they are the change"
	case small != "":
		d.Verdict, d.Reason = stats.NoChange, small
	default:
		d.Verdict, d.Reason = worse(d), ""
	}
	return d, false
}

// count is how many of x are v.
func count(x []float64, v float64) int {
	n := 0
	for _, e := range x {
		if e == v {
			n++
		}
	}
	return n
}

// ranked is a side's values with worst passes at bad, poor ones at low
// and best ones at −bad.
func ranked(values []float64, worst, poor, best int, bad, low float64) []float64 {
	out := slices.Clone(values)
	for range worst {
		out = append(out, bad)
	}
	for range poor {
		out = append(out, low)
	}
	for range best {
		out = append(out, -bad)
	}
	return out
}

// shiftRanked is the Hodges–Lehmann shift with worst and best passes: a
// difference between a ranked pass and a valid one is infinite, between
// two ranked passes of the same end zero. stats.HodgesLehmann takes no
// infinities (∞ − ∞), so the ranked passes stand in as finite values
// far enough beyond the valid ones that every difference keeps the order
// it has with infinities, and so does the mean of two neighbours (the
// median of an even count): a figure beyond the valid values' span is an
// infinity.
func shiftRanked(base, new []float64, worst, best [2]int, lowerIsBetter bool, level float64) (stats.Shift, error) {
	valid := append(slices.Clone(base), new...)
	lo, hi := 0.0, 0.0
	if len(valid) > 0 {
		lo, hi = slices.Min(valid), slices.Max(valid)
	}
	span := hi - lo
	top, bottom := hi+4*span+1, lo-4*span-1
	if !lowerIsBetter {
		top, bottom = bottom, top
	}
	side := func(v []float64, w, b int) []float64 {
		out := slices.Clone(v)
		for range w {
			out = append(out, top)
		}
		for range b {
			out = append(out, bottom)
		}
		return out
	}
	sh, err := stats.HodgesLehmann(side(base, worst[0], best[0]), side(new, worst[1], best[1]), level)
	if err != nil {
		return sh, err
	}
	inf := func(v float64) float64 {
		if math.Abs(v) > span {
			return math.Inf(int(math.Copysign(1, v)))
		}
		return v
	}
	sh.Estimate, sh.Lo, sh.Hi = inf(sh.Estimate), inf(sh.Lo), inf(sh.Hi)
	return sh, nil
}

// change is new's change from base in percent, as stats has it; ±Inf
// when the base is 0 or new is infinite, NaN when base is infinite.
func change(base, new float64) float64 {
	switch {
	case base == new:
		return 0
	case math.IsInf(base, 0):
		return math.NaN()
	case base == 0 || math.IsInf(new, 0):
		return math.Inf(int(math.Copysign(1, new-base)))
	}
	return (new - base) / math.Abs(base) * 100
}
