// Package compose writes hlsbench's stack as a docker-compose project: the
// synthetic origin, every engine with the configuration hlsbench renders
// for a workload (the same files and command lines a run starts), hitch in
// front of Varnish speaking PROXY v2, a one-shot service that makes the
// test certificates and a one-shot generator. Every service uses the host's
// network and listens on loopback only: no bridge, and load traffic never
// leaves the machine.
//
// The repository's docker-compose.yml and compose/ directory are this
// package's output for the default workload (`make compose`); a test keeps
// them equal.
package compose

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/hlsbench/hlsbench/engines"
	"github.com/hlsbench/hlsbench/engines/certs"
	"github.com/hlsbench/hlsbench/workloads"
)

// The stack's addresses, all on loopback.
const (
	OriginListen  = "127.0.0.1:8081"
	OriginControl = "127.0.0.1:9091"
	VarnishListen = "127.0.0.1:6081"
	NGINXListen   = "127.0.0.1:6082"
	BuiltinListen = "127.0.0.1:6083"
	VinylListen   = "127.0.0.1:6084"
	// VarnishProxy is Varnish's PROXY v2 listener, hitch's backend.
	VarnishProxy = "127.0.0.1:6091"
	HitchListen  = "127.0.0.1:6443"
)

// File is the compose file's name in the output; the engines' files go
// under Dir.
const (
	File = "docker-compose.yml"
	Dir  = "compose"
)

// workDir is where, in each container, an engine's rendered files are
// mounted and its state lives: a tmpfs of its own (exec: Varnish loads
// the VCL it compiled from there), as a run's work directory is private.
const workDir = "/run/hlsbench"

// certDir is the certificates' volume, in the containers that use it.
const certDir = "/certs"

// Default image tags: what `hlsbench images build` tags from Debian
// bookworm's packages, and a source tree's own build of hlsbench. Each is
// overridden by its variable (HLSBENCH_TAG, VARNISH_TAG…) when the
// daemon's images have others (`hlsbench images list`).
var defaultTags = []struct{ repo, env, tag string }{
	{"hlsbench/hlsbench", "HLSBENCH_TAG", "dev"},
	{"hlsbench/varnish", "VARNISH_TAG", "7.1.1"},
	{"hlsbench/nginx", "NGINX_TAG", "1.22.1"},
	{"hlsbench/hitch", "HITCH_TAG", "1.7.2"},
	{"hlsbench/vinyl", "VINYL_TAG", "trunk"},
}

// Options say which workload's cache policy the engines are configured
// with.
type Options struct {
	Workload string // default hit-path
}

