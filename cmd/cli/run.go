package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/hlsbench/hlsbench/engines"
	"github.com/hlsbench/hlsbench/engines/certs"
	"github.com/hlsbench/hlsbench/engines/launch"
	"github.com/hlsbench/hlsbench/engines/runstate"
	"github.com/hlsbench/hlsbench/results"
	"github.com/hlsbench/hlsbench/workloads"
	"github.com/hlsbench/hlsbench/workloads/loadgen/agent"
)

// RunOptions are the flags of `hlsbench run`.
type RunOptions struct {
	Engine       string
	Workload     string
	Out          string
	NoSave       bool
	Quick        bool
	JSON         bool
	Runtime      string
	URL          string
	OriginListen string
	Topology     string // comma list of plaintext, tls, proxyv2; or all
	Terminator   string // proxyv2's: hitch or haproxy
	Binary       string
	Config       string     // --config ENGINE=FILE or ROW=FILE pairs
	Images       []string   // --image NAME=REF
	Memory       memoryFlag // --memory: each container's limit (auto, none, a size)
	CPUs         float64    // --cpus: each container's CPU quota (0: none)
	AllowOOM     bool       // --allow-oom: a --memory below the store runs
	Quiet        bool
	Lock         string // wait, fail or none: see runstate.go
	// Place puts the generators, the engine and the origin on other
	// hosts (launch.ParsePlacement); ClockTolerance bounds the generator
	// hosts' clocks.
	Place          string
	ClockTolerance time.Duration
	// Decide names two rows of Engine, BASE,NEW, to compare per test
	// once their planned passes are done, running rounds of more passes
	// of both while a test is undecided, up to MaxPasses each (0:
	// decideFactor × passes).
	Decide    string
	MaxPasses int

	// Settings holds the workloads' settings as their flags set them
	// (workloads.Settings: a flag each); those not given come from the
	// profile.
	Settings workloads.Config

	set map[string]bool // flags given on the command line

	// nightly picks the nightly profile (suite --nightly); suite, when
	// set, keeps a suite directory's manifest.
	nightly bool
	suite   *suiteState
	decide  *decider // --decide, once checked
}

func newRunCmd(stdout, stderr io.Writer) *cobra.Command {
	o := RunOptions{}
	c := &cobra.Command{
		Use:   "run",
		Short: "Run the HLS workloads against a caching engine and save the results",
		Long: `Run the HLS workloads against a caching engine and save the results.

hlsbench starts its synthetic HLS origin and the engine, then runs each workload:
` + workloadList() + `
Each workload runs --warmups warm-up and --passes measured passes (of
--pass-duration for rate workloads) unless its own settings say otherwise;
headline percentiles come from all measured samples merged.

--quick: ` + workloads.QuickText() + `.

--engine builtin runs hlsbench's own cache; --engine external --url URL measures a
proxy that is already running and fetches from --origin-listen (hlsbench starts
only its origin there). Results are saved as JSON under --out (default
` + "$XDG_DATA_HOME/hlsbench/runs or ~/.local/share/hlsbench/runs" + `) after every pass;
Ctrl-C stops, tears everything down and keeps the finished passes.

Progress (engine, workload, pass, time left) goes to stderr: a live line on a
terminal, a line per pass otherwise; --quiet silences it.

Exit codes: 0 every result valid; 3 the run finished but some result is
invalid or has no value (the reasons are under each table and in the file);
1 failure (the file says status "failed" and why); 2 bad flags or input;
130 interrupted (finished passes kept). With --decide BASE,NEW the run ends
with compare's decision of the two rows and its code: 0 no regression, 1 a
regression, 2 inconclusive at --max-passes or nothing to compare.`,
		Example: `  hlsbench run --quick
  hlsbench run --engine builtin --workload ` + workloads.Names()[2] + `
  hlsbench run --engine external --url http://127.0.0.1:6081 --origin-listen 127.0.0.1:8081 --workload all`,
		Args: exactArgs(0, "no arguments"),
		RunE: func(c *cobra.Command, args []string) error {
			o.set = map[string]bool{}
			c.Flags().Visit(func(f *pflag.Flag) { o.set[f.Name] = true })
			return RunBench(c.Context(), stdout, stderr, o)
		},
	}
	f := c.Flags()
	f.StringVar(&o.Engine, "engine", "builtin", "engine: builtin, varnish, vinyl, nginx, null (the instrument's own ceiling and floor) or external (a comma list runs several, one table); NAME@VERSION a build, LABEL=NAME a variant (a=varnish,b=varnish)")
	f.StringVar(&o.Out, "out", "", "directory for the run's JSON file (default $XDG_DATA_HOME/hlsbench/runs)")
	f.BoolVar(&o.NoSave, "no-save", false, "do not write a results file")
	f.StringVar(&o.Decide, "decide", "", "`BASE,NEW`: two rows of --engine to compare per test as hlsbench compare does once their planned passes are done; while a test is undecided (inconclusive, too few valid passes) both run --passes more, interleaved, up to --max-passes; the exit code is compare's (hit-path and segment)")
	f.IntVar(&o.MaxPasses, "max-passes", 0, "with --decide: the most measured passes of each row, the planned included, before the decision is inconclusive (0: "+fmt.Sprint(decideFactor)+"× --passes)")
	protocolFlags(f, &o)
	return c
}

