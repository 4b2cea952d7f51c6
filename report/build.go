package report

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

	"github.com/hlsbench/hlsbench/results"
	"github.com/hlsbench/hlsbench/results/compare"
)

// Input is what a report is built from: result files and, for a suite
// directory, its manifest.
type Input struct {
	Sources []Source
	// Manifest is the suite directory's, nil for a list of files.
	Manifest *results.Manifest
	// ManifestRaw is its bytes, copied beside the runs.
	ManifestRaw []byte
}

// Options tune the statistics behind a finding (compare's, the same code)
// and name the page.
type Options struct {
	Compare compare.Options
	// Title replaces the page's title.
	Title string
	// Catalog is what the workloads declare of themselves for the page;
	// nil shows each in the order found, with its common conditions alone.
	Catalog Catalog
}

// Catalog is what the workloads declare that the page shows of them: the
// order of their sections, the lines their own conditions make, what a
// test's unit counts and which tests are capacities. workloads.Catalog is
// theirs.
type Catalog interface {
	// Rank orders the sections, lowest first (ties as found).
	Rank(workload string) int
	// ConditionFacts are the lines of a workload's own conditions: load
	// facts follow the rate, the others the object's size and range.
	ConditionFacts(workload string, c results.Conditions) (load, rest []Fact)
	// UnitName says what a test's unit counts, or "" when the unit says it.
	UnitName(workload, test string) string
	// Ranked says whether a workload's tests are capacities: rates ranked
	// on a line of their own.
	Ranked(workload string) bool
}

// noCatalog is the page without the workloads' declarations.
type noCatalog struct{}

func (noCatalog) Rank(string) int { return 0 }
func (noCatalog) ConditionFacts(string, results.Conditions) ([]Fact, []Fact) {
	return nil, nil
}
func (noCatalog) UnitName(string, string) string { return "" }
func (noCatalog) Ranked(string) bool             { return false }

// DefaultTitle is the page's title without --title.
const DefaultTitle = "HTTP caching proxies for HLS delivery"

// DefaultOptions are compare's defaults.
func DefaultOptions() Options {
	return Options{Compare: compare.Defaults(), Title: DefaultTitle}
}

// Read loads the inputs named on the command line: suite directories,
// directories of run files, or result files. A directory with a
// manifest.json gives the runs its manifest lists; one without gives its
// run-*.json files. Several suite directories (a page measured in parts)
// are reported as one suite, under one merged manifest.
func Read(args []string) (*Input, error) {
	if len(args) == 0 {
		return nil, errors.New("no input: give a suite directory or result files")
	}
	in := &Input{}
	var paths []string
	// Suite directories: one is reported with its manifest as it is;
	// several (a page measured in parts) with one merged manifest.
	var suites []string
	var manifests []results.Manifest
	for _, a := range args {
		st, err := os.Stat(a)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", a, err)
		}
		if !st.IsDir() {
			paths = append(paths, a)
			continue
		}
		m, err := results.ReadManifest(a)
		switch {
		case err == nil:
			if len(m.Runs) == 0 {
				return nil, fmt.Errorf("%s: its %s lists no run file: the suite never started a run", a, results.ManifestName)
			}
			suites, manifests = append(suites, a), append(manifests, m)
			for _, name := range m.Runs {
				paths = append(paths, filepath.Join(a, name))
			}
		case errors.Is(err, os.ErrNotExist):
			found, _ := filepath.Glob(filepath.Join(a, "run-*.json"))
			if len(found) == 0 {
				return nil, fmt.Errorf("%s: no %s and no run-*.json file in it: not a suite or results directory", a, results.ManifestName)
			}
			sort.Strings(found)
			paths = append(paths, found...)
		default:
			return nil, fmt.Errorf("%s: %w", a, err)
		}
	}
	if len(suites) > 0 && len(suites) < len(args) {
		return nil, fmt.Errorf("%s is a suite directory: give suite directories alone (their manifests say which cells finished), or give run files", suites[0])
	}
	switch len(suites) {
	case 0:
	case 1:
		raw, err := os.ReadFile(filepath.Join(suites[0], results.ManifestName))
		if err != nil {
			return nil, err
		}
		in.Manifest, in.ManifestRaw = &manifests[0], raw
	default:
		names := make([]string, len(suites))
		for i, d := range suites {
			names[i] = filepath.Base(filepath.Clean(d))
		}
		m, err := results.MergeManifests(names, manifests)
		if err != nil {
			return nil, err
		}
		raw, err := json.MarshalIndent(m, "", "  ")
		if err != nil {
			return nil, err
		}
		in.Manifest, in.ManifestRaw = &m, append(raw, '\n')
	}
	seen := map[string]string{}
	for _, p := range paths {
		name := filepath.Base(p)
		if name == results.ManifestName {
			return nil, fmt.Errorf("%s: a manifest, not a run file: give its directory", p)
		}
		if prev, ok := seen[name]; ok {
			if prev == p {
				continue
			}
			return nil, fmt.Errorf("%s and %s have one name: the page links result files by name, rename one", prev, p)
		}
		seen[name] = p
		raw, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		run, err := results.Load(p)
		if err != nil {
			return nil, err
		}
		in.Sources = append(in.Sources, Source{Name: name, Path: p, Run: run, Raw: raw})
	}
	return in, nil
}

