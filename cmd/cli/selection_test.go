package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hlsbench/hlsbench/engines"
	"github.com/hlsbench/hlsbench/engines/freeport"
	"github.com/hlsbench/hlsbench/engines/srcbuild"
)

func TestParseEngines(t *testing.T) {
	got, err := parseEngines("varnish@9.0.2, vinyl,varnish@7.1.1,nginx,builtin,prod=varnish")
	if err != nil || strings.Join(rows(got), " ") != "varnish@9.0.2 vinyl varnish@7.1.1 nginx builtin prod" || got[5].Name != "varnish" {
		t.Errorf("%v, %v", got, err)
	}
	for in, want := range map[string]string{
		"squid":                       `"squid"`,
		"varnish@":                    "NAME@VERSION",
		"varnish@9@1":                 "NAME@VERSION",
		"builtin@1":                   "no builds",
		"varnish@9.0.2,varnish@9.0.2": "given twice",
		"a=varnish,a=nginx":           "a given twice",
		"nginx=varnish":               "an engine's name",
	} {
		_, err := parseEngines(in)
		var ue usageError
		if err == nil || !errors.As(err, &ue) || !strings.Contains(err.Error(), want) {
			t.Errorf("parseEngines(%q): %v, want a usage error with %q", in, err, want)
		}
	}
}