// protocolFlags are the flags run and suite share: what runs, how long,
// and how it reports and locks.
func protocolFlags(f *pflag.FlagSet, o *RunOptions) {
	f.StringVar(&o.Workload, "workload", "all", "workload: "+strings.Join(workloads.Names(), ", ")+" or all (comma list)")
	f.StringVar(&o.URL, "url", "", "with --engine external: the proxy's URL (several: external@a,external@b --url a=URL,b=URL)")
	f.StringVar(&o.OriginListen, "origin-listen", "", "with --engine external: the address its origin listens on, where the proxy fetches from (several: TAG=ADDR for each)")
	f.StringVar(&o.Binary, "binary", "", "the one process engine's binary when it is not on PATH, e.g. /opt/vinyl/sbin/vinyld; or `ROW=PATH` pairs (comma list) for the rows of --engine they name: another hlsbench for a builtin variant (base=builtin,head=builtin --binary base=./hlsbench-base)")
	f.StringVar(&o.Config, "config", "", "run a configuration of your own instead of the one hlsbench renders: `ENGINE=FILE` (varnish=my.vcl, vinyl=my.vcl, nginx=my.conf) or ROW=FILE for one row of --engine (a=varnish,b=varnish --config a=prod.vcl,b=new.vcl), a comma list; the engine checks it first (varnishd -C, nginx -t), the origin listens where it fetches from, plaintext only, and the results keep it with its SHA-256")
	f.BoolVar(&o.Quick, "quick", false, "short profile: "+workloads.QuickText())
	f.BoolVar(&o.JSON, "json", false, "print the saved run document (with file and run_id) on stdout")
	f.BoolVarP(&o.Quiet, "quiet", "q", false, "no progress lines (tables, results and errors are still printed)")
	f.StringVar(&o.Runtime, "runtime", launch.Runtimes[0].Name, "where the engines, the builtin cache and the origin run: "+launch.RuntimeHelp())

	f.StringArrayVar(&o.Images, "image", nil, "with --runtime "+runtimesWhere(inImage)+": `NAME=IMAGE`, the image of an engine or of hlsbench (origin and builtin); default: the newest one hlsbench images build made (repeatable)")
	f.Var(&o.Memory, "memory", "with --runtime "+runtimesWhere(limited)+": each container's memory limit, e.g. 1GiB; auto (the default) is twice the run's largest cache store, 1GiB for the 512MiB store, as the reference gave malloc,256m 512 MB; none for no limit. A limit that cannot hold the store and 128MiB more is refused")
	f.BoolVar(&o.AllowOOM, "allow-oom", false, "with --memory SIZE: run even when the limit cannot hold the cache store, to see what an engine does when its container is too small (a kill for memory fails the pass it happens in)")
	f.Float64Var(&o.CPUs, "cpus", defaultContainerCPUs, "with --runtime "+runtimesWhere(limited)+": each container's CPU quota, as docker run --cpus (the reference's 4; at most this host's CPUs; 0: none), besides the cores hlsbench pins it to")
	f.StringVar(&o.Topology, "topology", engines.TopologyPlaintext, "how the workloads measured over topologies reach each engine: plaintext, tls (the engine's own TLS listener, a certificate made for the run), proxyv2 (a TLS terminator in front speaking PROXY v2 to the engine), a comma list, or all")
	f.StringVar(&o.Terminator, "terminator", engines.DefaultTerminator, "the TLS terminator of topology proxyv2: hitch (write-proxy-v2) or haproxy (send-proxy-v2)")
	f.StringVar(&o.Lock, "lock", "wait", "another benchmark running on this machine: wait for it, fail, or none (run beside it)")
	f.StringVar(&o.Place, "place", "", "run the roles on other hosts, each a Docker daemon: `generator=H[,H…],engine=H,origin=H`, each H an endpoint (unix:///path, tcp://host:port with TLS from DOCKER_CERT_PATH, ssh://[user@]host) or Docker context name, with @ADDR, the address the other hosts reach it at; the images are sent from this host's daemon; each pass's schedule is split over the generator hosts and merged exactly (the docker runtime; hit-path, segment, miss-storm and origin-flap)")
	f.DurationVar(&o.ClockTolerance, "clock-tolerance", agent.ClockTolerance, "with --place: how far a generator host's clock (its offset, the offset's uncertainty, its start) may be off before its passes are invalid")

	settingFlags(f, &o.Settings)
}