// manifestTopology is a topology as manifests name it: "" for plaintext,
// as they did before there were others.
func manifestTopology(t string) string {
	if t == "plaintext" {
		return ""
	}
	return t
}

// topologyOrder is the reference page's order of topologies.
var topologyOrder = []string{"plaintext", "tls", "proxyv2"}

// displayNames are engines as a reader knows them.
var displayNames = map[string]string{
	"varnish": "Varnish",
	"vinyl":   "Vinyl Cache",
	"nginx":   "NGINX",
	"builtin": "Built-in",
}

type cellKey struct{ engine, runtime, topology string }

type found struct {
	res    *results.Result
	source *Source
}

// Build computes the report from its input. It fails only on inputs that
// cannot be shown together (two results for one cell); everything else,
// from a killed run to a cell without a value, is shown and said.
func Build(in *Input, o Options) (*Report, error) {
	if len(in.Sources) == 0 {
		return nil, errors.New("no result file to report")
	}
	if o.Title == "" {
		o.Title = DefaultTitle
	}
	if o.Catalog == nil {
		o.Catalog = noCatalog{}
	}
	b := newBuilder(in, o)
	b.manifestCells()
	if err := b.collect(); err != nil {
		return nil, err
	}
	if len(b.testOrder) == 0 {
		return nil, errors.New("the result files hold no result: no pass of any test finished")
	}
	b.orderCells()
	b.instrumentLimits()
	rep := &Report{Title: o.Title, Sources: in.Sources, manifest: in.Manifest != nil, manifestRaw: in.ManifestRaw}
	for _, wl := range b.workloadOrder() {
		rep.Workloads = append(rep.Workloads, b.workload(wl))
	}
	rep.Learned = learned(rep, o)
	rep.Verdict = verdicts(rep, o)
	rep.Engines = b.engineRows()
	if o.Title == DefaultTitle {
		// The default title says what the page holds in one line; a
		// title the user gave is theirs, as given.
		rep.Title += ": " + heading(rep, rep.Engines)
	}
	rep.Summary = summary(rep)
	// After the engines table: the claims' versions are its versions.
	if rep.Claims = claims(rep, o); rep.Claims != nil {
		rep.ClaimsNote = claimsNote(rep)
	}
	rep.Conditions = conditions(in)
	rep.Parts = parts(in)
	rep.Caveats = caveats(in, rep)
	rep.Warnings = b.warn
	return rep, nil
}

// builder is one Build: the results it found, by test and cell, and what
// labels their cells.
type builder struct {
	in *Input
	o  Options
	// warn are the page's warnings, in the order found.
	warn []string
	// Which results count: a suite's cells that finished, in the file its
	// manifest names; every result of plain files. Cells are by engine,
	// topology and workload; a result in a topology its manifest has no
	// cell for (manifests before topologies) goes by engine and workload.
	complete    map[[3]string]string
	listed      map[[3]string]bool
	completeAny map[[2]string]string

	byTest      map[string]map[cellKey]found
	testOrder   []string
	cellOrder   []cellKey
	engineOrder []string
	versions    map[cellKey]string
	// runVersions are each run's own versions: parts of one page may have
	// been measured with other builds (the built-in cache is hlsbench's
	// own), and a cell is labelled with the version its own run measured.
	runVersions map[string]map[cellKey]string
	kinds       map[string]string  // a variant's label: the engine it runs
	terminators map[cellKey]string // in topology proxyv2: name and version
	runtimes    map[string]bool
	// ceilings are the null engine's capacities applied where the cells
	// meet, by test, topology and host (ceilingKey).
	ceilings map[string]*results.Ceiling
}

