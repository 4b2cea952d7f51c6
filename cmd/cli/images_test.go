package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hlsbench/hlsbench/engines/images"
)

func TestImagesUsage(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"images", "build", "--engine", "squid"}, `--engine: no image for "squid" (want all, none, or some of haproxy, hitch, nginx, varnish)`},
		{[]string{"images", "build", "--engine", "none"}, "nothing to build"},
		{[]string{"images", "build", "--binary", "/bin/true"}, "--binary is for --self"},
		{[]string{"images", "build", "--nope"}, "unknown flag: --nope"},
		{[]string{"images", "list", "extra"}, "takes no arguments"},
	} {
		var stderr bytes.Buffer
		if code := Run(context.Background(), c.args, &bytes.Buffer{}, &stderr); code != ExitUsage || !strings.Contains(stderr.String(), c.want) {
			t.Errorf("%v: exit %d, %q; want %d and %q", c.args, code, stderr.String(), ExitUsage, c.want)
		}
	}
}

// Without a daemon both commands fail at once and say how to start one.
func TestImagesNoDaemon(t *testing.T) {
	t.Setenv("DOCKER_HOST", "unix://"+filepath.Join(t.TempDir(), "docker.sock"))
	for _, args := range [][]string{{"images", "list"}, {"images", "build", "--engine", "varnish"}} {
		var stderr bytes.Buffer
		code := Run(context.Background(), args, &bytes.Buffer{}, &stderr)
		if code != ExitFailure || !strings.Contains(stderr.String(), "no Docker daemon at unix://") || !strings.Contains(stderr.String(), "start dockerd") {
			t.Errorf("%v: exit %d, %q", args, code, stderr.String())
		}
	}
}

func TestImagesList(t *testing.T) {
	cli, err := images.Connect(context.Background())
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true: %v", err)
		}
		t.Skip(err)
	}
	cli.Close()
	var stdout, stderr bytes.Buffer
	if code := Run(context.Background(), []string{"images", "list"}, &stdout, &stderr); code != ExitOK {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	if !strings.HasPrefix(stdout.String(), "image ") {
		t.Errorf("stdout:\n%s", stdout.String())
	}
}