// Generate renders the stack: the compose file (File) and every file its
// services mount, by path relative to the compose file.
func Generate(o Options) (engines.Files, error) {
	if o.Workload == "" {
		o.Workload = "hit-path"
	}
	specs, err := workloads.Specs(o.Workload)
	if err != nil || len(specs) != 1 {
		return nil, fmt.Errorf("workload %q: want one of %s", o.Workload, strings.Join(workloads.Names(), ", "))
	}
	pol := specs[0].Policy
	if pol.Purge != "" {
		return nil, fmt.Errorf("workload %q invalidates objects (%s), which needs the engine's purge mode and a control path a compose stack does not have: want a workload without purges", o.Workload, pol.Purge)
	}
	g := &gen{files: engines.Files{}, workload: o.Workload}
	base := engines.Config{Policy: pol, Origin: OriginListen, WorkDir: workDir,
		CacheDir: path.Join(workDir, "cache"), CPUs: 1, Topology: engines.TopologyPlaintext}

	g.service("certs", service{
		comment: "Makes the test authority and the server certificate for 127.0.0.1 into the\ncerts volume (keeping a set still valid for a day), then exits.",
		image:   "hlsbench/hlsbench", command: []string{"certs", "--out", certDir, "--keep"}, volumes: []string{"certs:" + certDir},
	})
	g.service("origin", service{
		comment: "The synthetic HLS origin: data on " + OriginListen + ", its counters and failure\nmodes on " + OriginControl + " (GET /stats, POST /mode?set=5xx).",
		image:   "hlsbench/hlsbench",
		command: []string{"origin", "--listen", OriginListen, "--control", OriginControl},
	})

	varnish := base
	varnish.Listen, varnish.Topology, varnish.ProxyListen = VarnishListen, engines.TopologyProxyV2, VarnishProxy
	if err := g.engine(engines.Varnish{}, "hlsbench/varnish", varnish, nil,
		"Varnish on "+VarnishListen+", and on "+VarnishProxy+" with PROXY v2 for hitch."); err != nil {
		return nil, err
	}
	nginx := base
	nginx.Listen = NGINXListen
	if err := g.engine(engines.NGINX{}, "hlsbench/nginx", nginx, nil, "NGINX on "+NGINXListen+"."); err != nil {
		return nil, err
	}
	builtin := base
	builtin.Listen = BuiltinListen
	if err := g.engine(engines.Builtin{}, "hlsbench/hlsbench", builtin, nil, "hlsbench's built-in cache on "+BuiltinListen+"."); err != nil {
		return nil, err
	}
	vinyl := base
	vinyl.Listen = VinylListen
	if err := g.engine(engines.Vinyl{}, "hlsbench/vinyl", vinyl, []string{"vinyl"},
		"Vinyl Cache on "+VinylListen+": built from source (hlsbench engines build vinyl\n--runtime docker), so started only with --profile vinyl and VINYL_TAG set to\nits tag."); err != nil {
		return nil, err
	}
	if err := g.hitch(); err != nil {
		return nil, err
	}
	g.service("generator", service{
		comment: "One-shot: hlsbench load against TARGET (default: Varnish), at RATE for\nDURATION, trusting the stack's authority for https (TARGET=" + "https://" + HitchListen + "/…\nthrough hitch). Run it with: docker-compose run --rm generator",
		image:   "hlsbench/hlsbench", profiles: []string{"load"},
		depends: []dep{{"certs", "service_completed_successfully"}},
		volumes: []string{"certs:" + certDir + ":ro"},
		command: []string{"load", "${TARGET:-http://" + VarnishListen + "/stream/index.m3u8}", "--rate", "${RATE:-200}",
			"--duration", "${DURATION:-10s}", "--ca", path.Join(certDir, "ca.pem")},
	})
	g.files[File] = g.compose()
	return g.files, nil
}

// gen collects the services and the files they mount.
type gen struct {
	files    engines.Files
	workload string
	names    []string
	services map[string]service
}

type service struct {
	comment    string
	image      string // repository; the tag comes from its variable
	profiles   []string
	depends    []dep
	tmpfs      bool // workDir is a tmpfs
	volumes    []string
	entrypoint []string
	command    []string
	env        []string
	stopGrace  time.Duration
}

type dep struct{ name, condition string }

func (g *gen) service(name string, s service) {
	if g.services == nil {
		g.services = map[string]service{}
	}
	g.names = append(g.names, name)
	g.services[name] = s
}

// engine adds e's service: its rendered files mounted into its work
// directory and the command line a run starts it with.
func (g *gen) engine(e engines.Engine, image string, cfg engines.Config, profiles []string, comment string) error {
	files, err := e.Render(cfg)
	if err != nil {
		return fmt.Errorf("render %s: %w", e.Name(), err)
	}
	s := service{comment: comment, image: image, profiles: profiles, depends: []dep{{"origin", "service_started"}}, tmpfs: true}
	if err := g.mount(&s, e.Name(), files); err != nil {
		return err
	}
	ls := e.Launch(cfg, e.Binary())
	if _, vinyl := e.(engines.Vinyl); vinyl {
		// Built from source under root's build cache, which its jail's
		// users cannot enter (they would not find the VMODs): a run
		// starts such a build with -j none, as root throughout.
		ls.Args = append([]string{"-j", "none"}, ls.Args...)
	}
	if image == "hlsbench/hlsbench" {
		s.command = ls.Args // its entrypoint is hlsbench
	} else {
		s.entrypoint, s.command = []string{ls.Binary}, ls.Args
	}
	s.env, s.stopGrace = ls.Env, ls.StopTimeout
	g.service(e.Name(), s)
	return nil
}

