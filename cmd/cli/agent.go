package cli

import (
	"context"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/spf13/cobra"

	"github.com/hlsbench/hlsbench/workloads/loadgen/agent"
)

// AgentOptions are the flags of `hlsbench agent`.
type AgentOptions struct {
	Listen string
	// Skew moves the clock the agent tells: tests make a host with a
	// wrong clock with it.
	Skew time.Duration
}

// AgentReadyPrefix starts the line `hlsbench agent` prints once it listens.
const AgentReadyPrefix = agent.ReadyPrefix

func newAgentCmd(stdout, stderr io.Writer) *cobra.Command {
	o := AgentOptions{}
	c := &cobra.Command{
		Use:   "agent",
		Short: "Run a load generator agent that a controller on another host drives",
		Long: `Run a load generator agent until interrupted.

A controller (hlsbench run with generators placed on other hosts) opens
generators on it, sends each its share of one schedule with an absolute
start instant, and reads back every pass's histograms whole, merging them
exactly. It also asks the agent's clock, to measure the offset between the
hosts. The API (under /v1) has no authentication: listen on an address only
the test network reaches.`,
		Example: `  hlsbench agent --listen 127.0.0.1:7070`,
		Args:    exactArgs(0, "no arguments"),
		RunE: func(c *cobra.Command, args []string) error {
			return RunAgent(c.Context(), stdout, stderr, o)
		},
	}
	f := c.Flags()
	f.StringVar(&o.Listen, "listen", "127.0.0.1:7070", "API address (port 0 picks one)")
	f.DurationVar(&o.Skew, "skew-clock", 0, "tell a clock this far ahead (a test's wrong clock)")
	f.MarkHidden("skew-clock")
	return c
}

// RunAgent is `hlsbench agent`: it serves until ctx is cancelled.
func RunAgent(ctx context.Context, stdout, stderr io.Writer, o AgentOptions) error {
	if _, _, err := net.SplitHostPort(o.Listen); err != nil {
		return usagef("--listen %q: want host:port, e.g. 127.0.0.1:7070", o.Listen)
	}
	ln, err := net.Listen("tcp", o.Listen)
	if err != nil {
		return fmt.Errorf("agent: %w", err)
	}
	if !isLoopback(o.Listen) {
		fmt.Fprintf(stderr, "agent: warning: --listen %s is not a loopback address; anyone who reaches it can make this host send load\n", o.Listen)
	}
	s := agent.NewServer()
	s.Skew = o.Skew
	fmt.Fprintln(stdout, AgentReadyPrefix+ln.Addr().String())
	return s.Serve(ctx, ln)
}