func newBuilder(in *Input, o Options) *builder {
	b := &builder{in: in, o: o, complete: map[[3]string]string{}, listed: map[[3]string]bool{}, completeAny: map[[2]string]string{},
		byTest: map[string]map[cellKey]found{}, versions: map[cellKey]string{}, runVersions: map[string]map[cellKey]string{},
		kinds: map[string]string{}, terminators: map[cellKey]string{}, runtimes: map[string]bool{},
		ceilings: map[string]*results.Ceiling{}}
	if in.Manifest != nil {
		b.engineOrder = append(b.engineOrder, in.Manifest.Engines...)
	}
	return b
}

// manifestCells reads which cells a suite's manifest says finished, and
// warns of those that did not.
func (b *builder) manifestCells() {
	m := b.in.Manifest
	if m == nil {
		return
	}
	for _, c := range m.Cells {
		b.listed[[3]string{c.Engine, manifestTopology(c.Topology), c.Workload}] = true
		if c.Complete {
			b.completeAny[[2]string{c.Engine, c.Workload}] = c.File
			b.complete[[3]string{c.Engine, manifestTopology(c.Topology), c.Workload}] = c.File
		} else {
			b.warn = append(b.warn, fmt.Sprintf("the suite did not finish %s on %s: its cell has no value", c.Workload, c.Engine))
		}
	}
}

// collect reads every source's engines and the results that count; two
// results for one cell and test cannot be shown together.
func (b *builder) collect() error {
	for i := range b.in.Sources {
		s := &b.in.Sources[i]
		b.runStatus(s)
		b.engines(s)
		for j := range s.Run.Results {
			if err := b.add(s, &s.Run.Results[j]); err != nil {
				return err
			}
		}
	}
	return nil
}

// runStatus warns of a run that did not complete.
func (b *builder) runStatus(s *Source) {
	run := s.Run
	switch run.Status {
	case results.StatusComplete:
	case results.StatusKilled:
		b.warn = append(b.warn, fmt.Sprintf("%s: the run was killed before it finished; its finished passes are shown", s.Name))
	default:
		w := fmt.Sprintf("%s: the run ended %s", s.Name, run.Status)
		if run.Error != "" {
			w += ": " + run.Error
		}
		b.warn = append(b.warn, w+"; its finished passes are shown")
	}
}

// engines records a run's engines: their order, versions, variants and
// terminators.
func (b *builder) engines(s *Source) {
	for _, e := range s.Run.Engines {
		if !slices.Contains(b.engineOrder, e.Name) {
			b.engineOrder = append(b.engineOrder, e.Name)
		}
		k := cellKey{e.Name, e.Runtime, e.Topology}
		b.versions[k] = e.Version
		if b.runVersions[s.Name] == nil {
			b.runVersions[s.Name] = map[cellKey]string{}
		}
		b.runVersions[s.Name][k] = e.Version
		if e.Kind != "" {
			b.kinds[e.Name] = e.Kind
		}
		if e.Terminator != "" {
			b.terminators[k] = strings.TrimSpace(e.Terminator + " " + e.TerminatorVersion)
		}
	}
}

// add takes a result, if it counts.
func (b *builder) add(s *Source, r *results.Result) error {
	if b.in.Manifest != nil {
		k3 := [3]string{r.Engine, manifestTopology(r.Topology), r.Workload}
		file, ok := b.complete[k3]
		if !b.listed[k3] {
			file, ok = b.completeAny[[2]string{r.Engine, r.Workload}]
		}
		if !ok || file != s.Name {
			return nil
		}
	}
	id := r.Workload + "/" + r.Test
	if b.byTest[id] == nil {
		b.byTest[id] = map[cellKey]found{}
		b.testOrder = append(b.testOrder, id)
	}
	k := cellKey{r.Engine, r.Runtime, r.Topology}
	if prev, ok := b.byTest[id][k]; ok {
		return fmt.Errorf("%s and %s both have %s for %s (%s, %s): report one of them", prev.source.Name, s.Name, id, r.Engine, r.Runtime, r.Topology)
	}
	b.byTest[id][k] = found{r, s}
	if !slices.Contains(b.cellOrder, k) {
		b.cellOrder = append(b.cellOrder, k)
	}
	return nil
}

