package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/hlsbench/hlsbench/engines/images"
	"github.com/hlsbench/hlsbench/engines/launch"
)

// ImagesBuildOptions are the flags of `hlsbench images build`.
type ImagesBuildOptions struct {
	Engines []string // engine names, "all" or "none"
	Self    bool
	Binary  string // a static hlsbench for --self; "" this one, or go build
	Force   bool
	Update  bool // rebuild with the mirror's current package versions
	Verbose bool // debootstrap's and apt-get's output to stderr
	// Mirror and SecurityMirror: the Debian mirrors to build from; ""
	// takes them from this host's apt sources.
	Mirror, SecurityMirror string
}

func newImagesCmd(stdout, stderr io.Writer) *cobra.Command {
	c := &cobra.Command{
		Use:   "images",
		Short: "Build and list the Docker images hlsbench runs engines in",
		Long: `Build and list the Docker images hlsbench runs engines in, through the Docker
Engine API (DOCKER_HOST, else the local socket; bookworm's docker.io works).`,
	}
	c.AddCommand(newImagesBuildCmd(stdout, stderr), newImagesListCmd(stdout, stderr))
	return c
}

func newImagesBuildCmd(stdout, stderr io.Writer) *cobra.Command {
	o := ImagesBuildOptions{}
	c := &cobra.Command{
		Use:   "build",
		Short: "Build the engines' images (and hlsbench's) with no registry",
		Long: `Build the engines' images with no registry at all: debootstrap writes a
Debian bookworm root filesystem (minbase; bookworm, bookworm-updates and
bookworm-security from the mirrors this host's own apt sources name, so the
packages are the host's, or from --mirror and --security-mirror) with
varnish, nginx-light, hitch, haproxy and ca-certificates, and the daemon
imports it as hlsbench/base:bookworm, tagged per engine with the package's
upstream version: hlsbench/varnish:7.1.1, hlsbench/nginx:1.22.1, … (the full
Debian version is the label org.hlsbench.package-version). About a minute;
needs root and debootstrap (apt-get install debootstrap).

--self also builds hlsbench/hlsbench:VERSION: a static hlsbench (--binary,
else this binary if it is static, else go build with CGO_ENABLED=0 in the
source tree) FROM scratch, its entrypoint.

An image whose inputs (suite, mirrors, packages, the build's own version;
for --self the binary's sha256) have not changed is kept ("up to date").
Every image is stamped with a fixed time, and so is every file in it, and
records every package's version (label org.hlsbench.packages): --force
rebuilds with the versions the image recorded and gives the same image IDs,
or fails naming the packages the mirror no longer has; --update rebuilds with
the mirror's current versions (a Debian security update).

Exit codes: 0 built or up to date; 1 failure (no daemon, no debootstrap, a
mirror unreachable); 2 bad flags.`,
		Example: `  hlsbench images build
  hlsbench images build --engine varnish,nginx --self
  hlsbench images build --engine none --self --binary bin/hlsbench`,
		Args: exactArgs(0, "no arguments"),
		RunE: func(c *cobra.Command, args []string) error {
			return BuildImages(c.Context(), stdout, stderr, o)
		},
	}
	f := c.Flags()
	f.StringSliceVar(&o.Engines, "engine", []string{"all"}, "engines to build images for: all, none, or some of "+strings.Join(images.EngineNames(), ","))
	f.BoolVar(&o.Self, "self", false, "also build hlsbench's own image")
	f.StringVar(&o.Binary, "binary", "", "with --self: a static hlsbench binary (CGO_ENABLED=0) to put in the image")
	f.BoolVar(&o.Force, "force", false, "rebuild images that are up to date, with the package versions they recorded (the same image IDs)")
	f.BoolVar(&o.Update, "update", false, "rebuild with the mirror's current package versions (a security update): the image records the new ones")
	f.BoolVar(&o.Verbose, "verbose", false, "show debootstrap's and apt-get's output")
	f.StringVar(&o.Mirror, "mirror", "", "the Debian mirror to debootstrap from, `URL` (default: the one this host's apt sources name for bookworm)")
	f.StringVar(&o.SecurityMirror, "security-mirror", "", "with --mirror: the mirror of bookworm-security, `URL` (none: no security updates); without --mirror both are this host's")
	return c
}