// settingFlags binds a flag to each of the workloads' settings, named as
// the setting, in c (which starts at the defaults, for the help text).
func settingFlags(f *pflag.FlagSet, c *workloads.Config) {
	*c = workloads.Defaults()
	for _, s := range workloads.Settings() {
		f.Var(settingFlag{s, c}, s.Name(), s.Usage())
	}
}

// settingFlag is a workloads setting as a flag.
type settingFlag struct {
	s workloads.Setting
	c *workloads.Config
}

func (f settingFlag) String() string {
	if f.c == nil {
		return ""
	}
	return f.s.Text(*f.c)
}

func (f settingFlag) Type() string { return f.s.Type() }

func (f settingFlag) Set(v string) error {
	err := f.s.Set(f.c, v)
	var fe *workloads.FieldError
	if errors.As(err, &fe) {
		return errors.New(fe.Msg) // pflag names the flag
	}
	return err
}

// readSettings sets c's settings to their flags' values in fs, for the
// flags given there (set).
func readSettings(fs *pflag.FlagSet, set map[string]bool, c *workloads.Config) error {
	for _, s := range workloads.Settings() {
		if f := fs.Lookup(s.Name()); f != nil && set[s.Name()] {
			if err := s.Set(c, f.Value.String()); err != nil {
				return protocolErr(err)
			}
		}
	}
	return nil
}

// protocol is the run's settings: the profile's, with the flags given
// over them.
func (o *RunOptions) protocol() (workloads.Config, error) {
	cfg := workloads.Defaults()
	switch {
	case o.Quick && o.nightly:
		return cfg, usagef("--quick and --nightly are two profiles: give one")
	case o.Quick:
		cfg = workloads.Quick()
	case o.nightly:
		cfg = workloads.Nightly()
	}
	for _, s := range workloads.Settings() {
		if o.set[s.Name()] {
			s.Copy(&cfg, o.Settings)
		}
	}
	if err := cfg.Validate(); err != nil {
		return cfg, protocolErr(err)
	}
	return cfg, nil
}

// workloadList is the workloads, a line or more each, for the help text.
func workloadList() string {
	specs, _ := workloads.Specs("all")
	var b strings.Builder
	for _, s := range specs {
		line := "  " + s.Name + ": "
		for _, word := range strings.Fields(s.Description) {
			if len(line)+1+len(word) > 80 {
				b.WriteString(strings.TrimRight(line, " ") + "\n")
				line = "      "
			}
			line += word + " "
		}
		b.WriteString(strings.TrimRight(line, " ") + "\n")
	}
	return b.String()
}

// runJSON is `hlsbench run --json`: the saved run document (see the
// results package, schema 3) with two keys more for scripts: file, where it
// was saved, and run_id (its id).
type runJSON struct {
	File  string `json:"file,omitempty"`
	RunID string `json:"run_id"`
	*results.Run
}

// RunBench is `hlsbench run`: it checks every flag, takes the machine,
// prepares the engines' launcher, then executes the run and prints it and
// its verdict.
func RunBench(ctx context.Context, stdout, stderr io.Writer, o RunOptions) error {
	p, err := checkRun(ctx, stderr, o)
	if err != nil {
		return err
	}
	ctx, endRun, err := beginRun(ctx, stderr, o.Lock) // runstate.go: state file, bench lock, sweep
	if err != nil {
		return err
	}
	defer endRun()
	rs, closeRuntime, err := p.prepare(ctx, stderr, o)
	defer closeRuntime()
	if err != nil {
		return err
	}
	if o.decide = p.decide; p.decide != nil {
		rs.More = p.decide.more
		p.decide.plan(stderr)
	}
	tables := stdout
	if o.JSON {
		tables = stderr
	}
	run, rc, err := workloads.Execute(ctx, rs, tables)
	return finishRun(stdout, stderr, o, run, rc, startError(err))
}