// instrumentLimits applies the null engine's capacity over every merged
// cell of the same test, topology and host: a run applies it only among its
// own results, so cells from a resumed suite or another part of the page
// would otherwise be ranked as exact beside a ceiling they are within, or
// keep a mark a ceiling they beat no longer supports. A test is a capacity
// when its workload is ranked, or when a run marked one of its cells.
func (b *builder) instrumentLimits() {
	for _, id := range b.testOrder {
		capacity := b.o.Catalog.Ranked(wlOf(id))
		groups := map[string][]*results.Result{}
		var order []string
		for _, f := range b.byTest[id] {
			r := f.res
			capacity = capacity || r.InstrumentCeiling || r.LowerBound == results.AtInstrumentLimit
			k := ceilingKey(id, r.Topology, f.source)
			if _, ok := groups[k]; !ok {
				order = append(order, k)
			}
			groups[k] = append(groups[k], r)
		}
		if !capacity {
			continue
		}
		sort.Strings(order) // the map's order is no order: the same cells, the same marks
		for _, k := range order {
			rs := groups[k]
			sort.SliceStable(rs, func(i, j int) bool { return rs[i].Engine < rs[j].Engine })
			if c := results.ApplyInstrumentLimit(rs); c != nil {
				b.ceilings[k] = c
			} else {
				b.ceilings[k] = nil // a capacity with no ceiling measured
			}
		}
	}
}

// ceilingKey is a test, topology and host: figures from other machines
// have other ceilings.
func ceilingKey(id, topology string, s *Source) string {
	h := s.Run.Host
	return id + "\x00" + topology + "\x00" + h.Hostname + "\x00" + h.CPUModel
}

// orderCells sorts the cells, notes the runtimes, and gives a cell that
// was not started (not applicable in its topology), which has no engine
// record of its own, the same engine's version in another topology, when
// it is one.
func (b *builder) orderCells() {
	sortCells(b.cellOrder, b.engineOrder)
	for _, k := range b.cellOrder {
		b.runtimes[k.runtime] = true
	}
	for _, k := range b.cellOrder {
		if b.versions[k] != "" {
			continue
		}
		v := ""
		for o, ov := range b.versions {
			if o.engine != k.engine || o.runtime != k.runtime || ov == "" {
				continue
			}
			if v != "" && v != ov {
				v = ""
				break
			}
			v = ov
		}
		if v != "" {
			b.versions[k] = v
		}
	}
}

// versionIn is the cell's version as the run in source measured it, else
// as any run did.
func (b *builder) versionIn(k cellKey, source string) string {
	if v := b.runVersions[source][k]; v != "" {
		return v
	}
	return b.versions[k]
}

// label is a cell as a reader sees it: "Varnish 7.1.1 (plaintext)".
func (b *builder) label(k cellKey, version string) string {
	name := displayName(k.engine)
	if kind := b.kinds[k.engine]; kind != "" {
		// A variant: its label, then the engine it runs.
		name = k.engine + ": " + displayName(kind)
	}
	// hlsbench's own engines (the built-in cache, null) are versioned by
	// the build that measured them: the engines table gives it, and a
	// table that mixes builds says so once, under it (Test.Builds), not in
	// every label. A variant or a build selected as NAME@VERSION keeps
	// its version: it is what tells it from the other.
	own := (k.engine == "builtin" || k.engine == InstrumentEngine) && b.kinds[k.engine] == ""
	if v := version; v != "" && v != "unknown" && !own && !strings.HasSuffix(name, " "+v) {
		name += " " + v
	}
	extra := topologyName(k.topology)
	if len(b.runtimes) > 1 {
		extra += ", " + k.runtime
	}
	switch baseEngine(k.engine) {
	case InstrumentEngine:
		extra += instrumentNote
	case "builtin":
		extra += referenceNote
	}
	return name + " (" + extra + ")"
}

// workloadOrder is the workloads found, in the catalog's order.
func (b *builder) workloadOrder() []string {
	var wlOrder []string
	for _, id := range b.testOrder {
		wl, _, _ := strings.Cut(id, "/")
		if !slices.Contains(wlOrder, wl) {
			wlOrder = append(wlOrder, wl)
		}
	}
	sort.SliceStable(wlOrder, func(i, j int) bool { return b.o.Catalog.Rank(wlOrder[i]) < b.o.Catalog.Rank(wlOrder[j]) })
	return wlOrder
}

// costs are a workload's engine costs by cell, in the order found.
type costs struct {
	by    map[cellKey][]Cost
	order []cellKey
}

func (c *costs) add(k cellKey, cost Cost, test string) {
	if _, ok := c.by[k]; !ok {
		c.order = append(c.order, k)
	}
	c.by[k] = addCost(c.by[k], cost, test)
}