// hitch adds the terminator: TLS on HitchListen, PROXY v2 to Varnish.
func (g *gen) hitch() error {
	t := engines.Hitch{}
	tc := engines.TermConfig{Listen: HitchListen, Backend: VarnishProxy, WorkDir: workDir, CPUs: 1,
		User: engines.HitchImageUser, Certs: certs.Files{CA: path.Join(certDir, "ca.pem"), Cert: path.Join(certDir, "cert.pem"),
			Key: path.Join(certDir, "key.pem"), Combined: path.Join(certDir, "combined.pem")}}
	files, err := t.Render(tc)
	if err != nil {
		return fmt.Errorf("render hitch: %w", err)
	}
	s := service{comment: "hitch on " + HitchListen + ": TLS with the stack's certificate, PROXY v2 to Varnish.",
		image: "hlsbench/hitch", tmpfs: true, volumes: []string{"certs:" + certDir + ":ro"},
		depends: []dep{{"certs", "service_completed_successfully"}, {"varnish", "service_started"}}}
	if err := g.mount(&s, t.Name(), files); err != nil {
		return err
	}
	ls := t.Launch(tc, t.Binary())
	s.entrypoint, s.command, s.stopGrace = []string{ls.Binary}, ls.Args, ls.StopTimeout
	g.service(t.Name(), s)
	return nil
}

// mount writes files under Dir/name and mounts each, read-only, where the
// command line expects it.
func (g *gen) mount(s *service, name string, files engines.Files) error {
	for _, f := range files.Names() {
		if strings.Contains(f, "..") || path.IsAbs(f) {
			return fmt.Errorf("%s: rendered file %q: want a relative name", name, f)
		}
		rel := path.Join(Dir, name, f)
		g.files[rel] = files[f]
		s.volumes = append(s.volumes, "./"+rel+":"+path.Join(workDir, f)+":ro")
	}
	return nil
}

// compose writes the compose file. Lists are written as JSON, which YAML
// reads as flow sequences; a $ that is not a variable is doubled.
func (g *gen) compose() []byte {
	var b strings.Builder
	b.WriteString(header(g.workload))
	b.WriteString(`x-host: &host
  network_mode: host
  restart: "no"
  labels:
    org.hlsbench.compose: "1"

services:
`)
	for _, name := range g.names {
		s := g.services[name]
		b.WriteString("\n")
		for _, l := range strings.Split(s.comment, "\n") {
			b.WriteString("  # " + l + "\n")
		}
		fmt.Fprintf(&b, "  %s:\n    <<: *host\n", name)
		fmt.Fprintf(&b, "    image: %s:%s\n", s.image, tagVar(s.image))
		if len(s.profiles) > 0 {
			fmt.Fprintf(&b, "    profiles: %s\n", list(s.profiles, false))
		}
		if len(s.depends) > 0 {
			b.WriteString("    depends_on:\n")
			for _, d := range s.depends {
				fmt.Fprintf(&b, "      %s:\n        condition: %s\n", d.name, d.condition)
			}
		}
		if s.tmpfs {
			fmt.Fprintf(&b, "    tmpfs: [%q]\n", workDir+":exec,mode=0755")
		}
		if len(s.volumes) > 0 {
			b.WriteString("    volumes:\n")
			for _, v := range s.volumes {
				fmt.Fprintf(&b, "      - %s\n", v)
			}
		}
		if len(s.env) > 0 {
			fmt.Fprintf(&b, "    environment: %s\n", list(s.env, true))
		}
		if len(s.entrypoint) > 0 {
			fmt.Fprintf(&b, "    entrypoint: %s\n", list(s.entrypoint, true))
		}
		fmt.Fprintf(&b, "    command: %s\n", list(s.command, name != "generator"))
		if s.stopGrace > 0 {
			fmt.Fprintf(&b, "    stop_grace_period: %s\n", s.stopGrace)
		}
	}
	b.WriteString("\nvolumes:\n  certs:\n")
	return []byte(b.String())
}