// runPlan is a run as its flags ask for it, all of them checked: what
// runs, on which engines, from which binaries, where its file goes and the
// settings its record keeps. Nothing of it has started anything yet.
type runPlan struct {
	specs       []workloads.Spec
	sels        []engines.Selection
	engineNames []string
	cfg         workloads.Config
	topologies  []string
	term        engines.Terminator // nil unless topology proxyv2 runs
	rt          launch.Runtime     // --runtime
	place       *launch.Placement  // --place; nil: everything here
	imageFlags  map[string]string  // --image, by row
	lim         limits
	// externalURLs and originListens are the external rows' --url and
	// --origin-listen, by row.
	externalURLs, originListens map[string]string
	decide                      *decider // --decide; nil without
	configs                     map[string]*engines.UserConfig
	binaries                    map[string]string
	sources                     map[string]engines.Source
	out                         string // "" with --no-save
	self                        string // this hlsbench, for child processes
	settings                    map[string]any
}

// checkRun reads o into a runPlan. Every flag is checked, each process
// engine's binary found and a --config checked by its engine before the
// results directory is made: bad input is a clear error that leaves
// nothing half-written.
func checkRun(ctx context.Context, stderr io.Writer, o RunOptions) (*runPlan, error) {
	p, err := parseRunFlags(o)
	if err != nil {
		return nil, err
	}
	// A process engine that is not installed is a clear error before
	// anything starts (in a container, the image has it).
	p.binaries, p.sources = map[string]string{}, map[string]engines.Source{}
	if p.rt.Binaries != launch.InImage {
		if p.binaries, p.sources, err = resolveBinaries(ctx, stderr, p.sels, o.Binary); err != nil {
			return nil, err
		}
	} else if o.Binary != "" {
		return nil, usagef("--binary goes with --runtime %s; with %s, --image NAME=IMAGE", runtimesWhere(onHost), p.rt.Name)
	}
	if p.rt.Binaries == launch.OnHost {
		if err := checkConfigs(ctx, p.configs, p.sels, p.binaries); err != nil {
			return nil, err
		}
	}
	p.noteConfigs(stderr)
	if !o.NoSave {
		p.out = o.Out
		if p.out == "" {
			p.out = results.DefaultDir()
		}
		if err := os.MkdirAll(p.out, 0o755); err != nil {
			return nil, usagef("--out %s: %v", p.out, err)
		}
	}
	if p.self, err = os.Executable(); err != nil {
		return nil, fmt.Errorf("find the hlsbench binary for child processes: %w", err)
	}
	p.settings = p.record(o)
	return p, nil
}

// parseRunFlags reads the flags that need nothing of this machine, in the
// order their errors are reported.
func parseRunFlags(o RunOptions) (*runPlan, error) {
	p := &runPlan{}
	var err error
	if p.specs, err = workloads.Specs(o.Workload); err != nil {
		return nil, protocolErr(err)
	}
	if p.sels, err = parseEngines(o.Engine); err != nil {
		return nil, err
	}
	p.engineNames = rows(p.sels)
	if p.cfg, err = o.protocol(); err != nil {
		return nil, err
	}
	if p.topologies, err = parseTopologies(o.Topology); err != nil {
		return nil, err
	}
	term, ok := engines.LookupTerminator(o.Terminator)
	if !ok {
		return nil, usagef("--terminator %q: want %s", o.Terminator, strings.Join(engines.TerminatorNames(), " or "))
	}
	if slices.Contains(p.topologies, engines.TopologyProxyV2) {
		p.term = term
	}
	if p.rt, err = launch.RuntimeNamed(o.Runtime); err != nil {
		return nil, usagef("--runtime %q: want one of %s", o.Runtime, strings.Join(launch.RuntimeNames(nil), ", "))
	}
	if p.place, p.rt, err = parsePlace(o, p.rt); err != nil {
		return nil, err
	}
	if p.imageFlags, err = parseImages(o.Images, p.engineNames); err != nil {
		return nil, err
	}
	if len(p.imageFlags) > 0 && p.rt.Binaries != launch.InImage {
		return nil, usagef("--image goes with --runtime %s", runtimesWhere(inImage))
	}
	if p.lim, err = containerLimits(o, p.rt, p.specs, p.cfg); err != nil {
		return nil, err
	}
	if p.externalURLs, p.originListens, err = parseExternals(p.sels, o.URL, o.OriginListen); err != nil {
		return nil, err
	}
	if p.rt.Binaries == launch.InHlsbench && o.Binary != "" {
		return nil, usagef("--binary goes with --runtime %s: %s serves the built-in cache inside this hlsbench", runtimesWhere(onHost), p.rt.Name)
	}
	if p.rt.Binaries == launch.InHlsbench && o.Config != "" {
		return nil, usagef("--config goes with --runtime %s: %s runs only the built-in cache, which takes no configuration file", runtimesWhere(notInHlsbench), p.rt.Name)
	}
	if p.configs, err = loadConfigs(o.Config, p.sels, p.originListens); err != nil {
		return nil, err
	}
	if p.decide, err = parseDecide(o, p.engineNames, p.specs, p.cfg.Passes); err != nil {
		return nil, err
	}
	return p, nil
}

