package engines

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hlsbench/hlsbench/engines/launch"
	"github.com/hlsbench/hlsbench/origin"
	"github.com/hlsbench/hlsbench/results/golden"
)

// Policies shaped like the workloads' (workloads imports engines, so they
// are rebuilt here).
func varnishHitPathPolicy() Policy {
	p := DefaultPolicy()
	p.ManifestTTL = 24 * time.Hour
	return p
}

func varnishOriginFlapPolicy() Policy {
	p := DefaultPolicy()
	p.ManifestTTL = 2 * time.Second
	p.Grace = 60 * time.Second
	p.HealthyGrace = 2 * time.Second
	p.ProbeInterval, p.ProbeTimeout = 500*time.Millisecond, 500*time.Millisecond
	p.ProbeWindow, p.ProbeThreshold = 3, 2
	p.FirstByteTimeout, p.BetweenBytesTimeout, p.ConnectTimeout = time.Second, time.Second, 500*time.Millisecond
	return p
}

func varnishNoProbePolicy() Policy {
	p := DefaultPolicy()
	p.ProbePath = ""
	return p
}

var varnishCases = []struct {
	name   string
	policy func() Policy
}{
	{"hit-path", varnishHitPathPolicy},
	{"origin-flap", varnishOriginFlapPolicy},
	{"default", DefaultPolicy},
	{"no-probe", varnishNoProbePolicy},
	{"ban", func() Policy { return purgePolicy(PurgeBan) }},
}

func varnishGoldenConfig(p Policy) Config {
	return Config{Policy: p, Listen: "127.0.0.1:6081", Origin: "127.0.0.1:8081",
		WorkDir: "/tmp/hlsbench-golden", CacheDir: "/dev/shm/hlsbench-golden-cache", CPUs: 2}
}

func varnishArgsFile(ls LaunchSpec) []byte {
	return []byte(strings.Join(append([]string{ls.Binary}, ls.Args...), "\n") + "\n")
}

func TestVarnishRenderGolden(t *testing.T) {
	for _, c := range varnishCases {
		t.Run(c.name, func(t *testing.T) {
			cfg := varnishGoldenConfig(c.policy())
			files, err := Varnish{}.Render(cfg)
			if err != nil {
				t.Fatal(err)
			}
			if got := files.Names(); len(got) != 1 || got[0] != "default.vcl" {
				t.Fatalf("files %v, want [default.vcl]", got)
			}
			golden.Assert(t, filepath.Join("testdata", "varnish-"+c.name+".vcl"), files["default.vcl"])

			ls := Varnish{}.Launch(cfg, "varnishd")
			if ls.StopTimeout != 10*time.Second {
				t.Errorf("StopTimeout %v, want 10s", ls.StopTimeout)
			}
			golden.Assert(t, filepath.Join("testdata", "varnish-"+c.name+".args"), varnishArgsFile(ls))

			// Vinyl runs the same VCL under its own binary and state directory.
			vfiles, err := Vinyl{}.Render(cfg)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(vfiles["default.vcl"], files["default.vcl"]) || len(vfiles) != len(files) {
				t.Error("Vinyl renders other files than Varnish")
			}
			vls := Vinyl{}.Launch(cfg, "vinyld")
			if vls.StopTimeout != 10*time.Second {
				t.Errorf("Vinyl StopTimeout %v, want 10s", vls.StopTimeout)
			}
			golden.Assert(t, filepath.Join("testdata", "vinyl-"+c.name+".args"), varnishArgsFile(vls))
		})
	}
}

func TestVarnishRenderRejects(t *testing.T) {
	good := varnishGoldenConfig(DefaultPolicy())
	for _, c := range []struct {
		name string
		edit func(*Config)
		want string
	}{
		{"origin without port", func(c *Config) { c.Origin = "127.0.0.1" }, "host:port"},
		{"origin port", func(c *Config) { c.Origin = "127.0.0.1:99999" }, "port number"},
		{"origin quote", func(c *Config) { c.Origin = `a"b:80` }, "quotes"},
		{"probe path relative", func(c *Config) { c.Policy.ProbePath = "health" }, "absolute path"},
		{"probe path space", func(c *Config) { c.Policy.ProbePath = "/a b" }, "absolute path"},
		{"probe window", func(c *Config) { c.Policy.ProbeWindow = 65 }, "64"},
		{"negative grace", func(c *Config) { c.Policy.Grace = -time.Second }, "grace"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := good
			c.edit(&cfg)
			_, err := Varnish{}.Render(cfg)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err %v, want one mentioning %q", err, c.want)
			}
		})
	}
}

