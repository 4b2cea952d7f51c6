package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/hlsbench/hlsbench/origin"
	"github.com/hlsbench/hlsbench/workloads/loadgen"
	"github.com/hlsbench/hlsbench/workloads/loadgen/agent"
)

// agentReport is one agent's part of `hlsbench load --agents`, in --json.
type agentReport struct {
	Agent string `json:"agent"`
	// Its clock before the first pass, as measured from here, and the
	// largest start error of its passes.
	OffsetMs      float64  `json:"offset_ms"`
	UncertaintyMs float64  `json:"uncertainty_ms"`
	RTTMs         float64  `json:"rtt_ms"`
	StartErrorMs  float64  `json:"start_error_ms"`
	Requests      int64    `json:"requests"`
	OK            int64    `json:"ok"`
	Valid         bool     `json:"valid"`
	Reasons       []string `json:"invalid_reasons,omitempty"`
}

// agentURLs checks --agents: each an http URL or a host:port.
func agentURLs(list []string) ([]string, error) {
	var out []string
	for _, a := range list {
		if a == "" {
			continue
		}
		if !strings.Contains(a, "://") {
			if _, _, err := net.SplitHostPort(a); err != nil {
				return nil, usagef("--agents %q: want host:port or http://host:port of an hlsbench agent", a)
			}
			a = "http://" + a
		}
		u, err := url.Parse(a)
		if err != nil || u.Scheme != "http" || u.Host == "" || (u.Path != "" && u.Path != "/") {
			return nil, usagef("--agents %q: want host:port or http://host:port of an hlsbench agent", a)
		}
		out = append(out, "http://"+u.Host)
	}
	return out, nil
}

// openAgents opens a generator on every agent: o's connections and shards
// on each.
func openAgents(ctx context.Context, o LoadOptions, base string, hdrs [][2]string) ([]agent.Part, error) {
	urls, err := agentURLs(o.Agents)
	if err != nil {
		return nil, err
	}
	spec := agent.GeneratorSpec{URL: base, Connections: o.Connections, Timeout: o.Timeout, Header: hdrs, Method: o.Method,
		Insecure: o.Insecure, Shards: o.Shards, ChecksumHeader: origin.ChecksumHeader}
	if o.CAFile != "" {
		pem, err := os.ReadFile(o.CAFile)
		if err != nil {
			return nil, usagef("--ca: %v", err)
		}
		spec.CAPEM = string(pem)
	}
	var parts []agent.Part
	for _, u := range urls {
		r, err := (&agent.Client{URL: u}).Open(ctx, spec)
		if err != nil {
			closeAgents(parts)
			var ae *agent.Error
			if errors.As(err, &ae) && ae.Field != "" {
				return nil, flagErr(&loadgen.ConfigError{Field: ae.Field, Msg: ae.Msg})
			}
			return nil, fmt.Errorf("--agents: %w", err)
		}
		parts = append(parts, agent.Part{Name: "agent " + strings.TrimPrefix(u, "http://"), Remote: r})
	}
	return parts, nil
}

func closeAgents(parts []agent.Part) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, p := range parts {
		_ = p.Remote.Close(ctx)
	}
}

// runAgentBursts is runBursts over agents: each pass is one schedule
// split over them, started at one instant, their results merged exactly.
func runAgentBursts(ctx context.Context, stdout io.Writer, parts []agent.Part, o LoadOptions, arrival loadgen.Arrival, paths []string) ([]*loadgen.Result, []agentReport, error) {
	var results []*loadgen.Result
	reports := make([]agentReport, len(parts))
	for i, p := range parts {
		reports[i] = agentReport{Agent: strings.TrimPrefix(p.Name, "agent "), Valid: true}
	}
	for i, path := range paths {
		spec := agent.PassSpec{Path: path, Rate: o.Rate, Arrival: arrival, Duration: o.Duration,
			Requests: o.Requests, Burst: o.Burst, Seed: o.Seed}
		r, reps, err := agent.Shared(ctx, parts, spec, o.ClockTolerance)
		if err != nil {
			var ae *agent.Error
			if errors.As(err, &ae) && ae.Field != "" {
				return nil, nil, flagErr(&loadgen.ConfigError{Field: ae.Field, Msg: ae.Msg})
			}
			return nil, nil, err
		}
		for j, rep := range reps {
			a := &reports[j]
			if i == 0 {
				a.OffsetMs, a.UncertaintyMs, a.RTTMs = ms(rep.Before.Offset), ms(rep.Before.Uncertainty), ms(rep.Before.RTT)
			}
			a.StartErrorMs = max(a.StartErrorMs, ms(rep.StartError))
			a.Requests += rep.Result.Requests
			a.OK += rep.Result.OK
			a.Valid = a.Valid && rep.Result.Valid
			a.Reasons = append(a.Reasons, rep.Result.InvalidReasons...)
		}
		results = append(results, r)
		if !o.JSON && len(paths) > 1 {
			printBurst(stdout, i, len(paths), path, r)
		}
		if r.Interrupted {
			break
		}
	}
	return results, reports, nil
}

// writeAgents prints each agent's line under the text report.
func writeAgents(w io.Writer, reports []agentReport) {
	for _, a := range reports {
		verdict := "valid"
		if !a.Valid {
			verdict = "INVALID"
		}
		fmt.Fprintf(w, "agent %s: %d requests (ok %d), clock %+.3f ms ±%.3f ms (round trip %.3f ms), start error ≤ %.3f ms, %s\n",
			a.Agent, a.Requests, a.OK, a.OffsetMs, a.UncertaintyMs, a.RTTMs, a.StartErrorMs, verdict)
	}
}

func ms(d time.Duration) float64 { return float64(d) / 1e6 }

// runLoadAgents is `hlsbench load --agents`.
func runLoadAgents(ctx context.Context, stdout io.Writer, o LoadOptions, arrival loadgen.Arrival, hdrs [][2]string, base string, paths []string) error {
	switch {
	case o.HDRLog != "":
		return usagef("--hdr-log goes without --agents: the agents' passes come back as whole histograms, not interval logs")
	case o.ClockTolerance <= 0:
		return usagef("--clock-tolerance %v: want a positive duration", o.ClockTolerance)
	}
	parts, err := openAgents(ctx, o, base, hdrs)
	if err != nil {
		return err
	}
	defer closeAgents(parts)
	results, reports, err := runAgentBursts(ctx, stdout, parts, o, arrival, paths)
	if err != nil {
		return err
	}
	res := loadgen.Merge(results)
	if err := writeLoad(stdout, o, results, res, reports); err != nil {
		return err
	}
	return loadVerdict(res)
}
