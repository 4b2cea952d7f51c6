package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/hlsbench/hlsbench/engines"
	"github.com/hlsbench/hlsbench/engines/images"
	"github.com/hlsbench/hlsbench/engines/launch"
	"github.com/hlsbench/hlsbench/engines/srcbuild"
	"github.com/hlsbench/hlsbench/results"
	"github.com/hlsbench/hlsbench/workloads"
)

// SuiteOptions are the flags of `hlsbench suite`: run's, a suite directory
// and --resume.
type SuiteOptions struct {
	RunOptions
	Resume  string
	Nightly bool
}

func newSuiteCmd(stdout, stderr io.Writer) *cobra.Command {
	o := SuiteOptions{}
	c := &cobra.Command{
		Use:   "suite --out DIR",
		Short: "Run the whole matrix, engines × workloads, into a suite directory",
		Long: `Run the whole matrix — every engine × every workload — into one suite directory.

For each workload every engine is up at once, on its own port with its own
origin (counters and failure switch), and the passes are interleaved: pass k
of every engine before pass k+1 of any, so drift on a shared machine hits all
alike. The directory holds the run files and manifest.json, which says which
engine × workload cells finished. Ctrl-C keeps the finished passes; --resume
DIR runs only the cells that did not finish (their partial passes are
dropped), with the settings the suite started with.

Without --engine: builtin and every process engine installed here
(varnish, vinyl, nginx). Profiles: the reference protocol by default (3
warm-ups + 20 passes), --quick (` + workloads.QuickText() + `), --nightly
(` + workloads.NightlyText() + `).

Exit codes as run: 0 every result valid; 3 finished with some result invalid
or without a value; 1 failure; 2 bad input; 130 interrupted.`,
		Example: `  hlsbench suite --quick --engine builtin,varnish,nginx --out suites/today
  hlsbench suite --nightly --out suites/nightly-head
  hlsbench suite --resume suites/today`,
		Args: exactArgs(0, "no arguments"),
		RunE: func(c *cobra.Command, args []string) error {
			o.set = map[string]bool{}
			c.Flags().Visit(func(f *pflag.Flag) { o.set[f.Name] = true })
			return RunSuite(c.Context(), stdout, stderr, o)
		},
	}
	f := c.Flags()
	f.StringVar(&o.Engine, "engine", "", "engines, a comma list (default: builtin and every process engine installed)")
	f.StringVar(&o.Out, "out", "", "the suite directory (required unless --resume)")
	f.StringVar(&o.Resume, "resume", "", "a suite directory to finish: runs only the cells its manifest does not list as complete")
	f.BoolVar(&o.Nightly, "nightly", false, "regression profile: "+workloads.NightlyText())
	protocolFlags(f, &o.RunOptions)
	return c
}

// suiteState keeps a suite directory's manifest while a run writes to it.
type suiteState struct {
	dir    string
	resume bool
	m      results.Manifest
}

// RunSuite is `hlsbench suite`.
func RunSuite(ctx context.Context, stdout, stderr io.Writer, o SuiteOptions) error {
	st := &suiteState{}
	ro := o.RunOptions
	ro.nightly = o.Nightly
	switch {
	case o.Resume != "" && o.Out != "":
		return usagef("--resume %s continues that directory; --out does not go with it", o.Resume)
	case o.Resume != "":
		m, err := results.ReadManifest(o.Resume)
		if err != nil {
			return usagef("--resume %s: %v", o.Resume, err)
		}
		// The suite's own settings, not this command's: only how it
		// reports and locks may change.
		cmd := newSuiteCmd(io.Discard, io.Discard)
		if err := cmd.ParseFlags(m.Args); err != nil {
			return usagef("--resume %s: %s has flags this hlsbench does not know: %v", o.Resume, results.ManifestName, err)
		}
		saved := SuiteOptions{}
		saved.set = map[string]bool{}
		cmd.Flags().Visit(func(f *pflag.Flag) { saved.set[f.Name] = true })
		readSuiteFlags(cmd.Flags(), &saved)
		saved.Settings = workloads.Defaults()
		if err := readSettings(cmd.Flags(), saved.set, &saved.Settings); err != nil {
			return usagef("--resume %s: %s: %v", o.Resume, results.ManifestName, err)
		}
		ro = saved.RunOptions
		ro.nightly = saved.Nightly
		ro.JSON, ro.Quiet, ro.Lock = o.JSON, o.Quiet, o.Lock
		ro.Out, st.dir, st.resume = o.Resume, o.Resume, true
	default:
		if o.Out == "" {
			return usagef("--out: a suite needs a directory (or --resume DIR)")
		}
		if _, err := os.Stat(filepath.Join(o.Out, results.ManifestName)); err == nil {
			return usagef("--out %s already holds a suite: --resume %s finishes it, or give a new directory", o.Out, o.Out)
		}
		missing := missingEngines()
		if ro.Place != "" && !o.set["runtime"] {
			ro.Runtime = launch.DockerRuntime.Name // --place's runtime
		}
		if rt, err := launch.RuntimeNamed(ro.Runtime); err == nil && rt.Binaries == launch.InImage {
			// In a runtime of images an engine is there when its image is.
			missing = missingImages(ctx, rt)
		}
		if ro.Engine == "" {
			ro.Engine = defaultSuiteEngines(stderr, missing)
		}
		st.dir = o.Out
		st.m = results.Manifest{SchemaVersion: 1, CreatedAt: time.Now().UTC(), Tool: Version, Args: suiteArgs(o.set, &o, ro.Engine), Missing: missing}
	}
	ro.suite = st
	return RunBench(ctx, stdout, stderr, ro)
}

