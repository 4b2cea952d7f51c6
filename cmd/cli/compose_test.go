package cli

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/volume"

	"github.com/hlsbench/hlsbench/engines"
	"github.com/hlsbench/hlsbench/engines/compose"
	"github.com/hlsbench/hlsbench/engines/images"
	"github.com/hlsbench/hlsbench/engines/launch"
	"github.com/hlsbench/hlsbench/origin"
)

// The repository's docker-compose.yml, as a user runs it: the origin,
// Varnish and hitch come up, hlsbench load measures Varnish and finds the
// origin's evidence headers on its answers, the stack's own generator
// service measures it through hitch (TLS, PROXY v2), and down leaves no
// container and no volume.
func TestComposeStack(t *testing.T) {
	if testing.Short() {
		t.Skip("starts containers")
	}
	if raceEnabled {
		t.Skip("end to end: runs once, in the run without the race detector")
	}
	cli := needDocker(t)
	miss := func(why string) {
		if os.Getenv("CI") == "true" {
			t.Fatal(why)
		}
		t.Skip(why)
	}
	bin, err := exec.LookPath("docker-compose")
	if err != nil {
		miss("docker-compose is not installed (apt-get install docker-compose)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	refs, _, err := runImages(ctx, launch.Docker{Client: cli}, "docker", []engines.Selection{{Name: "varnish"}}, nil, Version)
	if err != nil {
		t.Fatal(err)
	}
	built, err := images.List(ctx, launch.Docker{Client: cli})
	if err != nil {
		t.Fatal(err)
	}
	hitch := ""
	for _, im := range built {
		for _, tag := range im.Tags {
			if strings.HasPrefix(tag, "hlsbench/hitch:") {
				hitch = tag
			}
		}
	}
	if hitch == "" {
		miss("no hitch image: hlsbench images build")
	}
	tag := func(ref string) string { return ref[strings.LastIndex(ref, ":")+1:] }
	file, err := filepath.Abs(filepath.Join("..", "..", compose.File))
	if err != nil {
		t.Fatal(err)
	}
	project := "hlsbench-test-" + newNonce()
	env := append(os.Environ(), "HLSBENCH_TAG="+tag(refs["hlsbench"]), "VARNISH_TAG="+tag(refs["varnish"]), "HITCH_TAG="+tag(hitch))
	dc := func(extra []string, args ...string) (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, bin, append([]string{"--ansi", "never", "-p", project, "-f", file}, args...)...)
		cmd.Env = append(env, extra...)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	projectFilter := filters.NewArgs(filters.Arg("label", "com.docker.compose.project="+project))
	down := func() {
		if out, err := dc(nil, "down", "-v", "--remove-orphans"); err != nil {
			t.Errorf("docker-compose down: %v\n%s", err, out)
		}
	}
	t.Cleanup(func() {
		down()
		left, err := cli.ContainerList(context.Background(), container.ListOptions{All: true, Filters: projectFilter})
		if err != nil {
			t.Error(err)
		}
		for _, c := range left {
			t.Errorf("container %s left after down", c.Names)
		}
		vols, err := cli.VolumeList(context.Background(), volume.ListOptions{Filters: projectFilter})
		if err != nil {
			t.Error(err)
		}
		for _, v := range vols.Volumes {
			t.Errorf("volume %s left after down -v", v.Name)
		}
	})
	if out, err := dc(nil, "up", "-d", "origin", "varnish", "hitch"); err != nil {
		t.Fatalf("docker-compose up: %v\n%s", err, out)
	}

	url := "http://" + compose.VarnishListen + origin.ManifestPath
	var resp *http.Response
	for deadline := time.Now().Add(time.Minute); ; {
		if resp, err = http.Get(url); err == nil && resp.StatusCode == http.StatusOK {
			resp.Body.Close()
			break
		}
		if resp != nil {
			resp.Body.Close()
		}
		if time.Now().After(deadline) {
			out, _ := dc(nil, "logs", "--tail", "20")
			t.Fatalf("Varnish did not answer %s within a minute: %v\n%s", url, err, out)
		}
		time.Sleep(200 * time.Millisecond)
	}
	for _, h := range []string{origin.VersionHeader, origin.GeneratedHeader, origin.ChecksumHeader, "X-Varnish"} {
		if resp.Header.Get(h) == "" {
			t.Errorf("the answer through Varnish lacks %s: %v", h, resp.Header)
		}
	}

	t.Setenv(asMain, "1")
	code, out, errs := runCLI(t, ctx, "load", url, "--rate", "100", "--requests", "300", "--duration", "5s", "--json")
	finishedValid(t, code, errs)
	var rep loadReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if rep.OK != 300 || rep.Errors != 0 {
		t.Errorf("hlsbench load through Varnish: %d ok, %d errors (%v), want 300 ok", rep.OK, rep.Errors, rep.ErrorsByKind)
	}
	// The origin made the playlist once: Varnish answered the rest.
	st, err := http.Get("http://" + compose.OriginControl + "/stats")
	if err != nil {
		t.Fatal(err)
	}
	var stats origin.Stats
	err = json.NewDecoder(st.Body).Decode(&stats)
	st.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	if stats.Fetches < 1 || stats.Fetches > 5 {
		t.Errorf("the origin made %d answers for 301 through Varnish: want the cache to answer", stats.Fetches)
	}

	gen, err := dc([]string{"TARGET=https://" + compose.HitchListen + origin.ManifestPath, "RATE=50", "DURATION=2s"},
		"--profile", "load", "run", "--rm", "generator")
	// Exit 3 for the generator's own lateness alone is a measurement this
	// busy machine rightly marks invalid, not a broken stack.
	var exit *exec.ExitError
	if err != nil && !(errors.As(err, &exit) && exit.ExitCode() == ExitInvalid && strings.Contains(gen, "lateness")) {
		t.Fatalf("the generator service through hitch: %v\n%s", err, gen)
	}
	for _, want := range []string{"Requests 100 (ok 100, errors 0)", "tls: TLS 1."} {
		if !strings.Contains(gen, want) {
			t.Errorf("the generator service's output lacks %q:\n%s", want, gen)
		}
	}
}