// noteConfigs says, for each row that runs a --config, that hlsbench runs
// it as given and where its origin must be.
func (p *runPlan) noteConfigs(stderr io.Writer) {
	for _, row := range p.engineNames {
		if uc := p.configs[row]; uc != nil {
			where := ""
			if uc.Listen != "" {
				where = ", listening on " + uc.Listen
			}
			fmt.Fprintf(stderr, "hlsbench: %s runs %s as given (sha256 %.12s): its origin at %s%s; the results keep it with what hlsbench cannot guarantee of it\n",
				row, uc.Path, uc.SHA256, uc.Origin, where)
		}
	}
}

// record is the run record's settings as the flags set them; prepare adds
// the Docker ones.
func (p *runPlan) record(o RunOptions) map[string]any {
	settings := p.cfg.Record()
	maps.Copy(settings, map[string]any{"engines": p.engineNames, "workloads": o.Workload,
		"quick": o.Quick, "nightly": o.nightly, "runtime": o.Runtime})
	pols := map[string]any{}
	for _, s := range p.specs {
		pols[s.Name] = map[string]any{"rate": s.Rate, "connections": s.Connections, "policy": s.Policy}
	}
	settings["workload_settings"] = pols
	settings["lock"] = o.Lock
	if p.decide != nil {
		settings["decide"], settings["max_passes"] = p.decide.base+","+p.decide.new, p.decide.max
	}
	if p.place != nil {
		settings["place"], settings["clock_tolerance_ms"] = o.Place, float64(o.ClockTolerance)/1e6
	}
	settings["topologies"] = p.topologies
	if p.term != nil {
		settings["terminator"] = p.term.Name()
	}
	if len(p.externalURLs) > 0 {
		settings["external_url"], settings["origin_listen"] = o.URL, o.OriginListen
	}
	if o.Binary != "" {
		settings["binary"] = o.Binary
	}
	if len(p.configs) > 0 {
		cf := map[string]any{}
		for row, uc := range p.configs {
			cf[row] = map[string]string{"path": uc.Path, "sha256": uc.SHA256}
		}
		settings["configs"] = cf
	}
	return settings
}