// fakeCache makes XDG_CACHE_HOME a cache holding one build record of
// engine@version whose daemon is an existing file: how selection finds a
// build, without building one.
func fakeCache(t *testing.T, engine, version string) srcbuild.Build {
	t.Helper()
	home := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", home)
	dir := filepath.Join(srcbuild.Dir(), engine+"-"+version+"-0123456789ab")
	daemon := filepath.Join(dir, "prefix", "sbin", "varnishd")
	if err := os.MkdirAll(filepath.Dir(daemon), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(daemon, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	b := srcbuild.Build{Engine: engine, Version: version, Commit: strings.Repeat("a", 40), SourceHash: strings.Repeat("b", 64),
		Daemon: daemon, Prefix: filepath.Join(dir, "prefix")}
	data, _ := json.Marshal(b)
	if err := os.WriteFile(filepath.Join(dir, "build.json"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	return b
}

// sels parses selections for a test.
func sels(t *testing.T, list ...string) []engines.Selection {
	t.Helper()
	out, err := engines.ParseSelections(strings.Join(list, ","))
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestResolveBinaries(t *testing.T) {
	b := fakeCache(t, "vinyl", "trunk-27d2ce15b")
	ctx := context.Background()
	var out bytes.Buffer
	bins, srcs, err := resolveBinaries(ctx, &out, sels(t, "vinyl@trunk-27d2ce15b", "builtin"), "")
	if err != nil || bins["vinyl@trunk-27d2ce15b"] != b.Daemon || srcs["vinyl@trunk-27d2ce15b"] != (engines.Source{Version: b.Version, Commit: b.Commit, SHA256: b.SourceHash}) {
		t.Errorf("NAME@VERSION: %v %v %v", bins, srcs, err)
	}
	if _, err := engines.FindBinary(engines.Vinyl{}, ""); err != nil {
		// No vinyld on PATH: a bare name takes the newest build, and says so.
		out.Reset()
		bins, _, err = resolveBinaries(ctx, &out, sels(t, "vinyl"), "")
		if err != nil || bins["vinyl"] != b.Daemon || !strings.Contains(out.String(), "running the newest build, vinyl@trunk-27d2ce15b") {
			t.Errorf("bare vinyl: %v %v; output %q", bins, err, out.String())
		}
	}
	_, _, err = resolveBinaries(ctx, &out, sels(t, "vinyl@9.9.9"), "")
	var ue usageError
	if err == nil || !errors.As(err, &ue) || !strings.Contains(err.Error(), "trunk-27d2ce15b built") || !strings.Contains(err.Error(), "hlsbench engines build vinyl") {
		t.Errorf("a version not here: %v; want a usage error listing what is here and how to build", err)
	}
	_, _, err = resolveBinaries(ctx, &out, sels(t, "vinyl@trunk-27d2ce15b", "nginx"), "/bin/true")
	if err == nil || !strings.Contains(err.Error(), "a bare path is the one process engine's binary") {
		t.Errorf("--binary with two engines: %v", err)
	}
	bins, srcs, err = resolveBinaries(ctx, &out, sels(t, "vinyl@mine"), b.Daemon)
	if err != nil || bins["vinyl@mine"] != b.Daemon || srcs["vinyl@mine"].Commit != b.Commit {
		t.Errorf("--binary of a build: %v %v %v; want its record's commit", bins, srcs, err)
	}
}

// --binary ROW=PATH: another hlsbench for a builtin variant (its version
// asked), a build for a process engine's row; what is not an hlsbench, a
// row not in --engine or an external proxy is refused, naming what it was.
func TestResolveBinariesVariants(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// The test binary is no hlsbench: a script that says it is one stands
	// in for another build.
	other := filepath.Join(t.TempDir(), "hlsbench-base")
	os.WriteFile(other, []byte("#!/bin/sh\necho hlsbench version base-1234567\n"), 0o755)
	ctx := context.Background()
	var out bytes.Buffer
	bins, srcs, err := resolveBinaries(ctx, &out, sels(t, "base=builtin", "head=builtin"), "base="+other)
	if err != nil || bins["base"] != other || srcs["base"].Version != "base-1234567" || bins["head"] != "" {
		t.Errorf("base=builtin with another hlsbench: %v %v %v", bins, srcs, err)
	}
	for _, tc := range []struct {
		sels []string
		flag string
		want string
	}{
		{[]string{"base=builtin"}, "base=" + self, "did not say \"hlsbench version"},
		{[]string{"base=builtin"}, "base=/nonexistent/hlsbench", "--binary base=/nonexistent/hlsbench"},
		{[]string{"base=builtin"}, "head=" + other, "head is not in --engine (base)"},
		{[]string{"base=builtin"}, "base", "a bare path is the one process engine's binary"},
		{[]string{"external@a"}, "external@a=/bin/true", "not hlsbench's to start"},
		{[]string{"a=builtin", "b=builtin"}, "a=" + other + ",a=" + other, "a given twice"},
		{[]string{"a=builtin"}, "a=", "want ROW=PATH"},
	} {
		_, _, err := resolveBinaries(ctx, &out, sels(t, tc.sels...), tc.flag)
		var ue usageError
		if err == nil || !errors.As(err, &ue) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("--engine %v --binary %s: %v, want a usage error with %q", tc.sels, tc.flag, err, tc.want)
		}
	}
}

func TestParseExternals(t *testing.T) {
	urls, listens, err := parseExternals(sels(t, "external@a", "external@b", "builtin"),
		"a=http://127.0.0.1:8001,b=http://127.0.0.1:8002", "a=127.0.0.1:9001,b=127.0.0.1:9002")
	if err != nil || urls["external@a"] != "http://127.0.0.1:8001" || listens["external@b"] != "127.0.0.1:9002" || len(urls) != 2 {
		t.Errorf("two externals: %v %v %v", urls, listens, err)
	}
	urls, listens, err = parseExternals(sels(t, "external"), "http://127.0.0.1:8001", "127.0.0.1:9001")
	if err != nil || urls["external"] != "http://127.0.0.1:8001" || listens["external"] != "127.0.0.1:9001" {
		t.Errorf("one external: %v %v %v", urls, listens, err)
	}
	for _, tc := range []struct {
		sels        []string
		url, listen string
		want        string
	}{
		{[]string{"external@a", "external@b"}, "http://127.0.0.1:1", "a=127.0.0.1:2,b=127.0.0.1:3", "want TAG=VALUE for each"},
		{[]string{"external@a", "external@b"}, "a=http://127.0.0.1:1", "a=127.0.0.1:2,b=127.0.0.1:3", "--url: none given for external@b"},
		{[]string{"external@a", "external@b"}, "a=http://127.0.0.1:1,c=http://127.0.0.1:1", "a=127.0.0.1:2,b=127.0.0.1:3", "no external@c"},
		{[]string{"external@a", "external@b"}, "a=http://127.0.0.1:1,b=http://127.0.0.1:4", "a=127.0.0.1:2,b=127.0.0.1:2", "each external proxy fetches from an origin of its own"},
		{[]string{"external"}, "ftp://x", "127.0.0.1:2", "want http://host:port"},
		{[]string{"builtin"}, "http://127.0.0.1:1", "", "go with --engine external"},
	} {
		_, _, err := parseExternals(sels(t, tc.sels...), tc.url, tc.listen)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v --url %s --origin-listen %s: %v, want %q", tc.sels, tc.url, tc.listen, err, tc.want)
		}
	}
}

func TestParseConfigFlag(t *testing.T) {
	sels, err := parseEngines("prod=varnish,canary=varnish,varnish@9.0.2,nginx,builtin")
	if err != nil {
		t.Fatal(err)
	}
	got, err := parseConfigFlag("varnish=all.vcl,canary=new.vcl,nginx=n.conf", sels)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"prod": "all.vcl", "canary": "new.vcl", "varnish@9.0.2": "all.vcl", "nginx": "n.conf"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("got %v, want %v", got, want)
	}
	for flag, msg := range map[string]string{
		"builtin=x":             "takes no configuration file",
		"vinyl=x.vcl":           "no vinyl in --engine",
		"prod":                  "want ENGINE=FILE",
		"prod=a.vcl,prod=b.vcl": "prod given twice",
		"squid=x":               "takes no configuration file",
	} {
		if _, err := parseConfigFlag(flag, sels); err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("--config %s: %v, want %q", flag, err, msg)
		}
	}
}

// A VCL varnishd rejects is bad input (exit 2) before anything starts, with
// the compiler's message.
func TestRunConfigRejected(t *testing.T) {
	needEngine(t, "varnish")
	port, err := freeport.Addr()
	if err != nil {
		t.Fatal(err)
	}
	host, p, _ := net.SplitHostPort(port)
	file := filepath.Join(t.TempDir(), "bad.vcl")
	os.WriteFile(file, []byte("vcl 4.1;\nbackend default { .host = \""+host+"\"; .port = \""+p+"\"; }\nsub vcl_recv { set req.nonsense = 1; }\n"), 0o644)
	code, _, errs := runCLI(t, context.Background(), "run", "--engine", "varnish", "--config", "varnish="+file, "--workload", "hit-path", "--quick", "--no-save", "--lock", "none")
	if code != ExitUsage || !strings.Contains(errs, "rejected it") || !strings.Contains(errs, "nonsense") {
		t.Errorf("exit %d, stderr %s", code, errs)
	}
}

// What engines render prints is a start for --config: read back as a file
// of one's own, it fetches from --origin and (NGINX) listens on --listen.
func TestEnginesRenderReadsBack(t *testing.T) {
	for _, name := range []string{"varnish", "vinyl", "nginx"} {
		code, out, errs := runCLI(t, context.Background(), "engines", "render", name, "--workload", "origin-flap",
			"--origin", "127.0.0.1:18081", "--listen", "127.0.0.1:18080", "--dir", "/tmp/hlsbench-render-test")
		if code != ExitOK {
			t.Fatalf("%s: exit %d: %s", name, code, errs)
		}
		e, _ := engines.Lookup(name)
		uc, err := e.(engines.OwnConfigurable).ReadOwnConfig([]byte(out))
		if err != nil {
			t.Fatalf("%s: read back: %v\n%s", name, err, out)
		}
		listen := "127.0.0.1:18080"
		if name != "nginx" {
			listen = "" // varnishd's -a
		}
		if uc.Origin != "127.0.0.1:18081" || uc.Listen != listen {
			t.Errorf("%s: origin %s listen %q", name, uc.Origin, uc.Listen)
		}
	}
}