// workload is one section of the page: its tests, their costs, curves and
// takeaway.
func (b *builder) workload(wl string) Workload {
	w := Workload{Name: wl, Title: wl}
	desc, conds := describe(b.in.Sources, wl, b.o.Catalog, &b.warn)
	if desc != nil {
		w.Title, w.Description = desc.Title, desc.Description
	}
	w.Conditions = conds
	cs := &costs{by: map[cellKey][]Cost{}}
	for _, id := range b.testOrder {
		if wlOf(id) == wl {
			w.Tests = append(w.Tests, b.test(wl, id, cs))
		}
	}
	for _, k := range cs.order {
		c := cs.by[k]
		if len(c) == 1 {
			c[0].Tests = nil // one cost for every test: no need to name them
		}
		w.Cost = append(w.Cost, c...)
	}
	w.Curves = curves(w)
	w.Takeaway = takeaway(w, b.o)
	return w
}

// test is one test's cells, the instrument's apart, and its finding; it
// adds each cell's engine cost (and its terminator's) to cs.
func (b *builder) test(wl, id string, cs *costs) Test {
	t := Test{ID: id, Slug: strings.ReplaceAll(id, "/", "-"), Workload: wl, Ranked: b.o.Catalog.Ranked(wl)}
	t.Name = strings.TrimPrefix(id, wl+"/")
	t.UnitName = b.o.Catalog.UnitName(wl, t.Name)
	var meanings []string
	var runCosts []runCost
	for _, k := range b.cellOrder {
		f, ok := b.byTest[id][k]
		// The null engine's cells are the instrument's, apart from the
		// engines' so that nothing ranks them.
		cells := &t.Cells
		if baseEngine(k.engine) == InstrumentEngine {
			cells = &t.Instrument
		}
		if !ok {
			if !cellRan(b.byTest, wl, k) {
				continue // the cell ran no test of this workload
			}
			*cells = append(*cells, Cell{Label: b.label(k, b.versions[k]), Engine: k.engine, Version: b.versions[k], Runtime: k.runtime,
				Topology: k.topology, NoValue: "this cell has no result for the test"})
			continue
		}
		r := f.res
		version := b.versionIn(k, f.source.Name)
		if t.Title == "" {
			t.Title, t.Unit, t.LowerIsBetter = r.Title, r.Unit, r.LowerIsBetter
		}
		*cells = append(*cells, cellOf(r, b.label(k, version), version, f.source.Name))
		(*cells)[len(*cells)-1].Build = buildOf(f.source.Run)
		(*cells)[len(*cells)-1].SLO = sloOf(r)
		b.ceilingOf(&(*cells)[len(*cells)-1], id, f)
		if m := staleMeaning(b.label(k, version), k.engine, r); m != "" {
			meanings = append(meanings, m)
		}
		if cells == &t.Cells {
			runCosts = append(runCosts, runCostOf(f.source.Name, r))
		}
		if cells == &t.Instrument && r.NotApplicable != "" {
			continue // the instrument not applicable: no cost to show
		}
		cs.add(k, Cost{Label: b.label(k, version), CPUMsPer1000: r.EngineCPUMsPer1000, PeakRSSBytes: r.EnginePeakRSSBytes,
			IRQ: r.EngineIRQ, NetIRQ: r.EngineNetIRQ}, t.Title)
		// The terminator's own row, under the engine's: its cost is beside
		// the engine's, not in it.
		if tc, tm := r.TerminatorCost(); tc != nil || tm != nil {
			name := b.terminators[k]
			if name == "" {
				name = "the TLS terminator"
			}
			cs.add(cellKey{k.engine, k.runtime, k.topology + "\x00terminator"},
				Cost{Label: name + ", in front of " + b.label(k, version), CPUMsPer1000: tc, PeakRSSBytes: tm}, t.Title)
		}
	}
	// Cells the suite did not finish show as such.
	if m := b.in.Manifest; m != nil {
		for _, c := range m.Cells {
			if c.Workload == wl && !c.Complete && !hasEngine(t.Cells, c.Engine) {
				t.Cells = append(t.Cells, Cell{Label: displayName(c.Engine), Engine: c.Engine,
					NoValue: "the suite did not finish this cell"})
			}
		}
	}
	t.Builds = buildsNote(t)
	nameInstrumentLimit(&t, b.terminators)
	terminatorLimits(&t, b.terminators)
	if t.SLO() == "" {
		for _, cs := range [][]Cell{t.Cells, t.Instrument} {
			for i := range cs {
				cs[i].ownSLO = cs[i].SLO != ""
			}
		}
	}
	t.Finding = finding(t, b.o) + instrumentFinding(t)
	if m := runSpeedMeaning(t, runCosts); m != "" {
		meanings = append(meanings, m)
	}
	t.Meaning = strings.Join(meanings, " ")
	return t
}

