package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hlsbench/hlsbench/engines"
	"github.com/hlsbench/hlsbench/engines/srcbuild"
)

func TestParseEngines(t *testing.T) {
	got, err := parseEngines("varnish@9.0.2, vinyl,varnish@7.1.1,nginx,builtin")
	if err != nil || strings.Join(got, " ") != "varnish@9.0.2 vinyl varnish@7.1.1 nginx builtin" {
		t.Errorf("%v, %v", got, err)
	}
	for in, want := range map[string]string{
		"squid":                       `"squid"`,
		"varnish@":                    "NAME@VERSION",
		"varnish@9@1":                 "NAME@VERSION",
		"builtin@1":                   "no builds",
		"varnish@9.0.2,varnish@9.0.2": "given twice",
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

func TestResolveBinaries(t *testing.T) {
	b := fakeCache(t, "vinyl", "trunk-27d2ce15b")
	ctx := context.Background()
	var out bytes.Buffer
	bins, srcs, err := resolveBinaries(ctx, &out, []string{"vinyl@trunk-27d2ce15b", "builtin"}, "")
	if err != nil || bins["vinyl@trunk-27d2ce15b"] != b.Daemon || srcs["vinyl@trunk-27d2ce15b"] != (engines.Source{Version: b.Version, Commit: b.Commit, SHA256: b.SourceHash}) {
		t.Errorf("NAME@VERSION: %v %v %v", bins, srcs, err)
	}
	if _, err := engines.FindBinary(engines.Vinyl{}, ""); err != nil {
		// No vinyld on PATH: a bare name takes the newest build, and says so.
		out.Reset()
		bins, _, err = resolveBinaries(ctx, &out, []string{"vinyl"}, "")
		if err != nil || bins["vinyl"] != b.Daemon || !strings.Contains(out.String(), "running the newest build, vinyl@trunk-27d2ce15b") {
			t.Errorf("bare vinyl: %v %v; output %q", bins, err, out.String())
		}
	}
	_, _, err = resolveBinaries(ctx, &out, []string{"vinyl@9.9.9"}, "")
	var ue usageError
	if err == nil || !errors.As(err, &ue) || !strings.Contains(err.Error(), "trunk-27d2ce15b built") || !strings.Contains(err.Error(), "hlsbench engines build vinyl") {
		t.Errorf("a version not here: %v; want a usage error listing what is here and how to build", err)
	}
	_, _, err = resolveBinaries(ctx, &out, []string{"vinyl@trunk-27d2ce15b", "nginx"}, "/bin/true")
	if err == nil || !strings.Contains(err.Error(), "--binary names one engine") {
		t.Errorf("--binary with two engines: %v", err)
	}
	bins, srcs, err = resolveBinaries(ctx, &out, []string{"vinyl@mine"}, b.Daemon)
	if err != nil || bins["vinyl@mine"] != b.Daemon || srcs["vinyl@mine"].Commit != b.Commit {
		t.Errorf("--binary of a build: %v %v %v; want its record's commit", bins, srcs, err)
	}
}