// tagVar is the image's tag: its variable, with its default.
func tagVar(repo string) string {
	for _, t := range defaultTags {
		if t.repo == repo {
			return "${" + t.env + ":-" + t.tag + "}"
		}
	}
	panic("compose: no tag for " + repo) // the services name only the images above
}

// list writes a flow sequence; literal doubles every $, so that compose
// does not read it as a variable.
func list(items []string, literal bool) string {
	out := make([]string, len(items))
	for i, s := range items {
		if literal {
			s = strings.ReplaceAll(s, "$", "$$")
		}
		b, _ := json.Marshal(s) // a string always marshals
		out[i] = string(b)
	}
	return "[" + strings.Join(out, ", ") + "]"
}

func header(workload string) string {
	return `# Generated by hlsbench (hlsbench engines compose --workload ` + workload + `): do not edit;
# regenerate with ` + "`make compose`" + `.
#
# The stack hlsbench runs, for running it by hand or beside your own tools:
# the synthetic HLS origin, every engine with the configuration hlsbench
# renders for the ` + workload + ` workload (the files under compose/, and the
# command lines a run starts), hitch in front of Varnish, and a one-shot
# generator. Every service uses the host's network and listens on loopback
# only (no bridge: load traffic never leaves the machine). The images are the
# ones ` + "`hlsbench images build --self`" + ` makes, offline; set HLSBENCH_TAG,
# VARNISH_TAG, NGINX_TAG, HITCH_TAG (and VINYL_TAG) to the tags
# ` + "`hlsbench images list`" + ` shows when they differ from the defaults.
#
#   docker-compose up -d origin varnish hitch
#   curl -si http://` + VarnishListen + `/stream/index.m3u8       # through Varnish
#   hlsbench load http://` + VarnishListen + `/stream/index.m3u8 --rate 200 --duration 10s
#   TARGET=https://` + HitchListen + `/stream/index.m3u8 docker-compose run --rm generator
#   curl -s http://` + OriginControl + `/stats                      # the origin's counters
#   docker-compose down -v
#
# Ports: origin ` + port(OriginListen) + ` (data) and ` + port(OriginControl) + ` (control), Varnish ` + port(VarnishListen) + ` (PROXY v2
# ` + port(VarnishProxy) + `), NGINX ` + port(NGINXListen) + `, the built-in cache ` + port(BuiltinListen) + `, Vinyl Cache ` + port(VinylListen) + `, hitch ` + port(HitchListen) + ` (TLS).
# Each engine caches for the workload's policy; an hlsbench run renders the
# same files for its own instances, on ports of their own.

`
}

func port(addr string) string {
	_, p, _ := strings.Cut(addr, ":")
	return p
}

// Write puts files under dir, each complete or not at all: written beside
// its name and renamed. It returns the paths written, in order.
func Write(dir string, files engines.Files) ([]string, error) {
	if dir == "" {
		return nil, errors.New("compose: no output directory")
	}
	var done []string
	for _, name := range files.Names() {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return done, err
		}
		f, err := os.CreateTemp(filepath.Dir(p), "."+filepath.Base(p)+".*")
		if err != nil {
			return done, err
		}
		_, err = f.Write(files[name])
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err == nil {
			err = os.Chmod(f.Name(), 0o644)
		}
		if err == nil {
			err = os.Rename(f.Name(), p)
		}
		if err != nil {
			os.Remove(f.Name())
			return done, err
		}
		done = append(done, p)
	}
	return done, nil
}
