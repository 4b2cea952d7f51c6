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

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/hlsbench/hlsbench/engines"
	"github.com/hlsbench/hlsbench/engines/certs"
	"github.com/hlsbench/hlsbench/engines/launch"
	"github.com/hlsbench/hlsbench/engines/runstate"
	"github.com/hlsbench/hlsbench/results"
	"github.com/hlsbench/hlsbench/workloads"
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

	// Settings holds the workloads' settings as their flags set them
	// (workloads.Settings: a flag each); those not given come from the
	// profile.
	Settings workloads.Config

	set map[string]bool // flags given on the command line

	// nightly picks the nightly profile (suite --nightly); suite, when
	// set, keeps a suite directory's manifest.
	nightly bool
	suite   *suiteState
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
130 interrupted (finished passes kept).`,
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
	f.StringVar(&o.Runtime, "runtime", "process", "where the engines, the builtin cache and the origin run: process (child processes pinned apart from the generator), docker (a container each, host networking) or inproc (builtin and origin inside hlsbench)")

	f.StringArrayVar(&o.Images, "image", nil, "with --runtime docker: `NAME=IMAGE`, the image of an engine or of hlsbench (origin and builtin); default: the newest one hlsbench images build made (repeatable)")
	f.Var(&o.Memory, "memory", "with --runtime docker: each container's memory limit, e.g. 1GiB; auto (the default) is twice the run's largest cache store, 1GiB for the 512MiB store, as the reference gave malloc,256m 512 MB; none for no limit. A limit that cannot hold the store and 128MiB more is refused")
	f.BoolVar(&o.AllowOOM, "allow-oom", false, "with --memory SIZE: run even when the limit cannot hold the cache store, to see what an engine does when its container is too small (a kill for memory fails the pass it happens in)")
	f.Float64Var(&o.CPUs, "cpus", defaultContainerCPUs, "with --runtime docker: each container's CPU quota, as docker run --cpus (the reference's 4; at most this host's CPUs; 0: none), besides the cores hlsbench pins it to")
	f.StringVar(&o.Topology, "topology", engines.TopologyPlaintext, "how the workloads measured over topologies reach each engine: plaintext, tls (the engine's own TLS listener, a certificate made for the run), proxyv2 (a TLS terminator in front speaking PROXY v2 to the engine), a comma list, or all")
	f.StringVar(&o.Terminator, "terminator", engines.DefaultTerminator, "the TLS terminator of topology proxyv2: hitch (write-proxy-v2) or haproxy (send-proxy-v2)")
	f.StringVar(&o.Lock, "lock", "wait", "another benchmark running on this machine: wait for it, fail, or none (run beside it)")

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

// RunBench is `hlsbench run`.
func RunBench(ctx context.Context, stdout, stderr io.Writer, o RunOptions) error {
	specs, err := workloads.Specs(o.Workload)
	if err != nil {
		return protocolErr(err)
	}
	sels, err := parseEngines(o.Engine)
	if err != nil {
		return err
	}
	engineNames := rows(sels)
	cfg, err := o.protocol()
	if err != nil {
		return err
	}
	topologies, err := parseTopologies(o.Topology)
	if err != nil {
		return err
	}
	term, ok := engines.LookupTerminator(o.Terminator)
	if !ok {
		return usagef("--terminator %q: want %s", o.Terminator, strings.Join(engines.TerminatorNames(), " or "))
	}
	if !slices.Contains(topologies, engines.TopologyProxyV2) {
		term = nil
	}
	if !slices.Contains(engines.Runtimes, o.Runtime) {
		return usagef("--runtime %q: want one of %s", o.Runtime, strings.Join(engines.Runtimes, ", "))
	}
	imageFlags, err := parseImages(o.Images, engineNames)
	if err != nil {
		return err
	}
	if len(imageFlags) > 0 && o.Runtime != engines.RuntimeDocker {
		return usagef("--image goes with --runtime docker")
	}
	lim, err := containerLimits(o, specs, cfg)
	if err != nil {
		return err
	}
	externalURLs, originListens, err := parseExternals(sels, o.URL, o.OriginListen)
	if err != nil {
		return err
	}
	hasExternal := len(externalURLs) > 0
	if o.Runtime == engines.RuntimeInproc && o.Binary != "" {
		return usagef("--binary goes with --runtime process: inproc serves the built-in cache inside this hlsbench")
	}
	if o.Runtime == engines.RuntimeInproc && o.Config != "" {
		return usagef("--config goes with --runtime process or docker: inproc runs only the built-in cache, which takes no configuration file")
	}
	configs, err := loadConfigs(o.Config, sels, originListens)
	if err != nil {
		return err
	}
	// A process engine that is not installed is a clear error before
	// anything starts (in a container, the image has it).
	binaries, sources := map[string]string{}, map[string]engines.Source{}
	if o.Runtime != engines.RuntimeDocker {
		if binaries, sources, err = resolveBinaries(ctx, stderr, sels, o.Binary); err != nil {
			return err
		}
	} else if o.Binary != "" {
		return usagef("--binary goes with --runtime process; with docker, --image NAME=IMAGE")
	}
	if o.Runtime == engines.RuntimeProcess {
		if err := checkConfigs(ctx, configs, sels, binaries); err != nil {
			return err
		}
	}
	for _, row := range engineNames {
		if uc := configs[row]; uc != nil {
			where := ""
			if uc.Listen != "" {
				where = ", listening on " + uc.Listen
			}
			fmt.Fprintf(stderr, "hlsbench: %s runs %s as given (sha256 %.12s): its origin at %s%s; the results keep it with what hlsbench cannot guarantee of it\n",
				row, uc.Path, uc.SHA256, uc.Origin, where)
		}
	}
	out := ""
	if !o.NoSave {
		out = o.Out
		if out == "" {
			out = results.DefaultDir()
		}
		if err := os.MkdirAll(out, 0o755); err != nil {
			return usagef("--out %s: %v", out, err)
		}
	}
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("find the hlsbench binary for child processes: %w", err)
	}

	settings := cfg.Record()
	maps.Copy(settings, map[string]any{"engines": engineNames, "workloads": o.Workload,
		"quick": o.Quick, "nightly": o.nightly, "runtime": o.Runtime})
	pols := map[string]any{}
	for _, s := range specs {
		pols[s.Name] = map[string]any{"rate": s.Rate, "connections": s.Connections, "policy": s.Policy}
	}
	settings["workload_settings"] = pols
	settings["lock"] = o.Lock
	settings["topologies"] = topologies
	if term != nil {
		settings["terminator"] = term.Name()
	}
	if hasExternal {
		settings["external_url"], settings["origin_listen"] = o.URL, o.OriginListen
	}
	if o.Binary != "" {
		settings["binary"] = o.Binary
	}
	if len(configs) > 0 {
		cf := map[string]any{}
		for row, uc := range configs {
			cf[row] = map[string]string{"path": uc.Path, "sha256": uc.SHA256}
		}
		settings["configs"] = cf
	}

	tables := stdout
	if o.JSON {
		tables = stderr
	}
	ctx, endRun, err := beginRun(ctx, stderr, o.Lock) // runstate.go: state file, bench lock, sweep
	if err != nil {
		return err
	}
	defer endRun()
	var progress *workloads.Progress
	if !o.Quiet {
		progress = workloads.NewProgress(stderr, isTerminal(stderr))
	}
	var dockerImagesFound map[string]string
	var docker launch.Docker
	if o.Runtime == engines.RuntimeDocker {
		withTerm := sels
		if term != nil {
			withTerm = append(slices.Clone(sels), engines.Selection{Name: term.Name()})
		}
		cli, imgs, found, err := dockerImages(ctx, withTerm, imageFlags, Version)
		if err != nil {
			return err
		}
		pkgs := map[string][]string{} // every package of each image, by its ref
		for sel, im := range found {
			if daemon, src := imageSource(im); daemon != "" {
				binaries[sel], sources[sel] = daemon, src
			}
			if len(im.Packages) > 0 {
				pkgs[imgs[sel]] = im.Packages
			}
		}
		if len(pkgs) > 0 {
			settings["image_packages"] = pkgs
		}
		defer cli.Close()
		dockerImagesFound = imgs
		docker = launch.Docker{Client: cli, RunID: runstate.From(ctx).ID(), Memory: lim.Memory, CPUs: lim.CPUs}
		settings["images"] = imgs
		settings["container_memory_bytes"] = lim.Memory
		settings["container_cpus"] = lim.CPUs
		if lim.Short != "" {
			settings["container_memory_below_store"] = true
			fmt.Fprintln(stderr, "hlsbench: "+lim.Short)
		}
		if lim.AskedCPU != lim.CPUs {
			settings["container_cpus_asked"] = lim.AskedCPU
		}
	}
	lch, err := engines.LauncherFor(o.Runtime, docker)
	if err != nil {
		return err
	}
	var tlsSet *certs.Set
	if slices.Contains(topologies, engines.TopologyTLS) || term != nil {
		// The run's own authority: trusted by this run's generator alone,
		// its files only in each engine's work directory.
		if tlsSet, err = certs.New([]string{"127.0.0.1", "::1", "localhost"}); err != nil {
			return err
		}
	}
	rs := workloads.RunSpec{Engines: engineNames, Selections: selectionMap(sels), Workloads: specs, Config: cfg, Launcher: lch, Images: dockerImagesFound,
		Topologies: topologies, TLS: tlsSet, Terminator: term,
		Runtime: o.Runtime, ExternalURLs: externalURLs, OriginListens: originListens, Binaries: binaries, Sources: sources, Configs: configs, OutDir: out, Self: self,
		Version: Version, Commit: Commit, Settings: settings, Progress: progress}
	if o.suite != nil {
		if err := o.suite.begin(&rs, stderr); err != nil {
			return err
		}
	}
	run, rc, err := workloads.Execute(ctx, rs, tables)
	err = startError(err)
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
	if o.JSON && run != nil {
		if jerr := writeRunJSON(stdout, run, rc.Path()); jerr != nil && err == nil {
			err = jerr
		}
	}
	switch {
	case err != nil:
		return err
	case run.Interrupted:
		return errInterrupted
	}
	return verdict(run)
}

// maxWarnings bounds the run's warnings printed at its end; the file has all.
const maxWarnings = 5

// writeWarnings prints the run's warnings and whether other processes were
// busy on the measured CPUs.
func writeWarnings(w io.Writer, run *results.Run) {
	if in := run.Interference; in != nil && in.BusyPasses > 0 {
		who := "busiest: " + strings.Join(in.Busiest, ", ")
		if len(in.Busiest) == 0 {
			who = "no single process stands out"
		}
		fmt.Fprintf(w, "hlsbench: other processes took over %.0f%% of the measured CPUs (%s) in %d of %d passes, up to %.0f%% (%s); figures may include them: quiet the machine and run again\n",
			100*in.Threshold, in.CPUs, in.BusyPasses, in.Passes, 100*in.MaxOtherShare, who)
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
