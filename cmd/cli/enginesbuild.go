package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/hlsbench/hlsbench/engines"
	"github.com/hlsbench/hlsbench/engines/images"
	"github.com/hlsbench/hlsbench/engines/srcbuild"
	"github.com/hlsbench/hlsbench/workloads"
)

// EnginesBuildOptions are the flags of `hlsbench engines build`.
type EnginesBuildOptions struct {
	Engine  string // varnish or vinyl
	Source  string
	VTest   string
	Runtime string // process, or docker: also an image
	Force   bool
	Jobs    int
	Verbose bool
}

func newEnginesBuildCmd(stdout, stderr io.Writer) *cobra.Command {
	o := EnginesBuildOptions{}
	c := &cobra.Command{
		Use:   "build varnish|vinyl --source TARBALL|DIR",
		Short: "Build Varnish or Vinyl Cache from source, for runs to select as NAME@VERSION",
		Long: `Build Varnish Cache or Vinyl Cache from a source tree with Debian's toolchain
(./autogen.sh, ./configure, make, make install), into
$XDG_CACHE_HOME/hlsbench/engines (else ~/.cache/hlsbench/engines), keyed by the
digest of the inputs: the same source again is found in seconds.

--source is a release tarball, a git archive snapshot (.tar.gz, .tgz or .tar)
or a directory holding the tree; its version comes from configure.ac, with
the commit added when that names no release (vinyl@trunk-27d2ce15b). A tree
from a git archive or a release tarball lacks the VTest2 submodule its
configure needs: --vtest gives VTest2's source.

--runtime docker also puts the build into an image, hlsbench/ENGINE:VERSION,
on hlsbench/base:bookworm (hlsbench images build makes it), at the same
path: runs with --runtime docker then find it.

Runs select a build as NAME@VERSION (--engine vinyl@trunk-27d2ce15b,
varnish@9.0.2); a bare name is the binary on PATH if there is one, else the
newest build. hlsbench engines lists the builds.

Exit codes: 0 built or up to date; 1 the build failed (the last lines of its
output say why; --verbose shows all) or a Debian package is missing (named,
with the apt-get command); 2 bad flags.`,
		Example: `  hlsbench engines build vinyl --source vinyl-cache-trunk-27d2ce15b.tar.gz --vtest vtest2-vtest-11ee910.tar.gz
  hlsbench engines build varnish --source varnish-9.0.2.tar.gz --vtest vtest2-varnish-64afc24.tar.gz --runtime docker
  hlsbench run --engine varnish@9.0.2,vinyl,nginx --workload ` + workloads.Names()[2],
		Args: func(c *cobra.Command, args []string) error {
			if len(args) != 1 || !slices.Contains(srcbuild.Engines, args[0]) {
				return usagef("%s takes one engine: %s", c.CommandPath(), strings.Join(srcbuild.Engines, " or "))
			}
			return nil
		},
		RunE: func(c *cobra.Command, args []string) error {
			o.Engine = args[0]
			return BuildEngine(c.Context(), stdout, stderr, o)
		},
	}
	f := c.Flags()
	f.StringVar(&o.Source, "source", "", "the engine's source: a .tar.gz, .tgz or .tar of its tree, or a directory (required)")
	f.StringVar(&o.VTest, "vtest", "", "VTest2's source (tarball or directory), when the tree lacks the submodule")
	f.StringVar(&o.Runtime, "runtime", engines.RuntimeProcess, "process, or docker to also build the image runs in containers use")
	f.BoolVar(&o.Force, "force", false, "build again even if the cache has this build")
	f.IntVar(&o.Jobs, "jobs", 0, "make -j (0: the number of CPUs)")
	f.BoolVar(&o.Verbose, "verbose", false, "show the build tools' output")
	return c
}

// buildError is how `hlsbench engines build` reports a build that failed:
// input srcbuild refused as a usage error naming the flag (or argument)
// that gave it, a failed step with where the rest of its output is.
func buildError(err error, verbose bool) error {
	var ie *srcbuild.InputError
	if errors.As(err, &ie) {
		flag, ok := map[string]string{"source": "--source", "vtest": "--vtest"}[ie.Field]
		if !ok {
			flag = ie.Field // the engine is an argument
		}
		return usagef("%s %v", flag, ie.Err)
	}
	var se *srcbuild.StepError
	if errors.As(err, &se) && !verbose {
		return fmt.Errorf("engines build: %w\n(the whole log: rerun with --verbose)", err)
	}
	return fmt.Errorf("engines build: %w", err)
}

// BuildEngine is `hlsbench engines build`: the build's line on stdout,
// progress with timings on stderr.
func BuildEngine(ctx context.Context, stdout, stderr io.Writer, o EnginesBuildOptions) error {
	switch {
	case o.Source == "":
		return usagef("--source is required: the engine's source tarball or directory")
	case o.Runtime != engines.RuntimeProcess && o.Runtime != engines.RuntimeDocker:
		return usagef("--runtime %q: want process or docker", o.Runtime)
	case o.Jobs < 0:
		return usagef("--jobs %d: want 0 (the number of CPUs) or more", o.Jobs)
	}
	missing, err := srcbuild.Missing(ctx, srcbuild.Packages(o.Engine))
	if err != nil {
		return fmt.Errorf("engines build: %w", err)
	}
	if len(missing) > 0 {
		return fmt.Errorf("engines build %s: %w", o.Engine, &srcbuild.MissingError{Packages: missing})
	}
	ctx, endRun, err := beginRun(ctx, stderr, "none") // a killed build's work directory and make are swept next time
	if err != nil {
		return err
	}
	defer endRun()
	so := srcbuild.Options{Engine: o.Engine, Source: o.Source, VTest: o.VTest, Force: o.Force, Jobs: o.Jobs, Progress: stderr}
	if o.Verbose {
		so.Log = stderr
	}
	b, err := srcbuild.Make(ctx, so)
	if err != nil {
		if ctx.Err() != nil {
			return errInterrupted
		}
		return buildError(err, o.Verbose)
	}
	state := fmt.Sprintf("built in %.0fs", b.Seconds)
	if b.UpToDate {
		state = "up to date"
	}
	fmt.Fprintf(stdout, "%s\t%s\t%s\t%s\n", b.Ref(), b.Daemon, b.DaemonVersion, state)
	if o.Runtime == engines.RuntimeDocker {
		cli, err := images.Connect(ctx)
		if err != nil {
			return fmt.Errorf("engines build --runtime docker: %w", err)
		}
		defer cli.Close()
		im, err := images.BuildFromSource(ctx, cli, b, o.Force, stderr)
		if err != nil {
			return fmt.Errorf("engines build --runtime docker: %w", err)
		}
		fmt.Fprintf(stdout, "%s\t%s\n", im.Ref, im.ID)
	}
	return nil
}
