package compose

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// The repository's docker-compose.yml and compose/ are Generate's output
// for the default workload, byte for byte, and nothing else is in compose/.
func TestRepositoryStackCurrent(t *testing.T) {
	files, err := Generate(Options{})
	if err != nil {
		t.Fatal(err)
	}
	root := filepath.Join("..", "..")
	for _, name := range files.Names() {
		got, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(name)))
		if err != nil || !bytes.Equal(got, files[name]) {
			t.Errorf("%s is not what hlsbench renders (%v): run `make compose` and commit the result", name, err)
		}
	}
	filepath.WalkDir(filepath.Join(root, Dir), func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if _, ok := files[filepath.ToSlash(rel)]; !ok {
			t.Errorf("%s is not rendered by hlsbench: remove it (make compose)", rel)
		}
		return nil
	})
}

type composeFile struct {
	Services map[string]struct {
		Image       string         `yaml:"image"`
		NetworkMode string         `yaml:"network_mode"`
		Networks    any            `yaml:"networks"`
		Ports       []any          `yaml:"ports"`
		Profiles    []string       `yaml:"profiles"`
		DependsOn   map[string]any `yaml:"depends_on"`
		Tmpfs       []string       `yaml:"tmpfs"`
		Volumes     []string       `yaml:"volumes"`
		Entrypoint  []string       `yaml:"entrypoint"`
		Command     []string       `yaml:"command"`
	} `yaml:"services"`
	Volumes map[string]any `yaml:"volumes"`
}

// The compose file is YAML compose reads: every service on the host's
// network, every mounted file rendered, each engine started as a run
// starts it and listening on loopback.
func TestGenerate(t *testing.T) {
	files, err := Generate(Options{Workload: "origin-flap"})
	if err != nil {
		t.Fatal(err)
	}
	var c composeFile
	if err := yaml.Unmarshal(files[File], &c); err != nil {
		t.Fatalf("%s: %v\n%s", File, err, files[File])
	}
	addr := regexp.MustCompile(`\b(\d{1,3}(?:\.\d{1,3}){3})(?::\d+)?`)
	want := []string{"builtin", "certs", "generator", "hitch", "nginx", "origin", "varnish", "vinyl"}
	var got []string
	for name, s := range c.Services {
		got = append(got, name)
		if s.NetworkMode != "host" || s.Networks != nil || len(s.Ports) > 0 {
			t.Errorf("%s: network_mode %q, networks %v, ports %v; want the host's network only", name, s.NetworkMode, s.Networks, s.Ports)
		}
		if !strings.HasPrefix(s.Image, "hlsbench/") || !strings.Contains(s.Image, ":${") {
			t.Errorf("%s: image %q, want hlsbench's with its tag's variable", name, s.Image)
		}
		for _, v := range s.Volumes {
			src, _, _ := strings.Cut(v, ":")
			if rel, ok := strings.CutPrefix(src, "./"); ok {
				if _, ok := files[rel]; !ok {
					t.Errorf("%s mounts %s, which is not rendered", name, src)
				}
			} else if src != "certs" {
				t.Errorf("%s mounts %q: want a rendered file or the certs volume", name, v)
			}
		}
		for _, m := range addr.FindAllStringSubmatch(strings.Join(s.Command, " "), -1) {
			if m[1] != "127.0.0.1" {
				t.Errorf("%s: address %s in its command, want 127.0.0.1 only", name, m[0])
			}
		}
	}
	// The engines listen and fetch where their files say: loopback only.
	for name, b := range files {
		for _, m := range addr.FindAllStringSubmatch(string(b), -1) {
			if m[1] != "127.0.0.1" {
				t.Errorf("%s: address %s, want 127.0.0.1 only", name, m[0])
			}
		}
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Fatalf("services %v, want %v", got, want)
	}
	v := c.Services["varnish"]
	if !slices.Equal(v.Entrypoint, []string{"varnishd"}) || !slices.Contains(v.Command, VarnishListen) ||
		!slices.Contains(v.Command, VarnishProxy+",PROXY") || !slices.Contains(v.Command, "/run/hlsbench/default.vcl") {
		t.Errorf("varnish: entrypoint %v command %v", v.Entrypoint, v.Command)
	}
	if len(v.Tmpfs) != 1 || !strings.Contains(v.Tmpfs[0], "exec") {
		t.Errorf("varnish: tmpfs %v: want its work directory executable (the compiled VCL is loaded from it)", v.Tmpfs)
	}
	vcl := string(files["compose/varnish/default.vcl"])
	if !strings.Contains(vcl, `.port = "8081"`) || !strings.Contains(vcl, "origin-flap") && !strings.Contains(vcl, "grace") {
		t.Errorf("the VCL does not fetch from the origin's port or has no grace:\n%s", vcl)
	}
	if conf := string(files["compose/nginx/nginx.conf"]); !strings.Contains(conf, "listen "+NGINXListen) || !strings.Contains(conf, "server "+OriginListen) {
		t.Errorf("nginx.conf does not listen on %s or fetch from %s", NGINXListen, OriginListen)
	}
	hitch := string(files["compose/hitch/hitch.conf"])
	for _, line := range []string{`user = "_hitch"`, `pem-file = "/certs/combined.pem"`, `backend = "[127.0.0.1]:6091"`, "write-proxy-v2 = on"} {
		if !strings.Contains(hitch, line) {
			t.Errorf("hitch.conf lacks %s, whoever generated it:\n%s", line, hitch)
		}
	}
	if g := c.Services["generator"]; !slices.Equal(g.Profiles, []string{"load"}) || g.Command[0] != "load" {
		t.Errorf("generator: profiles %v command %v", g.Profiles, g.Command)
	}
	if b := c.Services["builtin"]; b.Command[0] != "serve-cache" || !slices.Contains(b.Command, BuiltinListen) {
		t.Errorf("builtin: command %v", b.Command)
	}
	if _, ok := c.Volumes["certs"]; !ok {
		t.Error("no certs volume")
	}
}

// A workload that purges needs what a compose stack lacks: refused, naming
// the workload; an unknown one names those there are.
func TestGenerateRefuses(t *testing.T) {
	for _, c := range []struct{ workload, want string }{
		{"purge-stampede", "purge-stampede"},
		{"nope", "hit-path"},
	} {
		if _, err := Generate(Options{Workload: c.workload}); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error naming %s", c.workload, err, c.want)
		}
	}
}

// Write leaves each file complete and nothing beside it.
func TestWrite(t *testing.T) {
	dir := t.TempDir()
	files, err := Generate(Options{})
	if err != nil {
		t.Fatal(err)
	}
	written, err := Write(dir, files)
	if err != nil || len(written) != len(files) {
		t.Fatalf("%d written, %v", len(written), err)
	}
	var seen int
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			seen++
			if strings.HasPrefix(d.Name(), ".") {
				t.Errorf("left behind: %s", p)
			}
		}
		return err
	})
	if seen != len(files) {
		t.Errorf("%d files in the directory, want %d", seen, len(files))
	}
}