func TestVarnishDurationAndSize(t *testing.T) {
	for d, want := range map[time.Duration]string{
		0: "0s", 500 * time.Millisecond: "500ms", time.Second: "1s", 90 * time.Second: "90s",
		2 * time.Minute: "2m", 24 * time.Hour: "24h", 1500 * time.Microsecond: "0.0015s",
	} {
		if got := vclDuration(d); got != want {
			t.Errorf("vclDuration(%v) = %q, want %q", d, got, want)
		}
	}
	for n, want := range map[int64]string{512 << 20: "512M", 1 << 30: "1G", 3 << 10: "3k", 1<<20 + 1: "1048577"} {
		if got := varnishSize(n); got != want {
			t.Errorf("varnishSize(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestParseVarnishstat(t *testing.T) {
	// varnishstat 7.1: {"version": 1, "counters": {…}}; the probe bitmap
	// of 64 good probes does not fit a float64 exactly.
	v71 := `{"version": 1, "timestamp": "2026-11-30T04:12:10", "counters": {
	  "MGT.uptime": {"description": "x", "flag": "c", "format": "d", "value": 4},
	  "MAIN.cache_hit": {"description": "Cache hits", "flag": "c", "format": "i", "value": 20},
	  "MAIN.cache_hit_grace": {"flag": "c", "format": "i", "value": 17},
	  "MAIN.backend_req": {"flag": "c", "format": "i", "value": 54},
	  "SMA.s0.g_bytes": {"flag": "g", "format": "B", "value": 4096},
	  "LCK.ban.creat": {"flag": "c", "format": "i", "value": 1},
	  "VBE.boot.origin.happy": {"flag": "b", "format": "b", "value": 18446744073709551614},
	  "VBE.boot.origin.req": {"flag": "c", "format": "i", "value": 55}}}`
	p := DefaultPolicy() // window 3, threshold 2
	m, err := parseVarnishstat([]byte(v71), p)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{"MAIN.cache_hit": 20, "MAIN.cache_hit_grace": 17, "MAIN.backend_req": 54,
		"SMA.s0.g_bytes": 4096, "VBE.boot.origin.req": 55, "VBE.boot.origin.healthy": 1}
	if len(m) != len(want) {
		t.Errorf("got %v, want %v", m, want)
	}
	for k, v := range want {
		if m[k] != v {
			t.Errorf("%s = %v, want %v", k, m[k], v)
		}
	}
	// The last two probes failed: 1 good of the last 3 is below 2.
	sick := strings.Replace(v71, "18446744073709551614", "18446744073709551612", 1)
	if m, err := parseVarnishstat([]byte(sick), p); err != nil || m["VBE.boot.origin.healthy"] != 0 {
		t.Errorf("two failed probes: healthy = %v (%v), want 0", m["VBE.boot.origin.healthy"], err)
	}
	// Without a probe the bitmap means nothing.
	if m, _ := parseVarnishstat([]byte(v71), varnishNoProbePolicy()); len(m) != len(want)-1 {
		t.Errorf("no probe: got %v", m)
	}
	// Before 6.5 the counters were at the top level.
	old := `{"timestamp": "2019-01-01T00:00:00", "MAIN.cache_hit": {"value": 3}, "MAIN.backend_req": {"value": 2}}`
	if m, err := parseVarnishstat([]byte(old), p); err != nil || m["MAIN.cache_hit"] != 3 || m["MAIN.backend_req"] != 2 {
		t.Errorf("old format: %v, %v", m, err)
	}
	for _, bad := range []string{"", "{", `{"version": 1, "counters": {}}`} {
		if _, err := parseVarnishstat([]byte(bad), p); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

func TestVinylNotInstalledHint(t *testing.T) {
	if p, err := FindBinary(Vinyl{}, ""); err == nil {
		t.Skipf("vinyld is installed here (%s)", p)
	}
	_, err := FindBinary(Vinyl{}, "")
	if !errors.Is(err, ErrNotFound) {
		t.Errorf("err %v, want ErrNotFound", err)
	}
	for _, want := range []string{"vinyld", "not packaged in Debian bookworm", "path of the vinyld binary", "vinyl-cache.org"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
}

// needVarnishd finds varnishd, or skips the test, unless in CI where the
// engine must be there.
func needVarnishd(t *testing.T) string {
	t.Helper()
	bin, err := FindBinary(Varnish{}, "")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true and %v", err)
		}
		t.Skip("varnishd not installed (apt-get install varnish)")
	}
	return bin
}

// varnishWorkDir is a directory the varnish user can read: varnishd drops
// privileges, and t.TempDir's parents are private.
func varnishWorkDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "hlsbench-varnish-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestVarnishVersion(t *testing.T) {
	bin := needVarnishd(t)
	v, err := Varnish{}.Version(context.Background(), LocalExec(""), bin)
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`^\d+\.\d+(\.\d+)?$`).MatchString(v) {
		t.Fatalf("version %q", v)
	}
	t.Logf("%s: %s", bin, v)
}

// The first line of -V, as each kind of build prints it.
func TestVarnishVersionLines(t *testing.T) {
	for line, want := range map[string]string{
		"varnishd (varnish-7.1.1 revision 7cee1c581bead20e88d101ab3d72afb29f14d87a)": "7.1.1",
		"varnishd (varnish-9.0.2 revision NOGIT)":                                    "9.0.2",
		"varnishd (varnish-trunk revision NOGIT)":                                    "trunk",
		"varnishd (varnish-trunk revision 27d2ce15b20b94d0a5e452b0d5c29c3145d00b6a)": "trunk-27d2ce15b",
		"vinyld (vinyl-cache-trunk revision NOGIT)":                                  "trunk",
		"varnishd (who knows)":                                                       "",
	} {
		run := func(ctx context.Context, argv ...string) (launch.Output, error) {
			return launch.Output{Stderr: []byte(line + "\nCopyright (c) 2006 Verdens Gang AS\n")}, nil
		}
		v, err := Vinyl{}.Version(context.Background(), run, "varnishd")
		if v != want || (err != nil) != (want == "") {
			t.Errorf("%q: %q, %v; want %q", line, v, err, want)
		}
	}
}

// Every golden VCL compiles with varnishd itself, and a broken one fails
// with the compiler's message.
func TestVarnishCheckGolden(t *testing.T) {
	bin := needVarnishd(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// Each build compiles the one VCL with its own varnishd: no version
	// needs a VCL of its own.
	for _, b := range varnishBuilds(t) {
		for _, c := range varnishCases {
			t.Run(b.name+"/"+c.name, func(t *testing.T) {
				vcl, err := os.ReadFile(filepath.Join("testdata", "varnish-"+c.name+".vcl"))
				if err != nil {
					t.Fatal(err)
				}
				dir := varnishWorkDir(t)
				if err := os.WriteFile(filepath.Join(dir, "default.vcl"), vcl, 0o644); err != nil {
					t.Fatal(err)
				}
				if err := b.e.Check(ctx, LocalExec(dir), Config{Policy: c.policy(), WorkDir: dir}, b.bin); err != nil {
					t.Fatal(err)
				}
			})
		}
	}
	for _, c := range varnishCases {
		t.Run(c.name, func(t *testing.T) {
			vcl, err := os.ReadFile(filepath.Join("testdata", "varnish-"+c.name+".vcl"))
			if err != nil {
				t.Fatal(err)
			}
			dir := varnishWorkDir(t)
			if err := os.WriteFile(filepath.Join(dir, "default.vcl"), vcl, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := (Varnish{}).Check(ctx, LocalExec(dir), Config{Policy: c.policy(), WorkDir: dir}, bin); err != nil {
				t.Fatal(err)
			}
			// Vinyl's checker, run with varnishd, compiles the same file.
			if err := (Vinyl{}).Check(ctx, LocalExec(dir), Config{Policy: c.policy(), WorkDir: dir}, bin); err != nil {
				t.Fatal(err)
			}
			if ents, _ := os.ReadDir(dir); len(ents) != 1 {
				t.Errorf("check left files behind: %v", ents)
			}
		})
	}
	t.Run("broken", func(t *testing.T) {
		dir := varnishWorkDir(t)
		bad := "vcl 4.1;\nbackend b { .host = \"127.0.0.1\"; .port = \"1\"; }\nsub vcl_recv { set req.nonsense = 1; }\n"
		if err := os.WriteFile(filepath.Join(dir, "default.vcl"), []byte(bad), 0o644); err != nil {
			t.Fatal(err)
		}
		err := Varnish{}.Check(ctx, LocalExec(dir), Config{WorkDir: dir}, bin)
		if err == nil || !strings.Contains(err.Error(), "req.nonsense") {
			t.Fatalf("err %v, want the compiler's message naming req.nonsense", err)
		}
	})
}

// varnishTestOrigin starts an in-process origin whose Cache-Control follows
// p (as the workloads' does).
func varnishTestOrigin(t *testing.T, p Policy, cfg origin.Config) (*origin.Origin, string) {
	t.Helper()
	cfg.CacheControl = origin.CacheControl{Master: MaxAge(p.ManifestTTL), Manifest: MaxAge(p.ManifestTTL), Segment: MaxAge(p.SegmentTTL)}
	o, err := origin.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := origin.Start(o, "127.0.0.1:0", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return o, "http://" + srv.DataAddr()
}

// varnishStart starts e as a local process and registers its stop.
func varnishStart(t *testing.T, ctx context.Context, e Engine, s LocalSpec) *processEngine {
	t.Helper()
	inst, err := StartLocal(ctx, e, s)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { inst.Stop(context.Background()) })
	return inst.(*processEngine)
}

type varnishAnswer struct {
	status int
	header http.Header
	body   []byte
}

func varnishGet(t *testing.T, url string, hdr ...string) varnishAnswer {
	t.Helper()
	req, err := http.NewRequest("GET", url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	cl := &http.Client{Timeout: 10 * time.Second}
	resp, err := cl.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	return varnishAnswer{resp.StatusCode, resp.Header, body}
}

func varnishCounters(t *testing.T, ctx context.Context, li *processEngine) map[string]float64 {
	t.Helper()
	m, err := li.Counters(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"MAIN.cache_hit", "MAIN.cache_hit_grace", "MAIN.cache_hitpass", "MAIN.cache_hitmiss",
		"MAIN.cache_miss", "MAIN.backend_req", "MAIN.s_fetch", "MAIN.s_bgfetch", "MAIN.backend_unhealthy",
		"MAIN.backend_fail", "MAIN.fetch_failed", "MAIN.busy_sleep", "MAIN.busy_wakeup", "MAIN.threads_limited",
		"MAIN.sess_dropped", "MAIN.n_lru_nuked"} {
		if _, ok := m[k]; !ok {
			t.Errorf("counters lack %s", k)
		}
	}
	return m
}

// varnishStopped checks that Stop ended the whole process group and
// removed the work directory.
func varnishStopped(t *testing.T, li *processEngine) {
	t.Helper()
	pid := li.pg.PGID()
	if err := li.Stop(context.Background()); err != nil {
		t.Fatalf("stop: %v", err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for syscall.Kill(-pid, 0) == nil { // the manager and its cache process
		if time.Now().After(deadline) {
			t.Fatalf("process group %d still has processes after Stop", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("pid %d after Stop: %v, want ESRCH", pid, err)
	}
	if _, err := os.Stat(li.work); !os.IsNotExist(err) {
		t.Errorf("work dir %s after Stop: %v", li.work, err)
	}
	if err := li.Stop(context.Background()); err != nil {
		t.Errorf("second stop: %v", err)
	}
}

// Varnish serves the playlist and segments byte for byte with the origin's
// headers, MISS then HIT with an Age, coalesces a cold burst into one origin
// fetch, and its own counters agree with the origin's.
func TestVarnishServe(t *testing.T) {
	for _, b := range varnishBuilds(t) {
		t.Run(b.name, func(t *testing.T) { varnishServe(t, b.e, b.bin) })
	}
}

func varnishServe(t *testing.T, e Engine, bin string) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	p := varnishHitPathPolicy()
	const segSize = 1 << 20
	o, originURL := varnishTestOrigin(t, p, origin.Config{SegmentSize: segSize,
		FirstByteDelay: 100 * time.Millisecond, TransferRate: origin.Unlimited})
	direct := varnishGet(t, originURL+origin.ManifestPath)

	li := varnishStart(t, ctx, e, LocalSpec{Policy: p, OriginURL: originURL, Binary: bin})
	if info := li.Info(); info.Name != e.Name() || !regexp.MustCompile(`^(\d+\.\d+|trunk)`).MatchString(info.Version) {
		t.Errorf("info %+v", info)
	}
	o.ResetStats()
	before := varnishCounters(t, ctx, li)
	hits := 0

	// The playlist: MISS, then HIT from the same copy, older.
	a := varnishGet(t, li.URL()+origin.ManifestPath)
	if a.status != 200 || !bytes.Equal(a.body, direct.body) {
		t.Fatalf("playlist: %d, %d bytes, want 200 and the origin's %d bytes", a.status, len(a.body), len(direct.body))
	}
	for _, h := range []string{"Content-Type", "ETag", "Last-Modified", origin.ChecksumHeader} {
		if a.header.Get(h) != direct.header.Get(h) {
			t.Errorf("playlist %s %q, origin's %q", h, a.header.Get(h), direct.header.Get(h))
		}
	}
	if a.header.Get("X-Cache") != "MISS" || a.header.Get("Age") != "0" {
		t.Errorf("first playlist: X-Cache %q Age %q, want MISS 0", a.header.Get("X-Cache"), a.header.Get("Age"))
	}
	time.Sleep(1100 * time.Millisecond)
	b := varnishGet(t, li.URL()+origin.ManifestPath)
	hits++
	age, _ := strconv.Atoi(b.header.Get("Age"))
	if b.header.Get("X-Cache") != "HIT" || age < 1 || !bytes.Equal(b.body, direct.body) ||
		b.header.Get(origin.GeneratedHeader) != a.header.Get(origin.GeneratedHeader) {
		t.Errorf("second playlist: X-Cache %q Age %q stamp %s (first %s)", b.header.Get("X-Cache"), b.header.Get("Age"),
			b.header.Get(origin.GeneratedHeader), a.header.Get(origin.GeneratedHeader))
	}

	// A segment: the origin's bytes and checksum, then a range from cache.
	want := make([]byte, segSize)
	origin.SegmentBytes(0, 3, 0, want)
	s := varnishGet(t, li.URL()+origin.SegmentPath(3))
	if s.status != 200 || !bytes.Equal(s.body, want) || s.header.Get("X-Cache") != "MISS" ||
		s.header.Get("Content-Type") != "video/mp2t" ||
		s.header.Get(origin.ChecksumHeader) != fmt.Sprintf("%08x", origin.SegmentCRC(0, 3, segSize)) {
		t.Errorf("segment: %d, %d bytes (equal %v), X-Cache %q, type %q, crc %q", s.status, len(s.body),
			bytes.Equal(s.body, want), s.header.Get("X-Cache"), s.header.Get("Content-Type"), s.header.Get(origin.ChecksumHeader))
	}
	r := varnishGet(t, li.URL()+origin.SegmentPath(3), "Range", "bytes=0-65535")
	hits++
	if r.status != 206 || !bytes.Equal(r.body, want[:65536]) || r.header.Get("X-Cache") != "HIT" ||
		r.header.Get("Content-Range") != fmt.Sprintf("bytes 0-65535/%d", segSize) {
		t.Errorf("range: %d, %d bytes, X-Cache %q, Content-Range %q", r.status, len(r.body), r.header.Get("X-Cache"), r.header.Get("Content-Range"))
	}

	// 50 clients released together on a cold segment: one origin fetch.
	const n = 50
	cold := origin.SegmentPath(100) + "?cold=1"
	origin.SegmentBytes(0, 100, 0, want)
	var wg sync.WaitGroup
	start := make(chan struct{})
	answers := make([]varnishAnswer, n)
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			resp, err := (&http.Client{Timeout: 20 * time.Second}).Get(li.URL() + cold)
			if err != nil {
				errs[i] = err
				return
			}
			defer resp.Body.Close()
			body, err := io.ReadAll(resp.Body)
			answers[i], errs[i] = varnishAnswer{resp.StatusCode, resp.Header, body}, err
		}()
	}
	close(start)
	wg.Wait()
	caches := map[string]int{}
	for i, a := range answers {
		if errs[i] != nil || a.status != 200 || !bytes.Equal(a.body, want) {
			t.Fatalf("burst answer %d: %v, status %d, %d bytes", i, errs[i], a.status, len(a.body))
		}
		caches[a.header.Get("X-Cache")]++
	}
	hits += caches["HIT"]
	if got := o.Stats().Objects[cold].Fetches; got != 1 {
		t.Errorf("burst of %d: %d origin fetches, want 1", n, got)
	}
	if caches["MISS"] != 1 || caches["HIT"] != n-1 {
		t.Errorf("burst X-Cache %v, want 1 MISS and %d HIT", caches, n-1)
	}

	// Varnish's own counters tell the same story as the origin's. Worker
	// threads fold their counters into the shared ones in batches, so a
	// read right after the answers may be a few behind: read until they
	// settle (bounded).
	after := varnishCounters(t, ctx, li)
	for deadline := time.Now().Add(3 * time.Second); after["MAIN.cache_hit"]-before["MAIN.cache_hit"] < float64(hits) && time.Now().Before(deadline); {
		time.Sleep(100 * time.Millisecond)
		after = varnishCounters(t, ctx, li)
	}
	d := func(k string) float64 { return after[k] - before[k] }
	fetches := float64(o.Stats().Fetches)
	if diff := d("MAIN.backend_req") - fetches; diff < -1 || diff > 1 {
		t.Errorf("backend_req +%v, origin fetches %v: more than one apart", d("MAIN.backend_req"), fetches)
	}
	if d("MAIN.cache_hit") != float64(hits) {
		t.Errorf("cache_hit +%v, want the %d HITs answered", d("MAIN.cache_hit"), hits)
	}
	t.Logf("origin fetches %v; varnish backend_req +%v cache_hit +%v cache_miss +%v busy_sleep +%v busy_wakeup +%v; burst %v",
		fetches, d("MAIN.backend_req"), d("MAIN.cache_hit"), d("MAIN.cache_miss"), d("MAIN.busy_sleep"), d("MAIN.busy_wakeup"), caches)

	varnishStopped(t, li)
}

// Under the origin-flap policy, once the manifest's TTL has run out and the
// origin answers 503, Varnish keeps serving the old copy, marked STALE,
// until the origin recovers.
func TestVarnishGrace(t *testing.T) {
	for _, b := range varnishBuilds(t) {
		t.Run(b.name, func(t *testing.T) { varnishGrace(t, b.e, b.bin) })
	}
}

func varnishGrace(t *testing.T, e Engine, bin string) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	p := varnishOriginFlapPolicy()
	o, originURL := varnishTestOrigin(t, p, origin.Config{FirstByteDelay: origin.NoDelay, TransferRate: origin.Unlimited})
	li := varnishStart(t, ctx, e, LocalSpec{Policy: p, OriginURL: originURL, Binary: bin})
	url := li.URL() + origin.ManifestPath

	first := varnishGet(t, url)
	stamp := first.header.Get(origin.GeneratedHeader)
	if first.status != 200 || first.header.Get("X-Cache") != "MISS" || stamp == "" {
		t.Fatalf("first: %d X-Cache %q stamp %q", first.status, first.header.Get("X-Cache"), stamp)
	}
	time.Sleep(p.ManifestTTL + 200*time.Millisecond)
	o.SetMode(origin.Fail5xx)
	before := varnishCounters(t, ctx, li)
	failStart := time.Now()
	stale := 0
	// Past HealthyGrace (2s) only the probe's verdict keeps grace going.
	for time.Since(failStart) < 4*time.Second {
		a := varnishGet(t, url)
		if a.status != 200 || a.header.Get("X-Cache") != "STALE" || a.header.Get(origin.GeneratedHeader) != stamp {
			t.Fatalf("%v into the failure: %d X-Cache %q stamp %q, want 200 STALE %s", time.Since(failStart).Round(time.Millisecond),
				a.status, a.header.Get("X-Cache"), a.header.Get(origin.GeneratedHeader), stamp)
		}
		stale++
		time.Sleep(100 * time.Millisecond)
	}
	after := varnishCounters(t, ctx, li)
	if got := after["MAIN.cache_hit_grace"] - before["MAIN.cache_hit_grace"]; got != float64(stale) {
		t.Errorf("cache_hit_grace +%v, want the %d STALE answers", got, stale)
	}
	if after["VBE.boot.origin.healthy"] != 0 {
		t.Errorf("the probe still calls the failing origin healthy: %v", after)
	}
	st := o.Stats()
	t.Logf("%d STALE answers; origin failed %d, health ok/failed %d/%d; varnish bgfetch +%v backend_unhealthy +%v",
		stale, st.Failed, st.Health.OK, st.Health.Failed,
		after["MAIN.s_bgfetch"]-before["MAIN.s_bgfetch"], after["MAIN.backend_unhealthy"]-before["MAIN.backend_unhealthy"])

	// Recovery: a fresh copy replaces the stale one.
	o.SetMode(origin.Healthy)
	deadline := time.Now().Add(10 * time.Second)
	for {
		a := varnishGet(t, url)
		if a.status == 200 && a.header.Get(origin.GeneratedHeader) != stamp {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no fresh copy 10s after the origin recovered: %d X-Cache %q", a.status, a.header.Get("X-Cache"))
		}
		time.Sleep(100 * time.Millisecond)
	}
	varnishStopped(t, li)
}

// A 503 to a foreground fetch made while the probe still calls the origin
// healthy must not evict the copy Varnish holds: once the probe marks the
// origin sick, that copy is served in grace. (Delivering the 503, even as a
// hit-for-miss, would have superseded it.)
func TestVarnishKeepsCopyOnForegroundError(t *testing.T) {
	needVarnishd(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	p := varnishOriginFlapPolicy()
	p.ManifestTTL = time.Second
	p.HealthyGrace = 0 // while healthy, an expired copy is never served: every request past the TTL fetches
	p.ProbeInterval, p.ProbeTimeout = time.Second, time.Second
	o, originURL := varnishTestOrigin(t, p, origin.Config{FirstByteDelay: origin.NoDelay, TransferRate: origin.Unlimited})
	li := varnishStart(t, ctx, Varnish{}, LocalSpec{Policy: p, OriginURL: originURL})
	url := li.URL() + origin.ManifestPath

	first := varnishGet(t, url)
	stamp := first.header.Get(origin.GeneratedHeader)
	time.Sleep(p.ManifestTTL + 300*time.Millisecond)
	o.SetMode(origin.Fail5xx)
	// Two failed probes, a second apart, make the origin sick: until then
	// this request fetches in the foreground and gets the error.
	if a := varnishGet(t, url); a.status != 503 || a.header.Get("X-Cache") != "MISS" {
		t.Fatalf("foreground fetch from the failing origin: %d X-Cache %q, want 503 MISS", a.status, a.header.Get("X-Cache"))
	}
	if n := o.Stats().Objects[origin.ManifestPath].Failed; n != 1 {
		t.Fatalf("origin failed answers %d, want 1", n)
	}
	deadline := time.Now().Add(5 * time.Second)
	for varnishCounters(t, ctx, li)["VBE.boot.origin.healthy"] != 0 {
		if time.Now().After(deadline) {
			t.Fatal("the probe did not mark the failing origin sick within 5s")
		}
		time.Sleep(100 * time.Millisecond)
	}
	a := varnishGet(t, url)
	if a.status != 200 || a.header.Get("X-Cache") != "STALE" || a.header.Get(origin.GeneratedHeader) != stamp {
		t.Fatalf("origin sick: %d X-Cache %q stamp %q, want 200 STALE %s (the copy was lost)",
			a.status, a.header.Get("X-Cache"), a.header.Get(origin.GeneratedHeader), stamp)
	}
	varnishStopped(t, li)
}

// Vinyl's adapter (its command line, state directory, checker and counters)
// runs under varnishd: Vinyl itself is not installed here.
func TestVinylAdapterUnderVarnishd(t *testing.T) {
	bin := needVarnishd(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	p := DefaultPolicy()
	o, originURL := varnishTestOrigin(t, p, origin.Config{FirstByteDelay: origin.NoDelay, TransferRate: origin.Unlimited})
	li := varnishStart(t, ctx, Vinyl{}, LocalSpec{Policy: p, OriginURL: originURL, Binary: bin})
	if li.Info().Name != "vinyl" {
		t.Errorf("info %+v", li.Info())
	}
	o.ResetStats()
	before := varnishCounters(t, ctx, li)
	for i, want := range []string{"MISS", "HIT"} {
		a := varnishGet(t, li.URL()+origin.SegmentPath(7))
		if a.status != 200 || a.header.Get("X-Cache") != want {
			t.Errorf("request %d: %d X-Cache %q, want 200 %s", i, a.status, a.header.Get("X-Cache"), want)
		}
	}
	after := varnishCounters(t, ctx, li)
	if got := after["MAIN.backend_req"] - before["MAIN.backend_req"]; got != float64(o.Stats().Fetches) || got != 1 {
		t.Errorf("backend_req +%v, origin fetches %d, want 1", got, o.Stats().Fetches)
	}
	if _, err := os.Stat(filepath.Join(li.work, "vinyl")); err != nil {
		t.Errorf("state directory: %v", err)
	}
	varnishStopped(t, li)
}

// A daemon given by path reads its counters with its own installation's
// tool, even where that path exists only in a container.
func TestVarnishStatBinary(t *testing.T) {
	dir := t.TempDir()
	for _, p := range []string{"sbin/varnishd", "bin/varnishstat", "v/vinyld", "v/vinylstat"} {
		os.MkdirAll(filepath.Join(dir, filepath.Dir(p)), 0o755)
		os.WriteFile(filepath.Join(dir, p), []byte("#!/bin/sh\n"), 0o755)
	}
	for daemon, want := range map[string]string{
		filepath.Join(dir, "sbin/varnishd"):    filepath.Join(dir, "bin/varnishstat"),
		filepath.Join(dir, "v/vinyld"):         filepath.Join(dir, "v/vinylstat"),
		"/in/a/container/prefix/sbin/varnishd": "/in/a/container/prefix/bin/varnishstat",
		"/in/a/container/prefix/sbin/vinyld":   "/in/a/container/prefix/bin/vinylstat",
	} {
		if got := vinylNames.statBinary(daemon); got != want {
			t.Errorf("statBinary(%s) = %s, want %s", daemon, got, want)
		}
	}
}

// The built-in cache gets the policy's healthy grace, as Varnish's VCL
// does (req.grace): BuiltinPolicy once dropped it, and the built-in cache
// served stale for the whole grace while the origin was healthy.
func TestBuiltinPolicyHealthyGrace(t *testing.T) {
	p := DefaultPolicy()
	p.Grace, p.HealthyGrace = 30*time.Second, time.Second
	if b := BuiltinPolicy(p); b.Grace != p.Grace || b.HealthyGrace != p.HealthyGrace {
		t.Errorf("BuiltinPolicy: grace %v, healthy grace %v: want %v and %v", b.Grace, b.HealthyGrace, p.Grace, p.HealthyGrace)
	}
}