// readSuiteFlags copies parsed flag values into o (the flags were bound to
// a throwaway command's options).
func readSuiteFlags(fs *pflag.FlagSet, o *SuiteOptions) {
	str := func(n string) string { v, _ := fs.GetString(n); return v }
	o.Engine, o.Workload, o.Runtime = str("engine"), str("workload"), str("runtime")
	o.Topology, o.Terminator = str("topology"), str("terminator")
	o.URL, o.OriginListen, o.Binary, o.Config = str("url"), str("origin-listen"), str("binary"), str("config")
	o.Quick, _ = fs.GetBool("quick")
	o.Nightly, _ = fs.GetBool("nightly")
	o.Images, _ = fs.GetStringArray("image")
	if f := fs.Lookup("memory"); f != nil {
		o.Memory.Set(f.Value.String())
	}
	o.CPUs, _ = fs.GetFloat64("cpus")
	o.AllowOOM, _ = fs.GetBool("allow-oom")
	o.Place = str("place")
	o.ClockTolerance, _ = fs.GetDuration("clock-tolerance")
}

// suiteArgs are the settings flags a suite started with, for --resume.
func suiteArgs(set map[string]bool, o *SuiteOptions, engine string) []string {
	args := []string{"--engine", engine}
	add := func(name, val string) {
		if set[name] {
			args = append(args, "--"+name, val)
		}
	}
	add("workload", o.Workload)
	add("runtime", o.Runtime)
	add("topology", o.Topology)
	add("terminator", o.Terminator)
	add("memory", o.Memory.String())
	add("cpus", cpusText(o.CPUs))
	add("url", o.URL)
	add("origin-listen", o.OriginListen)
	add("binary", o.Binary)
	add("config", absPairs(o.Config))
	add("place", o.Place)
	add("clock-tolerance", o.ClockTolerance.String())
	for _, st := range workloads.Settings() {
		add(st.Name(), st.Text(o.Settings))
	}
	for _, im := range o.Images {
		args = append(args, "--image", im)
	}
	if o.Quick {
		args = append(args, "--quick")
	}
	if o.Nightly {
		args = append(args, "--nightly")
	}
	if o.AllowOOM {
		args = append(args, "--allow-oom")
	}
	return args
}

// defaultSuiteEngines is builtin and every process engine not missing here
// (installed, or with an image for the docker runtime); it says why each
// missing one is left out.
func defaultSuiteEngines(stderr io.Writer, missing []results.MissingEngine) string {
	list := []string{"builtin"}
	for _, name := range engines.ProcessEngines() {
		i := slices.IndexFunc(missing, func(m results.MissingEngine) bool { return m.Name == name })
		if i >= 0 {
			fmt.Fprintf(stderr, "hlsbench: suite without %s: %s (--engine names the engines)\n", name, firstLine(missing[i].Reason))
			continue
		}
		list = append(list, name)
	}
	return strings.Join(list, ",")
}

// firstLine is s up to its first newline.
func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// missingImages are the process engines with no image in rt, a runtime of
// images, with why. Without a daemon it says nothing: the run fails with
// how to start one.
func missingImages(ctx context.Context, rt launch.Runtime) []results.MissingEngine {
	lch, err := rt.Open(ctx, launch.Session{})
	if err != nil {
		return nil
	}
	defer launch.Close(lch)
	store, ok := lch.(launch.ImageStore)
	if !ok {
		return nil
	}
	built, err := images.List(ctx, store)
	if err != nil {
		return nil
	}
	var missing []results.MissingEngine
	for _, name := range engines.ProcessEngines() {
		if _, ref := imageFor(built, name, ""); ref == "" {
			missing = append(missing, results.MissingEngine{Name: name,
				Reason: fmt.Sprintf("no image for %s (hlsbench images build --engine %s)", name, name)})
		}
	}
	return missing
}

// missingEngines are the process engines not installed here, with why: the
// manifest keeps them, and the page says they were not run.
func missingEngines() []results.MissingEngine {
	var missing []results.MissingEngine
	for _, name := range engines.ProcessEngines() {
		e, _ := engines.Lookup(name)
		if _, err := engines.FindBinary(e, ""); err != nil {
			if _, built := srcbuild.Find("", name, ""); built {
				continue // a bare name runs the newest build
			}
			missing = append(missing, results.MissingEngine{Name: name, Reason: err.Error()})
		}
	}
	return missing
}