// imageEngines expands --engine.
func imageEngines(names []string) ([]string, error) {
	var out []string
	for _, n := range names {
		switch n = strings.TrimSpace(n); n {
		case "all":
			out = append(out, images.EngineNames()...)
		case "none", "":
		default:
			if _, ok := images.LookupEngine(n); !ok {
				return nil, usagef("--engine: no image for %q (want all, none, or some of %s)", n, strings.Join(images.EngineNames(), ", "))
			}
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// BuildImages is `hlsbench images build`: a line per image on stdout,
// progress with timings on stderr.
func BuildImages(ctx context.Context, stdout, stderr io.Writer, o ImagesBuildOptions) error {
	names, err := imageEngines(o.Engines)
	if err != nil {
		return err
	}
	if len(names) == 0 && !o.Self {
		return usagef("images build: nothing to build (--engine none without --self)")
	}
	if o.Binary != "" && !o.Self {
		return usagef("--binary is for --self")
	}
	for _, m := range []struct{ flag, url string }{{"--mirror", o.Mirror}, {"--security-mirror", o.SecurityMirror}} {
		if m.url == "" {
			continue
		}
		if u, err := url.Parse(m.url); err != nil || (u.Scheme != "http" && u.Scheme != "https" && u.Scheme != "file") || (u.Scheme != "file" && u.Host == "") {
			return usagef("%s %q: want a mirror's URL, http://HOST/debian (or https://, file:///PATH)", m.flag, m.url)
		}
	}
	if o.SecurityMirror != "" && o.Mirror == "" {
		return usagef("--security-mirror goes with --mirror (without --mirror both come from this host's apt sources)")
	}
	start := time.Now()
	cli, err := images.Connect(ctx)
	if err != nil {
		return fmt.Errorf("images build: %w", err)
	}
	defer cli.Close()
	var built []images.Built
	if len(names) > 0 {
		bo := images.BaseOptions{Engines: names, Force: o.Force, Update: o.Update, Progress: stderr, Mirror: o.Mirror, SecurityMirror: o.SecurityMirror}
		if o.Verbose {
			bo.Log = stderr
		}
		b, err := images.BuildBase(ctx, cli, bo)
		built = append(built, b...)
		if err != nil {
			printBuilt(stdout, built)
			return fmt.Errorf("images build: %w", optionError(err))
		}
	}
	if o.Self {
		so := images.SelfOptions{Binary: o.Binary, Force: o.Force, Progress: stderr}
		if so.Binary == "" {
			// This binary, if it would run FROM scratch; else a build.
			if exe, err := os.Executable(); err == nil && images.IsStatic(exe) {
				so.Binary = exe
			} else if _, err := images.ModuleRoot(); err != nil {
				return fmt.Errorf("images build --self: this hlsbench links glibc (cannot run FROM scratch) and the working directory is not hlsbench's source tree to build a static one: pass --binary PATH, built with CGO_ENABLED=0 go build -o PATH ./cmd/hlsbench")
			}
			so.Version = Version
		}
		b, err := images.BuildSelf(ctx, cli, so)
		if err != nil {
			printBuilt(stdout, built)
			return fmt.Errorf("images build --self: %w", err)
		}
		built = append(built, b)
	}
	printBuilt(stdout, built)
	fmt.Fprintf(stderr, "images: done in %.1fs\n", time.Since(start).Seconds())
	return nil
}

func printBuilt(w io.Writer, built []images.Built) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, b := range built {
		state := "built"
		if b.UpToDate {
			state = "up to date"
		}
		fmt.Fprintf(tw, "%s\t%.19s\t%s\n", b.Ref, b.ID, state)
	}
	tw.Flush()
}

func newImagesListCmd(stdout, stderr io.Writer) *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List the images hlsbench built (label org.hlsbench=1)",
		Args:  exactArgs(0, "no arguments"),
		RunE: func(c *cobra.Command, args []string) error {
			return ListImages(c.Context(), stdout)
		},
	}
}

// ListImages is `hlsbench images list`.
func ListImages(ctx context.Context, w io.Writer) error {
	cli, err := images.Connect(ctx)
	if err != nil {
		return fmt.Errorf("images list: %w", err)
	}
	defer cli.Close()
	list, err := images.List(ctx, launch.Docker{Client: cli})
	if err != nil {
		return fmt.Errorf("images list: %w", err)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "image\tid\tsize\tcreated\tversion\tsource\tinputs")
	for _, im := range list {
		name := strings.Join(im.Tags, ",")
		if name == "" {
			name = "<untagged>"
		}
		version := im.PackageVersion
		if version == "" {
			version = im.Version
		}
		fmt.Fprintf(tw, "%s\t%.19s\t%.0f MB\t%s\t%s\t%s\t%.12s\n", name, im.ID, float64(im.Size)/1e6,
			im.Created.Format(time.RFC3339), dash(version), dash(im.Source), dash(im.Inputs))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(list) == 0 {
		fmt.Fprintln(w, "no hlsbench images: build them with hlsbench images build")
	}
	return nil
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// optionFlags are the flags of images build that set images.BaseOptions'
// fields, with what each takes.
var optionFlags = map[string]string{"Force": "--force", "Update": "--update", "Mirror": "--mirror URL"}

// optionError says an images.OptionError as the flag that sets its option.
func optionError(err error) error {
	var oe *images.OptionError
	if !errors.As(err, &oe) {
		return err
	}
	flag, ok := optionFlags[oe.Option]
	if !ok {
		return err
	}
	return restate(err, oe, fmt.Sprintf("%v (%s: give %s)", oe.Err, oe.Do, flag))
}