// ceilingOf says what the instrument's ceiling is to a capacity's cell: on
// the null engine's, which engine beat it (then it is no ceiling); on an
// engine's, that no ceiling was measured beside it (no null figure in its
// topology on its host: TLS, where null has no listener).
func (b *builder) ceilingOf(c *Cell, id string, f found) {
	cl, ok := b.ceilings[ceilingKey(id, f.res.Topology, f.source)]
	switch {
	case !ok || c.Value == nil:
	case cl == nil:
		c.NoCeiling = baseEngine(c.Engine) != InstrumentEngine
	case cl.Beaten != nil && cl.Null == f.res:
		w := cl.Beaten
		k := cellKey{w.Engine, w.Runtime, w.Topology}
		c.CeilingBeaten = fmt.Sprintf("%s carried %s, more than null's %s and its margin of %s (its spread across its searches and the search's step)",
			b.label(k, b.versionIn(k, f.source.Name)), valueText(*w.Value, w.Unit), valueText(*cl.Null.Value, w.Unit), valueText(cl.Margin, w.Unit))
	}
}

// nameInstrumentLimit says, beside each capacity at the instrument's limit,
// what that limit was: the null engine's figure in the same topology and,
// when a terminator stood in front of it, which ("null behind hitch 1.7.2
// carried 360 rps"); and beside the ceiling itself, the terminator. Behind a
// terminator the limit is often the terminator's CPU, not the generator's:
// the reader should not take one for the other.
func nameInstrumentLimit(t *Test, terminators map[cellKey]string) {
	ceiling := map[string]*Cell{}
	for _, cs := range [][]Cell{t.Instrument, t.Cells} {
		for i := range cs {
			c := &cs[i]
			if !c.InstrumentCeiling || c.Value == nil {
				continue
			}
			ceiling[c.Topology] = c
			if term := terminators[cellKey{c.Engine, c.Runtime, c.Topology}]; term != "" {
				c.Limit = "with " + term + " in front"
			}
		}
	}
	for i := range t.Cells {
		c := &t.Cells[i]
		n := ceiling[c.Topology]
		if c.LowerBound != results.AtInstrumentLimit || n == nil {
			continue
		}
		who := displayName(n.Engine)
		if term := terminators[cellKey{n.Engine, n.Runtime, n.Topology}]; term != "" {
			who += " behind " + term
		}
		c.Limit = who + " carried " + valueText(*n.Value, t.Unit)
	}
}

// addCost adds a test's cost to a cell's: to the row with the same figures,
// or as a new row.
func addCost(cs []Cost, c Cost, test string) []Cost {
	for i := range cs {
		if sameF(cs[i].CPUMsPer1000, c.CPUMsPer1000) && sameI(cs[i].PeakRSSBytes, c.PeakRSSBytes) &&
			sameF(cs[i].IRQ, c.IRQ) && sameF(cs[i].NetIRQ, c.NetIRQ) {
			cs[i].Tests = append(cs[i].Tests, test)
			return cs
		}
	}
	c.Tests = []string{test}
	return append(cs, c)
}

func sameF(a, b *float64) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }
func sameI(a, b *int64) bool   { return (a == nil) == (b == nil) && (a == nil || *a == *b) }

// mostValidPasses is the largest number of valid passes behind any cell.
func mostValidPasses(rep *Report) int {
	most := 0
	for _, w := range rep.Workloads {
		for _, t := range w.Tests {
			for _, c := range t.Cells {
				most = max(most, c.ValidPasses)
			}
		}
	}
	return most
}

func wlOf(id string) string {
	wl, _, _ := strings.Cut(id, "/")
	return wl
}

func cellRan(byTest map[string]map[cellKey]found, wl string, k cellKey) bool {
	for id, cells := range byTest {
		if wlOf(id) == wl {
			if _, ok := cells[k]; ok {
				return true
			}
		}
	}
	return false
}

func hasEngine(cells []Cell, engine string) bool {
	for _, c := range cells {
		if c.Engine == engine {
			return true
		}
	}
	return false
}

// topologyName is a topology as the reference page writes it.
func topologyName(t string) string {
	switch t {
	case "tls":
		return "TLS"
	case "proxyv2":
		return "PROXYv2"
	}
	return t
}

// displayName is an engine as a reader knows it; a build selected as
// NAME@VERSION keeps its version: Varnish 9.0.2.
func displayName(engine string) string {
	base, version, _ := strings.Cut(engine, "@")
	n := displayNames[base]
	if n == "" {
		return engine
	}
	if version != "" {
		n += " " + version
	}
	return n
}

