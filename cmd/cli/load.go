package cli

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/hlsbench/hlsbench/origin"
	"github.com/hlsbench/hlsbench/workloads/loadgen"
	"github.com/hlsbench/hlsbench/workloads/loadgen/agent"
)

// LoadOptions are the flags of `hlsbench load`.
type LoadOptions struct {
	URL         string
	Rate        float64
	Arrival     string
	Duration    time.Duration
	Requests    int64
	Connections int
	Timeout     time.Duration
	Headers     []string
	Method      string
	Burst       int
	Repeat      int
	JSON        bool
	HDRLog      string
	CAFile      string
	Insecure    bool
	Shards      int
	Seed        uint64
	// Agents are hlsbench agents that carry the load instead of this
	// process: one schedule split over them (--agents).
	Agents         []string
	ClockTolerance time.Duration
}

func newLoadCmd(stdout, stderr io.Writer) *cobra.Command {
	o := LoadOptions{}
	c := &cobra.Command{
		Use:   "load URL",
		Short: "Load one URL open-loop and report latency corrected for coordinated omission",
		Long: `Load one URL open-loop and report latency corrected for coordinated omission.

Requests are scheduled at intended send times t0 + i/rate and the schedule never
waits for answers. Latency counts from the intended send time (corrected, the
headline) and from the moment the request was written (uncorrected). TTFB is the
first byte of the status line; total is the last body byte.

--rate 0 runs closed loop: each connection sends its next request as soon as the
last is answered. --burst N opens N connections and releases N requests at one
instant; --repeat runs that again, and {rep} (the repetition, from 0) and {nonce}
(random per run) in the URL give every repetition a fresh object.

A pass is invalid when the generator's own lateness moved a published figure by
more than 5% (at least 0.05 ms), when its event loop was saturated, when it
dropped requests it could not queue, or when no request succeeded (its latency
figures are then null in --json and "—" in text). The reasons say what to do.

--agents sends the load from hlsbench agents (hlsbench agent) on other hosts
instead: one schedule, request i from agent i mod N, each agent starting at
the same instant read on its own clock. Before and after every pass each
agent's clock offset is measured by round trips (as NTP does); a pass where
an agent's offset, its uncertainty or its start error exceeds
--clock-tolerance is invalid. The agents' histograms come back whole and
are merged exactly.

Exit codes: 0 finished and valid; 1 failed; 2 bad flags or URL; 3 finished but
invalid or without a successful request (the results and reasons are printed,
and one line on stderr); 130 interrupted (what was measured is still printed).`,
		Example: `  hlsbench load --rate 5000 --duration 10s --connections 50 http://127.0.0.1:8080/stream/index.m3u8
  hlsbench load --rate 500 --header 'Range: bytes=0-65535' http://127.0.0.1:8080/stream/segment-0.ts
  hlsbench load --burst 200 --repeat 20 'http://127.0.0.1:8080/stream/segment-{rep}.ts?n={nonce}'
  hlsbench load --rate 0 --duration 10s --json http://127.0.0.1:8080/
  hlsbench load --agents 10.0.0.2:7070,10.0.0.3:7070 --rate 20000 http://10.0.0.9:8080/stream/index.m3u8`,
		Args: exactArgs(1, "one URL"),
		RunE: func(c *cobra.Command, args []string) error {
			o.URL = args[0]
			return RunLoad(c.Context(), stdout, stderr, o)
		},
	}
	f := c.Flags()
	f.Float64Var(&o.Rate, "rate", 1000, "requests per second, open loop; 0 runs closed loop")
	f.StringVar(&o.Arrival, "arrival", "uniform", "spacing of intended send times: uniform or poisson")
	f.DurationVar(&o.Duration, "duration", loadgen.DefaultDuration, "how long to send")
	f.Int64Var(&o.Requests, "requests", 0, "stop after this many requests (0: no limit but --duration)")
	f.IntVar(&o.Connections, "connections", loadgen.DefaultConnections, "keep-alive connections, opened before the first send")
	f.DurationVar(&o.Timeout, "timeout", loadgen.DefaultTimeout, "a request unanswered this long after its intended send time is a timeout")
	f.StringArrayVarP(&o.Headers, "header", "H", nil, `request header "Name: value" (repeatable)`)
	f.StringVar(&o.Method, "method", "GET", "GET or HEAD")
	f.IntVar(&o.Burst, "burst", 0, "release this many requests at one instant, one per connection")
	f.IntVar(&o.Repeat, "repeat", 1, "with --burst: how many bursts")
	f.BoolVar(&o.JSON, "json", false, "print one JSON object on stdout")
	f.StringVar(&o.HDRLog, "hdr-log", "", "write an HdrHistogram interval log (ttfb and total, ns) to this file")
	f.StringVar(&o.CAFile, "ca", "", "PEM file of extra CA certificates for https")
	f.BoolVar(&o.Insecure, "insecure", false, "skip TLS certificate verification (test certificates)")
	f.IntVar(&o.Shards, "shards", 0, "event-loop threads (0: one fewer than the CPUs, at least 1, at most --connections)")
	f.Uint64Var(&o.Seed, "seed", 0, "seed for --arrival poisson (0: random)")
	f.StringSliceVar(&o.Agents, "agents", nil, "hlsbench agents (host:port, comma-separated) that send the load: request i goes to agent i mod N, all from one instant; --connections and --shards are each agent's")
	f.DurationVar(&o.ClockTolerance, "clock-tolerance", agent.ClockTolerance, "with --agents: how far an agent's clock (offset, its uncertainty, its start) may be off before its passes are invalid")
	return c
}

