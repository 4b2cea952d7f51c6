package cli

import (
	"context"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/hlsbench/hlsbench/engines"
	"github.com/hlsbench/hlsbench/workloads"
)

// RenderOptions are the flags of `hlsbench engines render`.
type RenderOptions struct {
	Workload  string
	Origin    string
	Listen    string
	Dir       string
	PurgeMode string
	Binary    string
}

func newEnginesRenderCmd(stdout io.Writer) *cobra.Command {
	o := RenderOptions{}
	c := &cobra.Command{
		Use:   "render ENGINE",
		Short: "Print the configuration hlsbench renders for an engine: a start for one of your own (--config)",
		Long: `Print the configuration hlsbench renders for an engine (varnish, vinyl: default.vcl;
nginx: nginx.conf) from a workload's cache policy, as a run would: the start for a
configuration of your own, which hlsbench run --config ENGINE=FILE runs as given.

--origin is where it fetches from (a run's origin listens where your file says),
--listen where NGINX listens (Varnish takes its listener on the command line), and
--dir the work directory its paths name (NGINX's logs, pid file and cache).`,
		Example: `  hlsbench engines render varnish > my.vcl
  hlsbench engines render nginx --workload ` + workloads.Names()[3] + ` --origin 127.0.0.1:8081 > my.conf
  hlsbench run --engine varnish --config varnish=my.vcl --workload ` + workloads.Names()[0] + ` --quick`,
		Args: exactArgs(1, "one engine: "+strings.Join(engines.ProcessEngines(), ", ")),
		RunE: func(c *cobra.Command, args []string) error {
			return RenderEngine(c.Context(), stdout, args[0], o)
		},
	}
	f := c.Flags()
	f.StringVar(&o.Workload, "workload", workloads.Names()[0], "whose cache policy: "+strings.Join(workloads.Names(), ", "))
	f.StringVar(&o.Origin, "origin", "127.0.0.1:8081", "the origin's address, where the configuration fetches from (loopback)")
	f.StringVar(&o.Listen, "listen", "127.0.0.1:8080", "NGINX: the address it listens on")
	f.StringVar(&o.Dir, "dir", "", "the work directory the configuration's paths name (default /tmp/hlsbench-ENGINE)")
	f.StringVar(&o.PurgeMode, "purge-mode", engines.PurgeAuto, "the workloads that purge: ban or purge (auto: the engine's own, as a run picks it, which needs its binary)")
	f.StringVar(&o.Binary, "binary", "", "the engine's binary, for --purge-mode auto, when it is not on PATH")
	return c
}

// RenderEngine is `hlsbench engines render`.
func RenderEngine(ctx context.Context, w io.Writer, name string, o RenderOptions) error {
	e, ok := engines.Lookup(name)
	if !ok {
		return usagef("engine %q: want one of %s (builtin takes no configuration file)", name, strings.Join(engines.ProcessEngines(), ", "))
	}
	specs, err := workloads.Specs(o.Workload)
	if err != nil || len(specs) != 1 {
		return usagef("--workload %q: want one of %s", o.Workload, strings.Join(workloads.Names(), ", "))
	}
	for _, a := range []struct{ flag, v string }{{"origin", o.Origin}, {"listen", o.Listen}} {
		if _, _, err := net.SplitHostPort(a.v); err != nil {
			return usagef("--%s %q: want host:port, e.g. 127.0.0.1:8081", a.flag, a.v)
		}
	}
	dir := o.Dir
	if dir == "" {
		dir = filepath.Join("/tmp", "hlsbench-"+name)
	}
	if !filepath.IsAbs(dir) {
		return usagef("--dir %q: want an absolute path", dir)
	}
	pol := specs[0].Policy
	switch {
	case pol.Purge == "":
	case o.PurgeMode == engines.PurgeBan || o.PurgeMode == engines.PurgeObject:
		pol.Purge = o.PurgeMode
	case o.PurgeMode == engines.PurgeAuto:
		bin, err := engines.FindBinary(e, o.Binary)
		if err != nil {
			return usagef("--purge-mode auto asks the engine's binary which purge it has: %v; or give --purge-mode ban or purge", err)
		}
		if pol.Purge, err = engines.ResolvePurge(ctx, e, bin, engines.PurgeAuto); err != nil {
			return fmt.Errorf("%s: %w", o.Workload, err)
		}
	default:
		return usagef("--purge-mode %q: want auto, ban or purge", o.PurgeMode)
	}
	cfg := engines.Config{Policy: pol, Listen: o.Listen, Origin: o.Origin, WorkDir: dir, CacheDir: filepath.Join(dir, "cache"),
		CPUs: 1, Topology: engines.TopologyPlaintext}
	files, err := e.Render(cfg)
	if err != nil {
		return usagef("%v", err)
	}
	for _, n := range files.Names() {
		if len(files) > 1 {
			fmt.Fprintf(w, "# ---- %s\n", n)
		}
		if _, err := w.Write(files[n]); err != nil {
			return err
		}
	}
	return nil
}