// baseEngine is the engine of a name as selected (varnish@9.0.2: varnish).
func baseEngine(engine string) string {
	base, _, _ := strings.Cut(engine, "@")
	return base
}

// rank is a name's place in order; names not in it come after, as found.
func rank(order []string, name string) int {
	if i := slices.Index(order, name); i >= 0 {
		return i
	}
	return len(order)
}

func sortCells(cells []cellKey, engines []string) {
	sort.SliceStable(cells, func(i, j int) bool {
		a, b := cells[i], cells[j]
		if ra, rb := rank(engines, a.engine), rank(engines, b.engine); ra != rb {
			return ra < rb
		}
		if a.engine != b.engine {
			return a.engine < b.engine
		}
		if ra, rb := rank(topologyOrder, a.topology), rank(topologyOrder, b.topology); ra != rb {
			return ra < rb
		}
		if a.topology != b.topology {
			return a.topology < b.topology
		}
		return a.runtime < b.runtime
	})
}

// cellOf is the page's cell of a result, its validity judged again from
// its passes by this build's rule (results.Result.Recount): a page made
// from older runs judges them all alike — one saturated pass of twenty in
// a run whose build made that the cell's end is judged as today's runs
// are, on its valid passes, never "invalid" for what the rule excuses.
func cellOf(r *results.Result, label, version, source string) Cell {
	valid, invalid := r.Valid, r.InvalidReasons
	if len(r.Passes) > 0 {
		judged := *r
		judged.Recount()
		if judged.Valid != r.Valid {
			valid, invalid = judged.Valid, judged.InvalidReasons
		}
	}
	c := Cell{Label: label, Engine: r.Engine, Version: version, Runtime: r.Runtime, Topology: r.Topology,
		Value: r.Value, NoValue: r.NoValue, Valid: valid, ValidPasses: r.ValidPasses, MeasuredPasses: r.MeasuredPasses,
		Spread: r.Spread, Invalid: invalid, Errors: r.Errors, Requests: r.Requests, Source: source,
		CPUMsPer1000: r.EngineCPUMsPer1000, PeakRSSBytes: r.EnginePeakRSSBytes,
		OfferedRPS: r.OfferedRPS, AchievedRPS: r.AchievedRPS, SaturatedPasses: r.SaturatedPasses, SaturatedValue: r.SaturatedValue, SpoiledPasses: r.SpoiledPasses,
		LowerBound: r.LowerBound, InstrumentCeiling: r.InstrumentCeiling, MiBPerSecond: r.MiBPerSecond}
	if c.Value == nil && c.NoValue == "" {
		c.NoValue = "nothing was measured"
	}
	for _, p := range r.Passes {
		if p.Warmup {
			continue
		}
		c.Passes = append(c.Passes, PassPoint{Index: p.Index, Value: p.Value, NoValue: p.NoValue, Valid: p.Valid && p.Value != nil,
			OfferedRPS: p.OfferedRPS, AchievedRPS: p.AchievedRPS, Saturated: p.Saturated, Spoiled: p.ByInstrument()})
		if p.ByInstrument() && valid {
			for _, why := range p.InvalidReasons {
				c.Spoiled = append(c.Spoiled, fmt.Sprintf("pass %d: %s", p.Index, why))
			}
		}
		if p.Saturated != "" && c.SaturatedWhy == "" {
			c.SaturatedWhy = p.Saturated
		}
		// The run decides which tests saturation invalidates (latencies,
		// not counts at the origin): it says so in the pass's reasons.
		// Only a cell whose median pass was saturated leaves the ranking
		// (results.Result.Saturated); fewer saturated passes are counted.
		for _, why := range p.InvalidReasons {
			c.Unranked = c.Unranked || (strings.HasPrefix(why, saturatedReason) && r.Saturated())
		}
	}
	c.Unranked = c.Unranked || (r.Saturated() && r.SaturatedValue != nil)
	return c
}

// buildOf is the hlsbench build that measured a run: its version, else its
// commit's first seven digits.
func buildOf(run *results.Run) string {
	if v := run.Tool.Version; v != "" && v != "unknown" {
		return v
	}
	if c := run.Tool.Commit; len(c) >= 7 {
		return c[:7]
	}
	return run.Tool.Commit
}