// loadReport is the JSON shape of `hlsbench load --json`: the pass summary,
// plus each repetition's for a repeated burst.
type loadReport struct {
	loadgen.Summary
	URL         string            `json:"url"`
	Repetitions []loadgen.Summary `json:"repetitions,omitempty"`
	Agents      []agentReport     `json:"agents,omitempty"`
}

// RunLoad is `hlsbench load`.
func RunLoad(ctx context.Context, stdout, stderr io.Writer, o LoadOptions) error {
	arrival, hdrs, err := checkLoad(&o)
	if err != nil {
		return err
	}
	base, paths, err := expandURL(o.URL, o.Repeat, newNonce())
	if err != nil {
		return err
	}
	// Checked before the generator opens its connections: the passes
	// differ only in their paths.
	first := loadgen.Pass{Path: paths[0], Rate: o.Rate, Duration: o.Duration, Requests: o.Requests, Burst: o.Burst}
	if n := len(o.Agents); n > 0 {
		// The first agent's share is the largest.
		first.Share = loadgen.Share{Index: 0, Of: n}
	}
	if err := first.Validate(o.Connections); err != nil {
		return flagErr(err)
	}

	if len(o.Agents) > 0 {
		return runLoadAgents(ctx, stdout, o, arrival, hdrs, base, paths)
	}
	var logFile *os.File
	opts := loadgen.Options{URL: base, Connections: o.Connections, Timeout: o.Timeout, Header: hdrs, ChecksumHeader: origin.ChecksumHeader,
		Method: o.Method, CAFile: o.CAFile, Insecure: o.Insecure, Shards: o.Shards}
	if o.HDRLog != "" {
		// Written beside its final name and renamed when complete.
		logFile, err = os.CreateTemp(filepath.Dir(o.HDRLog), "."+filepath.Base(o.HDRLog)+".*")
		if err != nil {
			return usagef("--hdr-log: %v", err)
		}
		defer os.Remove(logFile.Name())
		defer logFile.Close()
		opts.HDRLog = logFile
	}
	g, err := loadgen.New(ctx, opts)
	if err != nil {
		return flagErr(err)
	}
	defer g.Close()
	results, err := runBursts(ctx, stdout, g, o, arrival, paths)
	if err != nil {
		return err
	}
	if err := g.Close(); err != nil {
		return err
	}
	res := loadgen.Merge(results)
	if err := writeLoad(stdout, o, results, res, nil); err != nil {
		return err
	}
	if logFile != nil {
		if err := keepHDRLog(logFile, o.HDRLog); err != nil {
			return err
		}
	}
	return loadVerdict(res)
}

// loadVerdict is the error the merged result res ends `hlsbench load` with.
func loadVerdict(res *loadgen.Result) error {
	if res.Interrupted {
		return errInterrupted
	}
	if !res.Valid {
		return fmt.Errorf("%w: %s", errInvalid, strings.Join(res.InvalidReasons, "; "))
	}
	return nil
}

// checkLoad checks o's flags, returns the arrival and headers they give,
// and gives a burst as many connections when --connections was left alone.
func checkLoad(o *LoadOptions) (loadgen.Arrival, [][2]string, error) {
	arrival, err := loadgen.ParseArrival(o.Arrival)
	if err != nil {
		return arrival, nil, usagef("--arrival: %v", err)
	}
	switch {
	case o.Connections < 1:
		return arrival, nil, usagef("--connections %d: want 1 or more", o.Connections)
	case o.Timeout <= 0:
		return arrival, nil, usagef("--timeout %v: want a positive duration", o.Timeout)
	case o.Repeat < 1:
		return arrival, nil, usagef("--repeat %d: want 1 or more", o.Repeat)
	case o.Repeat > 1 && o.Burst == 0:
		return arrival, nil, usagef("--repeat needs --burst")
	}
	if o.Burst > 0 && o.Connections < o.Burst {
		if o.Connections != loadgen.DefaultConnections {
			return arrival, nil, usagef("--burst %d needs as many connections; --connections is %d", o.Burst, o.Connections)
		}
		o.Connections = o.Burst
	}
	var hdrs [][2]string
	for _, h := range o.Headers {
		kv, err := loadgen.ParseHeader(h)
		if err != nil {
			return arrival, nil, usagef("--header: %v", err)
		}
		hdrs = append(hdrs, kv)
	}
	return arrival, hdrs, nil
}

