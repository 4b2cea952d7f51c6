package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
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
	"github.com/hlsbench/hlsbench/origin"
	"github.com/hlsbench/hlsbench/results"
	"github.com/hlsbench/hlsbench/workloads"
)

// RunOptions are the flags of `hlsbench run`.
type RunOptions struct {
	Engine       string
	Workload     string
	Passes       int
	HostRepeats  int
	Warmups      int
	PassDuration time.Duration
	Rate         float64
	Out          string
	NoSave       bool
	Quick        bool
	JSON         bool
	Runtime      string
	URL          string
	OriginListen string
	FailMode     string
	PurgeMode    string // purge-stampede: auto, ban or purge
	PurgeMethod  string // purge-stampede: the method of a per-object purge
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
	SLO          string // capacity's service levels: test=pQ:duration, comma list

	Audience AudienceOptions

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
  hit-path     5000 rps on the 2 KB media playlist, warm cache: p50 and p99 TTFB
  segment      4 MiB full GET and 64 KiB Range GET at 500 rps: p50 and p99 TTFB
  miss-storm   200 clients at once on a cold segment: TTFB and coalescing,
               origin fetches counted at the origin
  origin-flap  200 rps while the origin fails in cycles: TTFB during failure and
               the grace ratio, every answer proven fresh or stale from the
               origin's stamps
  purge-stampede  500 rps over a stream's 502 objects (Zipf), the whole stream
               invalidated 2 s in (--purge-mode), 6 s more: refill amplification
               at the origin, time to recover, stale answers after the purge,
               refill TTFB, purge duration
  repeated-bans  the same stream and load, one object invalidated a second for
               20 s, the least popular first: the p99 TTFB drift of the objects
               left alone (last quarter ÷ first), the engine's CPU drift, its
               ban list (Varnish's MAIN.bans), ban duration, stale answers
  live-audience  --viewers players (default 500) joining over --ramp: live
               channels whose playlists advance every --target-duration and VOD
               titles (Zipf), an ABR --ladder, a share switching rendition; hit
               ratio and byte offload at the origin, origin requests per new live
               segment, playlist and segment TTFB, stall risk, live-edge
               staleness (the origin's stamps), engine memory per object, and a
               miss-ratio curve over --store-sizes (the engine restarted for each)
Each workload has 3 warm-up and 20 measured passes (5 s for rate workloads;
repeated-bans 1 and 5 of 22 s; live-audience 1 and 3 of 40 s, then 1 and 1
at each other store size);
headline percentiles come from all measured samples merged.

--quick: ` + workloads.QuickText + `.

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
  hlsbench run --engine builtin --workload miss-storm
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
	f.IntVar(&o.Passes, "passes", 20, "measured passes per test")
	f.IntVar(&o.HostRepeats, "host-repeats", workloads.DefaultHostRepeats, "hit-path and segment: run a pass the host spoiled (steal, interrupts, other processes or CPU stalls past their thresholds) again, up to this many times (0: never; --quick: 1)")
	f.IntVar(&o.Warmups, "warmups", 3, "unmeasured warm-up passes per test")
	f.DurationVar(&o.PassDuration, "pass-duration", 5*time.Second, "length of one pass of a rate workload")
	f.Float64Var(&o.Rate, "rate", 0, "override every rate workload's rate (0: hit-path 5000, segment 500, origin-flap 200)")
	f.BoolVar(&o.Quick, "quick", false, "short profile: "+workloads.QuickText)
	f.BoolVar(&o.JSON, "json", false, "print the saved run document (with file and run_id) on stdout")
	f.BoolVarP(&o.Quiet, "quiet", "q", false, "no progress lines (tables, results and errors are still printed)")
	f.StringVar(&o.Runtime, "runtime", "process", "where the engines, the builtin cache and the origin run: process (child processes pinned apart from the generator), docker (a container each, host networking) or inproc (builtin and origin inside hlsbench)")

	f.StringArrayVar(&o.Images, "image", nil, "with --runtime docker: `NAME=IMAGE`, the image of an engine or of hlsbench (origin and builtin); default: the newest one hlsbench images build made (repeatable)")
	f.Var(&o.Memory, "memory", "with --runtime docker: each container's memory limit, e.g. 1GiB; auto (the default) is twice the run's largest cache store, 1GiB for the 512MiB store, as the reference gave malloc,256m 512 MB; none for no limit. A limit that cannot hold the store and 128MiB more is refused")
	f.BoolVar(&o.AllowOOM, "allow-oom", false, "with --memory SIZE: run even when the limit cannot hold the cache store, to see what an engine does when its container is too small (a kill for memory fails the pass it happens in)")
	f.Float64Var(&o.CPUs, "cpus", defaultContainerCPUs, "with --runtime docker: each container's CPU quota, as docker run --cpus (the reference's 4; at most this host's CPUs; 0: none), besides the cores hlsbench pins it to")
	f.StringVar(&o.FailMode, "fail-mode", "5xx", "origin-flap failure: 5xx, refuse or drop")
	f.StringVar(&o.PurgeMode, "purge-mode", workloads.PurgeModeAuto, "purge-stampede's invalidation: auto (each engine's own: a ban where it has one, else a request per object), ban (one call for the stream's prefix) or purge (a request per object)")
	f.StringVar(&o.PurgeMethod, "purge-method", engines.PurgeMethod, "purge-stampede: the HTTP method of a per-object purge (--engine external is purged this way)")
	f.StringVar(&o.Topology, "topology", engines.TopologyPlaintext, "how hit-path and segment reach each engine: plaintext, tls (the engine's own TLS listener, a certificate made for the run), proxyv2 (a TLS terminator in front speaking PROXY v2 to the engine), a comma list, or all")
	f.StringVar(&o.Terminator, "terminator", engines.DefaultTerminator, "the TLS terminator of topology proxyv2: hitch (write-proxy-v2) or haproxy (send-proxy-v2)")
	f.StringVar(&o.SLO, "slo", "", "capacity's service level per test, `TEST=QUANTILE:DURATION` items, comma separated: TEST hit-path, segment-full or segment-range, QUANTILE p50, p90, p99 or p999, DURATION with its unit; tests not named keep their defaults: "+workloads.DefaultSLOText)
	f.StringVar(&o.Lock, "lock", "wait", "another benchmark running on this machine: wait for it, fail, or none (run beside it)")

	audienceFlags(f, &o.Audience)
}

// AudienceOptions are live-audience's flags (workloads.Config).
type AudienceOptions struct {
	Viewers        int
	Channels       int
	Titles         int
	Ladder         bitrates
	TargetDuration time.Duration
	AudienceZipf   float64
	VODShare       float64
	SwitchShare    float64
	Ramp, Watch    time.Duration
	AudiencePasses int
	StoreSizes     byteSizes
}

// audienceFlags binds live-audience's flags to o.
func audienceFlags(f *pflag.FlagSet, o *AudienceOptions) {
	d := workloads.Defaults()
	o.Ladder = bitrates(slices.Clone(origin.DefaultLadder))
	o.StoreSizes = byteSizes(slices.Clone(workloads.DefaultStoreSizes))
	f.IntVar(&o.Viewers, "viewers", d.Viewers, "live-audience: players joining over --ramp, each with its own clock")
	f.IntVar(&o.Channels, "channels", origin.DefaultChannels, "live-audience: live channels, chosen with Zipf popularity")
	f.IntVar(&o.Titles, "titles", origin.DefaultTitles, "live-audience: VOD titles of 30 segments, chosen with Zipf popularity")
	f.Var(&o.Ladder, "ladder", "live-audience: the ABR ladder, bits per second, ascending (a segment is bitrate × --target-duration / 8 bytes)")
	f.DurationVar(&o.TargetDuration, "target-duration", origin.DefaultTargetDuration, "live-audience: every segment's duration; live playlists move on by one segment this often")
	f.Float64Var(&o.AudienceZipf, "audience-zipf", d.AudienceZipf, "live-audience: the Zipf exponent of channel and title popularity (0: uniform)")
	f.Float64Var(&o.VODShare, "vod-share", d.VODShare, "live-audience: the share of viewers on VOD, 0 to 1")
	f.Float64Var(&o.SwitchShare, "switch-share", d.SwitchShare, "live-audience: the share of viewers switching rendition every 3 to 6 segments, 0 to 1")
	f.DurationVar(&o.Ramp, "ramp", d.Ramp, "live-audience: viewers join at random over this long in each pass")
	f.DurationVar(&o.Watch, "watch", d.Watch, "live-audience: then every viewer watches this long")
	f.IntVar(&o.AudiencePasses, "audience-passes", d.AudiencePasses, "live-audience: measured passes after its warm-up")
	f.Var(&o.StoreSizes, "store-sizes", "live-audience: the miss-ratio curve's store sizes besides the policy's 512MiB, each after an engine restart and a warm-up (comma list, or none)")
}

// audienceNames are live-audience's flags.
func audienceNames() []string {
	var names []string
	fs := pflag.NewFlagSet("audience", pflag.ContinueOnError)
	audienceFlags(fs, &AudienceOptions{})
	fs.VisitAll(func(f *pflag.Flag) { names = append(names, f.Name) })
	return names
}

// copyAudience sets o's audience flags to their values in fs, which binds
// them to another AudienceOptions.
func copyAudience(fs *pflag.FlagSet, o *AudienceOptions) error {
	mine := pflag.NewFlagSet("audience", pflag.ContinueOnError)
	audienceFlags(mine, o)
	for _, name := range audienceNames() {
		if f := fs.Lookup(name); f != nil {
			if err := mine.Set(name, f.Value.String()); err != nil {
				return fmt.Errorf("--%s: %w", name, err)
			}
		}
	}
	return nil
}

// audience applies live-audience's flags to cfg: given ones, and the rest
// unless a profile (--quick) chose them.
func (ro *RunOptions) audience(cfg *workloads.Config, profile bool) error {
	o := &ro.Audience
	for _, f := range []struct {
		name string
		v    float64
	}{{"audience-zipf", o.AudienceZipf}, {"vod-share", o.VODShare}, {"switch-share", o.SwitchShare}} {
		if f.v < 0 {
			return usagef("--%s %v: want 0 or more", f.name, f.v)
		}
	}
	if o.Ramp < 0 {
		return usagef("--ramp %v: want 0 (every viewer at once) or more", o.Ramp)
	}
	for _, f := range []struct {
		name string
		v    int
	}{{"channels", o.Channels}, {"titles", o.Titles}} {
		if f.v < 1 {
			return usagef("--%s %d: want 1 or more", f.name, f.v)
		}
	}
	if o.TargetDuration <= 0 {
		return usagef("--target-duration %v: want a positive duration, e.g. 2s", o.TargetDuration)
	}
	if len(o.Ladder) == 0 {
		return usagef("--ladder: want at least one bitrate, e.g. %s", defaultLadder())
	}
	given := func(name string) bool { return ro.set[name] || !profile }
	cfg.Viewers, cfg.Channels, cfg.Titles = o.Viewers, o.Channels, o.Titles
	cfg.Ladder, cfg.TargetDuration = slices.Clone(o.Ladder), o.TargetDuration
	cfg.AudienceZipf, cfg.VODShare, cfg.SwitchShare = o.AudienceZipf, o.VODShare, o.SwitchShare
	// Zero is a setting here; in workloads.Config it takes the default.
	for _, v := range []*float64{&cfg.AudienceZipf, &cfg.VODShare, &cfg.SwitchShare} {
		if *v == 0 {
			*v = -1
		}
	}
	cfg.StoreSizes = slices.Clone([]int64(o.StoreSizes))
	if given("ramp") {
		cfg.Ramp = o.Ramp
		if cfg.Ramp == 0 {
			cfg.Ramp = -1 // all at once
		}
	}
	if given("watch") {
		cfg.Watch = o.Watch
	}
	if given("audience-passes") {
		cfg.AudiencePasses = o.AudiencePasses
	}
	return nil
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
	cfg := workloads.Defaults()
	profile := o.Quick || o.nightly // a profile's pass counts unless given
	switch {
	case o.Quick && o.nightly:
		return usagef("--quick and --nightly are two profiles: give one")
	case o.Quick:
		cfg = workloads.Quick()
	case o.nightly:
		cfg = workloads.Nightly()
	}
	if o.set["passes"] || !profile {
		cfg.Passes = o.Passes
	}
	if o.set["warmups"] || !profile {
		cfg.Warmups = o.Warmups
	}
	if o.set["pass-duration"] || !profile {
		cfg.PassDuration = o.PassDuration
	}
	if o.Passes < 1 {
		return usagef("--passes %d: want 1 or more", o.Passes)
	}
	if o.HostRepeats < 0 {
		return usagef("--host-repeats %d: want 0 or more", o.HostRepeats)
	}
	if o.set["host-repeats"] || !profile {
		cfg.HostRepeats = o.HostRepeats
	}
	if o.Warmups < 0 {
		return usagef("--warmups %d: want 0 or more", o.Warmups)
	}
	if cfg.Warmups == 0 {
		cfg.Warmups = -1 // explicit zero
	}
	cfg.Rate = o.Rate
	if cfg.FailMode, err = origin.ParseMode(o.FailMode); err != nil || cfg.FailMode == origin.Healthy {
		return usagef("--fail-mode %q: want 5xx, refuse or drop", o.FailMode)
	}
	cfg.PurgeMode, cfg.PurgeMethod = o.PurgeMode, o.PurgeMethod
	if err := o.audience(&cfg, profile); err != nil {
		return err
	}
	if cfg.SLO, err = workloads.ParseSLO(o.SLO); err != nil {
		return protocolErr(err)
	}
	if err := cfg.Validate(); err != nil {
		return protocolErr(err)
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

	settings := map[string]any{"engines": engineNames, "workloads": o.Workload, "passes": cfg.Passes,
		"warmups": max(cfg.Warmups, 0), "pass_duration": cfg.PassDuration.String(), "rate_override": cfg.Rate,
		"quick": o.Quick, "nightly": o.nightly, "host_repeats": cfg.HostRepeats, "runtime": o.Runtime, "fail_mode": cfg.FailMode.String(),
		"origin_flap":        map[string]any{"cycles": cfg.Cycles, "healthy_phase": cfg.HealthyPhase.String(), "fail_phase": cfg.FailPhase.String()},
		"miss_storm_clients": cfg.Clients, "timeout": cfg.Timeout.String(),
		"purge_stampede": map[string]any{"mode": cfg.PurgeMode, "method": cfg.PurgeMethod,
			"before": cfg.PurgeBefore.String(), "after": cfg.PurgeAfter.String()},
		"repeated_bans": map[string]any{"passes": cfg.BanPasses, "for": cfg.BanFor.String(), "every": workloads.BanEvery.String()},
		"live_audience": map[string]any{"viewers": cfg.Viewers, "channels": o.Audience.Channels, "titles": o.Audience.Titles,
			"ladder_bps": []int64(o.Audience.Ladder), "target_duration": o.Audience.TargetDuration.String(), "zipf": o.Audience.AudienceZipf,
			"vod_share": o.Audience.VODShare, "switch_share": o.Audience.SwitchShare, "ramp": max(cfg.Ramp, 0).String(), "watch": cfg.Watch.String(),
			"passes": cfg.AudiencePasses, "store_sizes": []int64(o.Audience.StoreSizes)}}
	pols := map[string]any{}
	for _, s := range specs {
		pols[s.Name] = map[string]any{"rate": s.Rate, "connections": s.Connections, "policy": s.Policy}
	}
	settings["workload_settings"] = pols
	settings["lock"] = o.Lock
	slo := map[string]string{}
	for test, l := range cfg.SLO {
		slo[test] = l.String()
	}
	settings["capacity"] = map[string]any{"slo": slo, "searches": cfg.CapacitySearches, "max_probes": cfg.CapacityProbes,
		"probe_warmup": cfg.ProbeWarmup.String(), "probe_duration": cfg.ProbeDuration.String()}
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
	switch fe.Field {
	case "workload", "passes", "pass-duration", "rate", "warmups", "purge-mode", "purge-method",
		"viewers", "channels", "titles", "ladder", "target-duration", "audience-zipf", "vod-share", "switch-share",
		"ramp", "watch", "audience-passes", "store-sizes", "slo":
		return usagef("--%s %s", fe.Field, fe.Msg)
	}
	return usagef("%s %s (set by the profile; see --quick)", fe.Field, fe.Msg)
}