// prepare turns p into the run's spec once the bench lock is held (ctx
// carries the run's state): the runtime opened for the run (its launcher)
// and its images, the run's certificates and a suite's hooks. closeRuntime
// is never nil and is to be called, whatever err, once the run is over.
func (p *runPlan) prepare(ctx context.Context, stderr io.Writer, o RunOptions) (_ workloads.RunSpec, closeRuntime func(), err error) {
	closeRuntime = func() {}
	var progress *workloads.Progress
	if !o.Quiet {
		progress = workloads.NewProgress(stderr, isTerminal(stderr))
	}
	lch, err := p.rt.Open(ctx, launch.Session{RunID: runstate.From(ctx).ID(), Memory: p.lim.Memory, CPUs: p.lim.CPUs})
	if err != nil {
		return workloads.RunSpec{}, closeRuntime, fmt.Errorf("--runtime %s: %w", p.rt.Name, err)
	}
	closeRuntime = func() { launch.Close(lch) }
	var imgs map[string]string
	if p.rt.Binaries == launch.InImage {
		if imgs, err = p.images(ctx, stderr, lch); err != nil {
			return workloads.RunSpec{}, closeRuntime, err
		}
	}
	var placed *workloads.Placed
	if p.place != nil {
		var closeHosts func()
		placed, closeHosts, err = p.openPlaced(ctx, stderr, o, lch, imgs)
		closeRuntime = func() { closeHosts(); launch.Close(lch) }
		if err != nil {
			return workloads.RunSpec{}, closeRuntime, err
		}
	}
	tlsSet, err := runCerts(p.topologies, p.term, p.place)
	if err != nil {
		return workloads.RunSpec{}, closeRuntime, err
	}
	rs := workloads.RunSpec{Engines: p.engineNames, Selections: selectionMap(p.sels), Workloads: p.specs, Config: p.cfg, Launcher: lch, Images: imgs,
		Topologies: p.topologies, TLS: tlsSet, Terminator: p.term,
		Runtime: o.Runtime, ExternalURLs: p.externalURLs, OriginListens: p.originListens, Binaries: p.binaries, Sources: p.sources, Configs: p.configs, OutDir: p.out, Self: p.self,
		Version: Version, Commit: Commit, Settings: p.settings, Progress: progress, Placed: placed}
	if o.suite != nil {
		if err := o.suite.begin(&rs, stderr); err != nil {
			return workloads.RunSpec{}, closeRuntime, err
		}
	}
	return rs, closeRuntime, nil
}

// images finds each row's image (and the terminator's) for a runtime of
// images, whose launcher is lch. An image of ours says where its engine's
// binary is and what it was built from; the record keeps the images, their
// packages and the limits.
func (p *runPlan) images(ctx context.Context, stderr io.Writer, lch launch.Launcher) (map[string]string, error) {
	store, ok := lch.(launch.ImageStore)
	if !ok {
		return nil, fmt.Errorf("--runtime %s: its launcher holds no images", p.rt.Name)
	}
	withTerm := p.sels
	if p.term != nil {
		withTerm = append(slices.Clone(p.sels), engines.Selection{Name: p.term.Name()})
	}
	imgs, found, err := runImages(ctx, store, p.rt.Name, withTerm, p.imageFlags, Version)
	if err != nil {
		return nil, err
	}
	pkgs := map[string][]string{} // every package of each image, by its ref
	for sel, im := range found {
		if daemon, src := imageSource(im); daemon != "" {
			p.binaries[sel], p.sources[sel] = daemon, src
		}
		if len(im.Packages) > 0 {
			pkgs[imgs[sel]] = im.Packages
		}
	}
	if len(pkgs) > 0 {
		p.settings["image_packages"] = pkgs
	}
	lim := p.lim
	p.settings["images"] = imgs
	p.settings["container_memory_bytes"] = lim.Memory
	p.settings["container_cpus"] = lim.CPUs
	if lim.Short != "" {
		p.settings["container_memory_below_store"] = true
		fmt.Fprintln(stderr, "hlsbench: "+lim.Short)
	}
	if lim.AskedCPU != lim.CPUs {
		p.settings["container_cpus_asked"] = lim.AskedCPU
	}
	return imgs, nil
}

// runCerts is the run's own certificate authority and the certificate it
// signs for this host, when a topology runs over TLS; else nil.
func runCerts(topologies []string, term engines.Terminator, place *launch.Placement) (*certs.Set, error) {
	if !slices.Contains(topologies, engines.TopologyTLS) && term == nil {
		return nil, nil
	}
	// The run's own authority: trusted by this run's generators alone, its
	// files only in each engine's work directory. Placed, the engine is
	// reached at its host's address.
	hosts := []string{"127.0.0.1", "::1", "localhost"}
	if place != nil {
		hosts = append(hosts, place.Engine.Addr)
	}
	return certs.New(hosts)
}

