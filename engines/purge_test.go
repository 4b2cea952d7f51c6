package engines

import (
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hlsbench/hlsbench/engines/launch"
	"github.com/hlsbench/hlsbench/origin"
)

// purgeCase is an engine under a purging policy.
type purgeCase struct {
	name string
	e    Engine
	bin  string
	lch  launch.Launcher
}

func purgeCases(t *testing.T) []purgeCase {
	cases := []purgeCase{{"builtin", Builtin{}, "", launch.Inproc{}}, {"nginx", NGINX{}, needNGINX(t), nil}}
	for _, b := range varnishBuilds(t) {
		cases = append(cases, purgeCase{b.name, b.e, b.bin, nil})
	}
	return cases
}

// needPurgeModule skips (fails under CI=true) without Debian's NGINX purge.
func needPurgeModule(t *testing.T) {
	t.Helper()
	if _, err := os.Stat(NGINXPurgeModule); err != nil {
		if ciRun() {
			t.Fatalf("CI=true and %v", err)
		}
		t.Skip("NGINX's purge module is not installed (apt-get install libnginx-mod-http-cache-purge)")
	}
}

// Under a purging policy every engine resolves "auto" to its own way and
// invalidates with it: a ban of a prefix (Varnish, Vinyl Cache, the
// built-in cache; "/stream/segment-1.", whose dot must stay a dot) removes
// every object under it and none other; a PURGE (NGINX) removes its
// object. Asked for "purge", Varnish and Vinyl Cache take PURGE in their
// VCL and the built-in cache its own. The next request is a miss, fetched
// again.
func TestPurgeModes(t *testing.T) {
	for _, c := range purgeCases(t) {
		// auto, then the second mode where the engine has one: Varnish's
		// and Vinyl's PURGE in the VCL, the built-in cache's PURGE.
		asked := []string{PurgeAuto, PurgeObject}
		if c.name == "nginx" {
			asked = asked[:1]
		}
		for _, ask := range asked {
			t.Run(c.name+"/"+ask, func(t *testing.T) { purgeMode(t, c, ask) })
		}
	}
}

func purgeMode(t *testing.T, c purgeCase, ask string) {
	if c.name == "nginx" {
		needPurgeModule(t)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p := DefaultPolicy()
	p.Purge = ask
	o, originURL := varnishTestOrigin(t, p, origin.Config{FirstByteDelay: origin.NoDelay, TransferRate: origin.Unlimited})
	inst, err := StartLocal(ctx, c.e, LocalSpec{Policy: p, OriginURL: originURL, Binary: c.bin, Launcher: c.lch})
	if err != nil {
		t.Fatal(err)
	}
	defer inst.Stop(context.Background())
	mode := inst.(PurgeModer).PurgeMode()
	want := PurgeBan
	if c.name == "nginx" || ask == PurgeObject {
		want = PurgeObject
	}
	if mode != want {
		t.Fatalf("%s resolved to %q, want %q", ask, mode, want)
	}
	get := func(path string) string {
		t.Helper()
		resp, err := http.Get(inst.URL() + path)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("GET %s: %d", path, resp.StatusCode)
		}
		return resp.Header.Get("X-Cache")
	}
	in, out := "/stream/segment-1.ts?run=p", "/stream/segment-2.ts?run=p"
	for _, path := range []string{in, out} {
		get(path)
		if x := get(path); x != "HIT" {
			t.Fatalf("GET %s again: X-Cache %s, want HIT", path, x)
		}
	}
	if mode == PurgeBan {
		if err := inst.(Banner).Ban(ctx, "/stream/segment-1."); err != nil {
			t.Fatal(err)
		}
	} else {
		req, _ := http.NewRequest(PurgeMethod, inst.URL()+in, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			if li, ok := inst.(*processEngine); ok {
				b, _ := os.ReadFile(filepath.Join(li.work, nginxErrorLog))
				t.Logf("%s's error log:\n%s", c.name, b)
			}
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("PURGE %s: %d", in, resp.StatusCode)
		}
	}
	// A Varnish ban applies at the next lookup: the next request
	// misses at once, with no wait for the lurker.
	if x := get(in); x != "MISS" {
		t.Errorf("GET %s after the %s: X-Cache %s, want MISS", in, mode, x)
	}
	if x := get(out); x != "HIT" {
		t.Errorf("GET %s after the %s of another object: X-Cache %s, want HIT (not invalidated)", out, mode, x)
	}
	if n := o.Stats().Objects[in].Fetches; n != 2 {
		t.Errorf("origin fetches of %s: %d, want 2 (once more after the %s)", in, n, mode)
	}
	if mode == PurgeBan {
		// A prefix with the regex's metacharacters (. and ?) bans
		// exactly what it says.
		if err := inst.(Banner).Ban(ctx, out); err != nil {
			t.Fatal(err)
		}
		if x := get(out); x != "MISS" {
			t.Errorf("GET %s after its own ban: X-Cache %s, want MISS", out, x)
		}
	}
}

// A ban of NGINX is not applicable: its purge module purges one key per
// request, and the reason says so; an engine without the module says how to
// get it.
func TestNGINXBanNotApplicable(t *testing.T) {
	bin := needNGINX(t)
	err := NGINX{}.PurgeSupport(context.Background(), LocalExec(t.TempDir()), bin, PurgeBan)
	var na *NotApplicableError
	if !errors.As(err, &na) || !strings.Contains(na.Reason, "one key per request") {
		t.Errorf("ban: %v, want not applicable, one key per request", err)
	}
	missing := func(ctx context.Context, argv ...string) (launch.Output, error) {
		return launch.Output{}, errors.New("exit status 1") // test -f: no such file
	}
	err = NGINX{}.PurgeSupport(context.Background(), missing, bin, PurgeObject)
	if !errors.As(err, &na) || !strings.Contains(na.Reason, "libnginx-mod-http-cache-purge") {
		t.Errorf("without the module: %v, want not applicable naming the package", err)
	}
	if _, err := resolvePurge(context.Background(), NGINX{}, missing, bin, PurgeAuto); !errors.As(err, &na) ||
		!strings.Contains(na.Reason, "one key per request") || !strings.Contains(na.Reason, "not installed") {
		t.Errorf("auto without the module: %v, want both reasons", err)
	}
}

func TestBanPattern(t *testing.T) {
	for in, want := range map[string]string{"/stream/": "^/stream/", "/a.b?c=(1)": `^/a\.b\?c=\(1\)`} {
		if got := BanPattern(in); got != want {
			t.Errorf("BanPattern(%q) = %q, want %q", in, got, want)
		}
	}
	if got, want := cliQuote(`^/a\.b"`), `"^/a\\.b\""`; got != want {
		t.Errorf("cliQuote = %s, want %s", got, want)
	}
}