// buildsNote says, once under a test's table, which hlsbench build
// measured which of its rows, when they are not all one: "Measured with
// builds c46ef99 (Varnish 9.0.2 (plaintext), …) and da9c4a4 (…)". A page is
// meant to be measured with one build; a merged one says so here, where
// it matters, as the exception it is. "" for a table of one build.
func buildsNote(t Test) string {
	var order []string
	rows := map[string][]string{}
	for _, c := range t.Rows() {
		if c.Build == "" {
			continue
		}
		if _, ok := rows[c.Build]; !ok {
			order = append(order, c.Build)
		}
		rows[c.Build] = append(rows[c.Build], c.Label)
	}
	if len(order) < 2 {
		return ""
	}
	parts := make([]string, len(order))
	for i, b := range order {
		parts[i] = b + " (" + strings.Join(rows[b], ", ") + ")"
	}
	return "Measured with hlsbench builds " + list(parts) + ": this table is merged from parts measured with different builds"
}

// pageBuilds are the hlsbench builds the page's runs were measured with,
// in the order of the runs.
func pageBuilds(rep *Report) []string {
	var builds []string
	for _, s := range rep.Sources {
		if b := buildOf(s.Run); b != "" && !slices.Contains(builds, b) {
			builds = append(builds, b)
		}
	}
	return builds
}

// saturatedReason starts the reason of a pass whose test saturation made
// invalid.
const saturatedReason = "saturated: "

// describe finds a workload's description and conditions in the runs; runs
// that ran it under other conditions are each shown, with a warning.
func describe(srcs []Source, wl string, cat Catalog, warn *[]string) (*results.Workload, []Fact) {
	var first *results.Workload
	var firstName string
	var facts []Fact
	for i := range srcs {
		w, ok := srcs[i].Run.WorkloadOf(wl)
		if !ok {
			continue
		}
		if first == nil {
			first, firstName = &w, srcs[i].Name
			facts = conditionFacts(cat, wl, w.Conditions)
			continue
		}
		if ok, diff := first.Conditions.Comparable(w.Conditions); !ok {
			*warn = append(*warn, fmt.Sprintf("%s ran under other conditions in %s than in %s (%s): those figures do not compare",
				wl, srcs[i].Name, firstName, strings.Join(diff, ", ")))
			for _, f := range conditionFacts(cat, wl, w.Conditions) {
				facts = append(facts, Fact{Label: f.Label + " (" + srcs[i].Name + ")", Value: f.Value})
			}
		} else if w.Conditions.Passes != first.Conditions.Passes || w.Conditions.Warmups != first.Conditions.Warmups {
			facts = append(facts, Fact{Label: "Protocol (" + srcs[i].Name + ")",
				Value: fmt.Sprintf("%d warm-up + %d measured passes", w.Conditions.Warmups, w.Conditions.Passes)})
		}
	}
	return first, facts
}

func conditionFacts(cat Catalog, wl string, c results.Conditions) []Fact {
	var f []Fact
	add := func(label, value string) { f = append(f, Fact{Label: label, Value: value}) }
	load, rest := cat.ConditionFacts(wl, c)
	if c.RateRPS > 0 {
		add("Rate", fmt.Sprintf("%s requests/s, open loop", results.Sig3(c.RateRPS)))
	}
	f = append(f, load...)
	if c.Connections > 0 {
		add("Connections", fmt.Sprint(c.Connections))
	}
	if c.ObjectBytes > 0 {
		add("Object", bytesText(c.ObjectBytes))
	}
	if c.RangeBytes > 0 {
		add("Range", bytesText(c.RangeBytes))
	}
	f = append(f, rest...)
	if c.EngineCost != "" {
		add("Engine cost", c.EngineCost)
	}
	if c.PassDuration > 0 {
		add("Pass", c.PassDuration.String())
	}
	if c.Timeout > 0 {
		add("Request timeout", c.Timeout.String())
	}
	add("Protocol", fmt.Sprintf("%d warm-up + %d measured passes", c.Warmups, c.Passes))
	if c.Isolation != "" {
		add("Isolation", c.Isolation)
	}
	if c.Policy != "" {
		add("Cache policy", "digest "+c.Policy+" (the same for every engine)")
	}
	return f
}

func bytesText(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB (%d bytes)", n>>20, n)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB (%d bytes)", n>>10, n)
	}
	return fmt.Sprintf("%d bytes", n)
}

// valueText is a value with its unit, seconds for 1000 ms and more.
func valueText(v float64, unit string) string {
	if unit == "ms" && math.Abs(v) >= 1000 {
		return results.Sig3(v/1000) + " s"
	}
	return results.Sig3(v) + " " + unit
}