// finishRun ends a suite's cell bookkeeping, prints the run's warnings,
// where it was saved and, with --json, the run itself; its error is the
// run's err, else the first error of these, else the run's verdict.
func finishRun(stdout, stderr io.Writer, o RunOptions, run *results.Run, rc *workloads.Recorder, err error) error {
	if run == nil {
		return err
	}
	if o.suite != nil {
		if merr := o.suite.end(run, rc); merr != nil && err == nil {
			err = merr
		}
	}
	writeWarnings(stderr, run)
	if rc != nil && rc.Path() != "" {
		fmt.Fprintf(stderr, "hlsbench: results saved to %s (status %s)\n", rc.Path(), run.Status)
	}
	if o.JSON {
		if jerr := writeRunJSON(stdout, run, rc.Path()); jerr != nil && err == nil {
			err = jerr
		}
	}
	switch {
	case err != nil:
		return err
	case run.Interrupted:
		return errInterrupted
	case o.decide != nil:
		// The run was asked for a decision: compare's, not the
		// figures' validity, is its outcome.
		tables := stdout
		if o.JSON {
			tables = stderr
		}
		return o.decide.finish(tables, run, rc.Path())
	}
	return verdict(run)
}

// maxWarnings bounds the run's warnings printed at its end; the file has all.
const maxWarnings = 5

// writeWarnings prints the run's warnings and whether other processes were
// busy on the measured CPUs.
func writeWarnings(w io.Writer, run *results.Run) {
	if in := run.Interference; in != nil && in.BusyPasses > 0 {
		var who []string
		if len(in.Busiest) > 0 {
			who = append(who, "busiest: "+strings.Join(in.Busiest, ", "))
		}
		if in.UnseenPasses > 0 {
			who = append(who, fmt.Sprintf("in %d of them most of it in no process this host lists: another PID namespace's, a container or sandbox beside this one", in.UnseenPasses))
		}
		if len(who) == 0 {
			who = append(who, "no single process stands out")
		}
		fmt.Fprintf(w, "hlsbench: other processes took over %.0f%% of the measured CPUs (%s) in %d of %d passes, up to %.0f%% (%s); figures may include them: quiet the machine and run again\n",
			100*in.Threshold, in.CPUs, in.BusyPasses, in.Passes, 100*in.MaxOtherShare, strings.Join(who, "; "))
	}
	for i, warn := range run.Warnings {
		if i == maxWarnings {
			fmt.Fprintf(w, "hlsbench: and %d more warnings in the results file\n", len(run.Warnings)-maxWarnings)
			break
		}
		fmt.Fprintln(w, "hlsbench: warning:", warn)
	}
}

func writeRunJSON(w io.Writer, run *results.Run, file string) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(runJSON{File: file, RunID: run.ID, Run: run})
}

// verdict is nil when every result is valid and has a value, else an
// errInvalid (exit 3) that counts them and says what to do.
func verdict(run *results.Run) error {
	var bad []string
	for _, r := range run.Results {
		if r.NotApplicable != "" {
			continue // said under its table; no failure
		}
		if !r.Valid || r.Value == nil {
			bad = append(bad, r.ID+" on "+workloads.EngineLabel(&r))
		}
	}
	if len(bad) == 0 {
		return nil
	}
	shown := bad
	if len(shown) > 4 {
		shown = append(shown[:4:4], fmt.Sprintf("and %d more", len(bad)-4))
	}
	return fmt.Errorf("%w: %d of %d are invalid or have no value (%s); the reasons are under each table and in the results file. "+
		"If the generator was late or busy: lower --rate, quiet the machine (other processes busy on its CPUs are named above), or run fewer engines at once",
		errInvalid, len(bad), len(run.Results), strings.Join(shown, ", "))
}

// parseTopologies reads --topology.
func parseTopologies(s string) ([]string, error) {
	var out []string
	for _, t := range strings.Split(s, ",") {
		switch t = strings.TrimSpace(t); t {
		case "all":
			for _, a := range engines.Topologies {
				if !slices.Contains(out, a) {
					out = append(out, a)
				}
			}
		case engines.TopologyPlaintext, engines.TopologyTLS, engines.TopologyProxyV2:
			if !slices.Contains(out, t) {
				out = append(out, t)
			}
		default:
			return nil, usagef("--topology %q: want plaintext, tls, proxyv2, a comma list of them, or all", t)
		}
	}
	return out, nil
}

// protocolErr names the flag of a workloads setting that cannot run.
func protocolErr(err error) error {
	var fe *workloads.FieldError
	if !errors.As(err, &fe) {
		return err
	}
	if _, ok := workloads.LookupSetting(fe.Field); ok || fe.Field == "workload" {
		return usagef("--%s %s", fe.Field, fe.Msg)
	}
	return usagef("%s %s (set by the profile; see --quick)", fe.Field, fe.Msg)
}