// runBursts runs one pass per path (a repeated burst's repetitions), until
// one is interrupted, and prints a line for each repetition.
func runBursts(ctx context.Context, stdout io.Writer, g *loadgen.Generator, o LoadOptions, arrival loadgen.Arrival, paths []string) ([]*loadgen.Result, error) {
	var results []*loadgen.Result
	for i, path := range paths {
		p := loadgen.Pass{Path: path, Rate: o.Rate, Arrival: arrival, Duration: o.Duration,
			Requests: o.Requests, Burst: o.Burst, Seed: o.Seed}
		r, err := g.Run(ctx, p)
		if err != nil {
			return nil, flagErr(err)
		}
		results = append(results, r)
		if !o.JSON && len(paths) > 1 {
			printBurst(stdout, i, len(paths), path, r)
		}
		if r.Interrupted {
			break
		}
	}
	return results, nil
}

// printBurst is a repeated burst's line for one repetition.
func printBurst(w io.Writer, i, n int, path string, r *loadgen.Result) {
	s := r.Summary()
	fmt.Fprintf(w, "burst %d/%d %s: ok %d errors %d  TTFB p50 %sms p99 %sms  total p50 %sms p99 %sms\n",
		i+1, n, path, s.OK, s.Errors, msText(s.TTFB.P50), msText(s.TTFB.P99), msText(s.Total.P50), msText(s.Total.P99))
}

// writeLoad prints the merged result res, as text or (--json) as a
// loadReport with each repetition's.
func writeLoad(stdout io.Writer, o LoadOptions, results []*loadgen.Result, res *loadgen.Result, agents []agentReport) error {
	if !o.JSON {
		// A repeated burst says so even when it was interrupted after one.
		if o.Repeat > 1 {
			fmt.Fprintf(stdout, "\nAll %d bursts:\n", len(results))
		}
		if err := res.WriteText(stdout); err != nil {
			return err
		}
		writeAgents(stdout, agents)
		return nil
	}
	rep := loadReport{Summary: res.Summary(), URL: o.URL, Agents: agents}
	if len(results) > 1 {
		for _, r := range results {
			rep.Repetitions = append(rep.Repetitions, r.Summary())
		}
	}
	enc := json.NewEncoder(stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(rep)
}

// keepHDRLog gives the complete interval log its name.
func keepHDRLog(f *os.File, name string) error {
	if err := f.Close(); err != nil {
		return fmt.Errorf("--hdr-log: %w", err)
	}
	if err := os.Rename(f.Name(), name); err != nil {
		return fmt.Errorf("--hdr-log: %w", err)
	}
	return nil
}

// msText prints a millisecond figure, or a dash where nothing was measured.
func msText(v *float64) string {
	if v == nil {
		return "—"
	}
	return strconv.FormatFloat(*v, 'f', 3, 64)
}

// flagErr turns the generator's configuration errors into usage errors that
// name the flag.
func flagErr(err error) error {
	var ce *loadgen.ConfigError
	if !errors.As(err, &ce) {
		return err
	}
	if ce.Field == "url" || ce.Field == "path" {
		return usagef("URL: %s", ce.Msg)
	}
	return usagef("--%s: %s", ce.Field, ce.Msg)
}

func newNonce() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// expandURL checks the URL and returns its scheme://host part and one path per
// repetition, with {rep} and {nonce} replaced.
func expandURL(raw string, repeat int, nonce string) (string, []string, error) {
	probe := strings.NewReplacer("{rep}", "0", "{nonce}", nonce).Replace(raw)
	u, err := url.Parse(probe)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", nil, usagef("URL %q: want http://host:port/path or https://host:port/path", raw)
	}
	if strings.ContainsAny(u.Host, "{}") {
		return "", nil, usagef("URL %q: {rep} and {nonce} may appear in the path only", raw)
	}
	base := u.Scheme + "://" + u.Host
	i := strings.Index(raw, u.Host) + len(u.Host)
	tmpl := raw[i:]
	if tmpl == "" {
		tmpl = "/"
	}
	paths := make([]string, repeat)
	for r := range paths {
		paths[r] = strings.NewReplacer("{rep}", strconv.Itoa(r), "{nonce}", nonce).Replace(tmpl)
	}
	return base, paths, nil
}