// begin lists the suite's cells and hooks the run to them: finished cells
// are skipped, each cell that finishes is recorded.
//
// It runs once the bench lock is held: a resumed suite reads its manifest
// and drops its unfinished cells' passes only then, never while another
// hlsbench may still be writing them.
func (s *suiteState) begin(rs *workloads.RunSpec, stderr io.Writer) error {
	if s.resume {
		m, err := results.ReadManifest(s.dir)
		if err != nil {
			return usagef("--resume %s: %v", s.dir, err)
		}
		s.m = m
		if err := s.dropUnfinished(); err != nil {
			return err
		}
	}
	if s.m.Engines == nil {
		s.m.Engines = rs.Engines
		for _, w := range rs.Workloads {
			s.m.Workloads = append(s.m.Workloads, w.Name)
			topos := []string{engines.TopologyPlaintext}
			if w.OverTopologies() && len(rs.Topologies) > 0 {
				topos = rs.Topologies
			}
			for _, e := range rs.Engines {
				for _, t := range topos {
					s.m.Cells = append(s.m.Cells, results.SuiteCell{Engine: e, Topology: cellTopology(t), Workload: w.Name})
				}
			}
		}
	}
	todo := 0
	for _, c := range s.m.Cells {
		if !c.Complete {
			todo++
		}
	}
	if todo == 0 {
		return usagef("the suite in %s is complete: nothing to resume", s.dir)
	}
	if todo < len(s.m.Cells) {
		fmt.Fprintf(stderr, "hlsbench: resuming %s: %d of %d cells to run\n", s.dir, todo, len(s.m.Cells))
	}
	rs.OutDir = s.dir
	rs.Skip = func(engine, topology, workload string) bool {
		c := s.cell(engine, topology, workload)
		return c != nil && c.Complete
	}
	var runFile string
	rs.Done = func(engine, topology, workload string) {
		if c := s.cell(engine, topology, workload); c != nil {
			c.Complete, c.File = true, runFile
		}
		if err := s.save(); err != nil {
			fmt.Fprintf(stderr, "hlsbench: %v: --resume would run %s on %s again\n", err, workload, engine)
		}
	}
	// The run file's name is known once the run starts; Done needs it.
	rs.Started = func(path string) {
		runFile = filepath.Base(path)
		if !slices.Contains(s.m.Runs, runFile) {
			s.m.Runs = append(s.m.Runs, runFile)
		}
		if err := s.save(); err != nil {
			fmt.Fprintf(stderr, "hlsbench: %v\n", err)
		}
	}
	return nil
}

func (s *suiteState) cell(engine, topology, workload string) *results.SuiteCell {
	topology = cellTopology(topology)
	for i := range s.m.Cells {
		if c := &s.m.Cells[i]; c.Engine == engine && c.Topology == topology && c.Workload == workload {
			return c
		}
	}
	return nil
}

// cellTopology is how a manifest names a cell's topology: "" for
// plaintext, as manifests did before there were others.
func cellTopology(t string) string {
	if t == engines.TopologyPlaintext {
		return ""
	}
	return t
}

// end writes the manifest once the run is over.
func (s *suiteState) end(*results.Run, *workloads.Recorder) error {
	return s.save()
}

func (s *suiteState) save() error {
	return s.m.Save(s.dir)
}

// dropUnfinished removes, from the suite's run files, the passes of cells
// that did not finish: a resumed suite runs those cells again from the
// start, and a reader of the directory must not see both.
func (s *suiteState) dropUnfinished() error {
	for _, name := range s.m.Runs {
		path := filepath.Join(s.dir, name)
		run, err := results.Load(path)
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				continue
			}
			return fmt.Errorf("--resume %s: %w", s.dir, err)
		}
		kept := run.Results[:0]
		for _, r := range run.Results {
			if c := s.cell(r.Engine, r.Topology, r.Workload); c == nil || (c.Complete && c.File == name) {
				kept = append(kept, r)
			}
		}
		if len(kept) == len(run.Results) {
			continue
		}
		run.Results = kept
		if _, err := run.Save(s.dir); err != nil {
			return fmt.Errorf("--resume %s: %w", s.dir, err)
		}
	}
	return nil
}

// absPairs makes the paths of KEY=PATH pairs absolute, so that a suite
// resumed from another directory reads the same files.
func absPairs(flag string) string {
	if flag == "" {
		return ""
	}
	pairs := strings.Split(flag, ",")
	for i, p := range pairs {
		if k, path, ok := strings.Cut(p, "="); ok {
			if abs, err := filepath.Abs(path); err == nil {
				pairs[i] = k + "=" + abs
			}
		}
	}
	return strings.Join(pairs, ",")
}
