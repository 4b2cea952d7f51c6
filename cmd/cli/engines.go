package cli

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/hlsbench/hlsbench/engines"
	"github.com/hlsbench/hlsbench/engines/images"
	"github.com/hlsbench/hlsbench/engines/launch"
	"github.com/hlsbench/hlsbench/engines/srcbuild"
)

func newEnginesCmd(stdout, stderr io.Writer) *cobra.Command {
	c := &cobra.Command{
		Use:   "engines",
		Short: "List the engines, the runtimes usable on this machine and the versions found",
		Args:  exactArgs(0, "no arguments"),
		RunE: func(c *cobra.Command, args []string) error {
			return ListEngines(c.Context(), stdout)
		},
	}
	c.AddCommand(newEnginesBuildCmd(stdout, stderr), newEnginesRenderCmd(stdout), newEnginesComposeCmd(stderr))
	return c
}

// ListEngines is `hlsbench engines`.
func ListEngines(ctx context.Context, w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "engine\truntimes here\tversion\tbinary / note")
	here, built := runtimesHere(ctx)
	all := runtimeList(here, nil)
	engineRuntimes := runtimeList(here, func(rt launch.Runtime) bool { return rt.Binaries != launch.InHlsbench })
	fmt.Fprintf(tw, "builtin\t%s\t%s\tpart of hlsbench\n", all, Version)
	fmt.Fprintf(tw, "null\t%s\t%s\tpart of hlsbench: the instrument's ceiling and floor, not an engine\n", all, Version)
	for _, name := range engines.ProcessEngines() {
		e, _ := engines.Lookup(name)
		bin, err := engines.FindBinary(e, "")
		if err != nil {
			fmt.Fprintf(tw, "%s\t-\t-\t%s\n", name, strings.ReplaceAll(err.Error(), "\n", " "))
			continue
		}
		version := "unknown"
		if v, ok := e.(engines.Versioner); ok {
			vctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			if s, err := v.Version(vctx, engines.LocalExec(""), bin); err == nil {
				version = s
			} else {
				version = "error: " + err.Error()
			}
			cancel()
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", name, engineRuntimes, version, bin)
	}
	// Builds from source, selected as NAME@VERSION.
	builds, _ := srcbuild.List("")
	seen := map[string]bool{}
	for _, b := range builds {
		if seen[b.Ref()] {
			continue
		}
		seen[b.Ref()] = true
		_, ref := imageFor(built, b.Ref(), "")
		rts := runtimeList(here, func(rt launch.Runtime) bool {
			return rt.Binaries == launch.OnHost || rt.Binaries == launch.InImage && ref != ""
		})
		from := "built from source " + b.SourceHash[:min(12, len(b.SourceHash))]
		if b.Commit != "" {
			from = "built from commit " + b.Commit[:min(9, len(b.Commit))]
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s (%s)\n", b.Ref(), rts, b.Version, b.Daemon, from)
	}
	fmt.Fprintln(tw, "external\texternal\t-\tany proxy already running: --engine external --url URL --origin-listen ADDR")
	return tw.Flush()
}

// runtimesHere are the runtimes that answer here (a daemon at once or not
// at all), and the images of ours those of images hold.
func runtimesHere(ctx context.Context) (here []launch.Runtime, built []images.Image) {
	for _, rt := range launch.Runtimes {
		lch, err := rt.Open(ctx, launch.Session{Limit: time.Second})
		if err != nil {
			continue
		}
		here = append(here, rt)
		if st, ok := lch.(launch.ImageStore); ok {
			if list, err := images.List(ctx, st); err == nil {
				built = append(built, list...)
			}
		}
		launch.Close(lch)
	}
	return here, built
}

// runtimeList names the runtimes of here that keep accepts, "-" for none.
func runtimeList(here []launch.Runtime, keep func(launch.Runtime) bool) string {
	var names []string
	for _, rt := range here {
		if keep == nil || keep(rt) {
			names = append(names, rt.Name)
		}
	}
	if len(names) == 0 {
		return "-"
	}
	return strings.Join(names, ", ")
}
