package engines

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/hlsbench/hlsbench/origin"
	"github.com/hlsbench/hlsbench/results/golden"
)

// nginxCases are policies shaped like the workloads' (engines must not import
// workloads): the default, a hit path and an origin flap.
func nginxCases() []struct {
	name   string
	policy Policy
} {
	hit := DefaultPolicy()
	hit.ManifestTTL = 24 * time.Hour
	return []struct {
		name   string
		policy Policy
	}{
		{"default", DefaultPolicy()},
		{"hit-path", hit},
		{"origin-flap", nginxFlapPolicy()},
		{"purge", purgePolicy(PurgeObject)},
	}
}

// purgePolicy is purge-stampede's shape: nothing expires, and mode.
func purgePolicy(mode string) Policy {
	p := DefaultPolicy()
	p.ManifestTTL, p.SegmentTTL = 24*time.Hour, 24*time.Hour
	p.Purge = mode
	return p
}

func nginxFlapPolicy() Policy {
	p := DefaultPolicy()
	p.ManifestTTL = 2 * time.Second
	p.Grace = 60 * time.Second
	p.HealthyGrace = 2 * time.Second
	p.ProbeInterval, p.ProbeTimeout = 500*time.Millisecond, 500*time.Millisecond
	p.ProbeWindow, p.ProbeThreshold = 3, 2
	p.FirstByteTimeout, p.BetweenBytesTimeout, p.ConnectTimeout = time.Second, time.Second, 500*time.Millisecond
	return p
}

func nginxGoldenConfig(p Policy) Config {
	return Config{Policy: p, Listen: "127.0.0.1:6081", Origin: "127.0.0.1:8081",
		WorkDir: "/work", CacheDir: "/dev/shm/cache", CPUs: 1}
}

// nginxLaunchText is a LaunchSpec as a golden file shows it.
func nginxLaunchText(ls LaunchSpec) []byte {
	var b bytes.Buffer
	fmt.Fprintln(&b, strings.Join(append([]string{ls.Binary}, ls.Args...), " "))
	for _, e := range ls.Env {
		fmt.Fprintln(&b, "env", e)
	}
	fmt.Fprintln(&b, "stop_timeout", ls.StopTimeout)
	return b.Bytes()
}

func TestNGINXGolden(t *testing.T) {
	for _, c := range nginxCases() {
		t.Run(c.name, func(t *testing.T) {
			cfg := nginxGoldenConfig(c.policy)
			files, err := NGINX{}.Render(cfg)
			if err != nil {
				t.Fatal(err)
			}
			if names := files.Names(); len(names) != 1 || names[0] != NGINXConf {
				t.Fatalf("files %v: want only %s", names, NGINXConf)
			}
			golden.Assert(t, filepath.Join("testdata", "nginx-"+c.name+".conf"), files[NGINXConf])
			golden.Assert(t, filepath.Join("testdata", "nginx-"+c.name+".args"), nginxLaunchText(NGINX{}.Launch(cfg, "nginx")))
		})
	}
}

func TestNGINXRenderRejects(t *testing.T) {
	base := nginxGoldenConfig(DefaultPolicy())
	for _, c := range []struct {
		name string
		edit func(*Config)
		want string
	}{
		{"fractional TTL", func(c *Config) { c.Policy.ManifestTTL = 1500 * time.Millisecond }, "manifest_ttl"},
		{"no lock timeout", func(c *Config) { c.Policy.LockTimeout = 0 }, "lock_timeout"},
		{"invalid policy", func(c *Config) { c.Policy.StoreBytes = 1 }, "store_bytes"},
		{"no CPUs", func(c *Config) { c.CPUs = 0 }, "cpus"},
		{"bad origin", func(c *Config) { c.Origin = "127.0.0.1" }, "origin address"},
		{"bad listen", func(c *Config) { c.Listen = "127.0.0.1:1; evil" }, "listen address"},
		{"relative work dir", func(c *Config) { c.WorkDir = "work" }, "work dir"},
		{"cache dir with a space", func(c *Config) { c.CacheDir = "/dev/shm/a b" }, "cache dir"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := base
			c.edit(&cfg)
			_, err := NGINX{}.Render(cfg)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Render: %v, want an error naming %s", err, c.want)
			}
		})
	}
}

func TestNGINXRenderTimes(t *testing.T) {
	p := nginxFlapPolicy()
	p.FirstByteTimeout = 3 * time.Second // longer than between-bytes: read timeout takes it
	p.LockTimeout = 2500 * time.Millisecond
	files, err := NGINX{}.Render(nginxGoldenConfig(p))
	if err != nil {
		t.Fatal(err)
	}
	conf := string(files[NGINXConf])
	for _, want := range []string{
		"proxy_read_timeout 3s;", "proxy_send_timeout 1s;", "proxy_connect_timeout 500ms;",
		"proxy_cache_lock_timeout 2500ms;", "proxy_cache_lock_age 2500ms;",
		"inactive=3660s", // the segment TTL (1h) plus grace (60s)
		"proxy_cache_valid 200 2s;", "proxy_cache_valid 200 3600s;",
	} {
		if !strings.Contains(conf, want) {
			t.Errorf("nginx.conf lacks %q", want)
		}
	}
	p.Coalesce = false
	files, _ = NGINX{}.Render(nginxGoldenConfig(p))
	if !strings.Contains(string(files[NGINXConf]), "proxy_cache_lock off;") {
		t.Error("Coalesce false: want proxy_cache_lock off")
	}
}

func TestNGINXParseVersion(t *testing.T) {
	for in, want := range map[string]string{
		"nginx version: nginx/1.22.1\n":          "1.22.1",
		"nginx version: nginx/1.18.0 (Ubuntu)\n": "1.18.0",
		"nginx version: openresty/1.21.4.1\n":    "1.21.4.1",
		"nginx: [alert] oops\n":                  "",
		"nginx version: nginx\n":                 "",
	} {
		got, ok := parseNGINXVersion(in)
		if got != want || ok != (want != "") {
			t.Errorf("parseNGINXVersion(%q) = %q, %v; want %q", in, got, ok, want)
		}
	}
}

func TestNGINXCountLog(t *testing.T) {
	lines := []string{
		"1.000\t200\t96\t200\tMISS\t2048\t0.051\t0.051\t/stream/index.m3u8",
		"1.100\t200\t96\t-\tHIT\t2048\t0.000\t-\t/stream/index.m3u8",
		// A stale answer and its background update (a subrequest: length 0).
		"4.000\t200\t0\t200\tEXPIRED\t2446\t0.051\t0.051\t/stream/index.m3u8",
		"4.000\t200\t96\t-\tSTALE\t2048\t0.000\t-\t/stream/index.m3u8",
		"4.010\t200\t96\t-\tUPDATING\t2048\t0.000\t-\t/stream/index.m3u8",
		// The origin failing: the update fails, stale is kept.
		"8.000\t200\t0\t503\tSTALE\t2446\t0.051\t0.051\t/stream/index.m3u8",
		// A retry on a closed keep-alive connection, then an error served.
		"9.000\t200\t96\t502, 200\tMISS\t4194304\t0.2\t0.000, 0.2\t/stream/segment-1.ts",
		"9.500\t502\t96\t502\tMISS\t157\t0.001\t0.001\t/stream/segment-2.ts?x=1",
		"9.600\t400\t0\t-\t-\t0\t0.000\t-\t-",
		"not a log line",
	}
	c := map[string]float64{}
	countNGINXLog(c, []byte(strings.Join(lines, "\n")+"\n"))
	want := map[string]float64{
		"requests": 7, "background_updates": 2, "upstream_requests": 5, "upstream_5xx": 2,
		"responses_5xx": 1, "cache_HIT": 1, "cache_MISS": 3, "cache_STALE": 1, "cache_UPDATING": 1,
		"log_malformed": 1,
	}
	if fmt.Sprint(c) != fmt.Sprint(want) {
		t.Errorf("counts:\n got %v\nwant %v", c, want)
	}
}

func TestNGINXReadCountersIncremental(t *testing.T) {
	work := t.TempDir()
	log := filepath.Join(work, nginxAccessLog)
	hit := "1.100\t200\t96\t-\tHIT\t2048\t0.000\t-\t/stream/index.m3u8\n"
	miss := "1.000\t200\t96\t200\tMISS\t2048\t0.051\t0.051\t/stream/index.m3u8\n"
	if err := os.WriteFile(log, []byte(miss+hit+hit[:10]), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := Config{WorkDir: work}
	ctx := context.Background()
	read := func() map[string]float64 {
		t.Helper()
		m, err := NGINX{}.ReadCounters(ctx, LocalExec(cfg.WorkDir), cfg, "nginx")
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	m := read()
	if m["requests"] != 2 || m["cache_HIT"] != 1 || m["upstream_requests"] != 1 {
		t.Fatalf("first read %v: want 2 requests, 1 hit, 1 upstream (the unfinished line later)", m)
	}
	f, err := os.OpenFile(log, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(hit[10:] + hit)
	f.Close()
	if m := read(); m["requests"] != 4 || m["cache_HIT"] != 3 {
		t.Fatalf("second read %v: want 4 requests, 3 hits", m)
	}
	// A new log at the same path (another instance) counts from zero.
	os.Remove(log)
	os.WriteFile(log, []byte(hit), 0o644)
	if m := read(); m["requests"] != 1 {
		t.Fatalf("after a new log %v: want 1 request", m)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := (NGINX{}).ReadCounters(cancelled, LocalExec(cfg.WorkDir), cfg, "nginx"); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v", err)
	}
}

// needNGINX finds nginx, or skips (fails under CI=true).
func needNGINX(t *testing.T) string {
	t.Helper()
	bin, err := FindBinary(NGINX{}, "")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true and %v", err)
		}
		t.Skip("nginx not installed (apt-get install nginx-light)")
	}
	return bin
}

func TestNGINXCheckAcceptsGolden(t *testing.T) {
	bin := needNGINX(t)
	for _, c := range nginxCases() {
		t.Run(c.name, func(t *testing.T) {
			if c.policy.Purge != "" {
				needPurgeModule(t)
			}
			dir := t.TempDir()
			cfg := nginxGoldenConfig(c.policy)
			cfg.WorkDir, cfg.CacheDir = filepath.Join(dir, "work"), filepath.Join(dir, "cache")
			files, err := NGINX{}.Render(cfg)
			if err != nil {
				t.Fatal(err)
			}
			os.Mkdir(cfg.WorkDir, 0o755)
			if err := os.WriteFile(filepath.Join(cfg.WorkDir, NGINXConf), files[NGINXConf], 0o644); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if err := (NGINX{}).Check(ctx, LocalExec(cfg.WorkDir), cfg, bin); err != nil {
				t.Fatal(err)
			}
		})
	}
	t.Run("rejects", func(t *testing.T) {
		cfg := Config{WorkDir: t.TempDir()}
		os.WriteFile(filepath.Join(cfg.WorkDir, NGINXConf), []byte("daemon off;\nevents {}\nhttp { bogus_directive on; }\n"), 0o644)
		err := NGINX{}.Check(context.Background(), LocalExec(cfg.WorkDir), cfg, bin)
		if err == nil || !strings.Contains(err.Error(), "bogus_directive") {
			t.Fatalf("Check: %v, want nginx's complaint about bogus_directive", err)
		}
	})
}

func TestNGINXVersion(t *testing.T) {
	bin := needNGINX(t)
	v, err := NGINX{}.Version(context.Background(), LocalExec(""), bin)
	if err != nil {
		t.Fatal(err)
	}
	if n, _, _ := strings.Cut(v, "."); n == "" || strings.Trim(n, "0123456789") != "" {
		t.Fatalf("version %q: want a dotted number", v)
	}
	t.Logf("nginx %s", v)
}

// nginxUp is an origin and an NGINX in front of it.
type nginxUp struct {
	o    *origin.Origin
	srv  *origin.Server
	inst *processEngine
	cl   *http.Client
}

func startNGINX(t *testing.T, p Policy, oc origin.Config) *nginxUp {
	t.Helper()
	needNGINX(t)
	o, err := origin.New(oc)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := origin.Start(o, "127.0.0.1:0", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	inst, err := StartLocal(ctx, NGINX{}, LocalSpec{Policy: p, OriginURL: "http://" + srv.DataAddr()})
	if inst != nil {
		t.Cleanup(func() { inst.Stop(context.Background()) })
	}
	if err != nil {
		t.Fatal(err)
	}
	tr := &http.Transport{MaxIdleConnsPerHost: 100}
	t.Cleanup(tr.CloseIdleConnections)
	return &nginxUp{o: o, srv: srv, inst: inst.(*processEngine), cl: &http.Client{Transport: tr, Timeout: 30 * time.Second}}
}

type nginxAnswer struct {
	status int
	h      http.Header
	body   []byte
	ttfb   time.Duration
}

func (u *nginxUp) get(t *testing.T, path string, hdr ...string) nginxAnswer {
	t.Helper()
	a, err := u.fetch(path, hdr...)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func (u *nginxUp) fetch(path string, hdr ...string) (nginxAnswer, error) {
	req, _ := http.NewRequest("GET", u.inst.URL()+path, nil)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	start := time.Now()
	resp, err := u.cl.Do(req)
	if err != nil {
		return nginxAnswer{}, err
	}
	defer resp.Body.Close()
	a := nginxAnswer{status: resp.StatusCode, h: resp.Header, ttfb: time.Since(start)}
	a.body, err = io.ReadAll(resp.Body)
	return a, err
}

func (u *nginxUp) fetches(uri string) int64 { return u.o.Stats().Objects[uri].Fetches }

func (u *nginxUp) counters(t *testing.T) map[string]float64 {
	t.Helper()
	m, err := u.inst.Counters(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return m
}

var nginxCRCTable = crc32.MakeTable(crc32.Castagnoli)

// nginxCheckWhole checks an answer carries the whole object its checksum names.
func nginxCheckWhole(t *testing.T, what string, a nginxAnswer, size int) {
	t.Helper()
	if a.status != 200 {
		t.Fatalf("%s: status %d, want 200", what, a.status)
	}
	if len(a.body) != size {
		t.Fatalf("%s: %d bytes, want %d", what, len(a.body), size)
	}
	if got, want := fmt.Sprintf("%08x", crc32.Checksum(a.body, nginxCRCTable)), a.h.Get(origin.ChecksumHeader); got != want {
		t.Fatalf("%s: body checksum %s, header says %q", what, got, want)
	}
}

func TestNGINXServes(t *testing.T) {
	const segSize = 1 << 20
	// A first-byte delay long enough for 50 requests to meet on one miss.
	u := startNGINX(t, DefaultPolicy(), origin.Config{SegmentSize: segSize, FirstByteDelay: 300 * time.Millisecond,
		TransferRate: origin.Unlimited})
	oc := u.o.Config()

	t.Run("playlist", func(t *testing.T) {
		a := u.get(t, origin.ManifestPath)
		nginxCheckWhole(t, "first", a, oc.ManifestSize)
		if x := a.h.Get("X-Cache"); x != "MISS" {
			t.Errorf("first answer X-Cache %q, want MISS", x)
		}
		if ct := a.h.Get("Content-Type"); ct != "application/vnd.apple.mpegurl" {
			t.Errorf("Content-Type %q", ct)
		}
		b := u.get(t, origin.ManifestPath)
		nginxCheckWhole(t, "second", b, oc.ManifestSize)
		if x := b.h.Get("X-Cache"); x != "HIT" {
			t.Errorf("second answer X-Cache %q, want HIT", x)
		}
		if b.h.Get(origin.GeneratedHeader) != a.h.Get(origin.GeneratedHeader) {
			t.Errorf("the hit carries another copy's stamp")
		}
		if n := u.fetches(origin.ManifestPath); n != 1 {
			t.Errorf("origin fetches %d, want 1", n)
		}
	})

	seg := origin.SegmentPath(7)
	want := make([]byte, segSize)
	origin.SegmentBytes(oc.Seed, 7, 0, want)
	t.Run("segment", func(t *testing.T) {
		a := u.get(t, seg)
		nginxCheckWhole(t, "first", a, segSize)
		if !bytes.Equal(a.body, want) {
			t.Fatal("segment bytes differ from the origin's")
		}
		if x := a.h.Get("X-Cache"); x != "MISS" {
			t.Errorf("first answer X-Cache %q, want MISS", x)
		}
		b := u.get(t, seg)
		if !bytes.Equal(b.body, want) || b.h.Get("X-Cache") != "HIT" {
			t.Errorf("second answer: X-Cache %q, bytes equal %v; want a HIT with the same bytes", b.h.Get("X-Cache"), bytes.Equal(b.body, want))
		}
	})

	t.Run("range on a cached segment", func(t *testing.T) {
		for _, r := range [][2]int{{0, 65535}, {300000, 365535}} {
			a := u.get(t, seg, "Range", fmt.Sprintf("bytes=%d-%d", r[0], r[1]))
			if a.status != 206 {
				t.Fatalf("Range %v: status %d, want 206", r, a.status)
			}
			if cr, w := a.h.Get("Content-Range"), fmt.Sprintf("bytes %d-%d/%d", r[0], r[1], segSize); cr != w {
				t.Errorf("Content-Range %q, want %q", cr, w)
			}
			if !bytes.Equal(a.body, want[r[0]:r[1]+1]) {
				t.Errorf("Range %v: wrong bytes (%d)", r, len(a.body))
			}
			if x := a.h.Get("X-Cache"); x != "HIT" {
				t.Errorf("Range %v: X-Cache %q, want HIT", r, x)
			}
		}
		if n := u.fetches(seg); n != 1 {
			t.Errorf("origin fetches of %s: %d, want 1 (ranges served from the cache)", seg, n)
		}
	})

	t.Run("range on a cold segment fetches the whole object", func(t *testing.T) {
		cold := origin.SegmentPath(8)
		a := u.get(t, cold, "Range", "bytes=0-65535")
		w := make([]byte, 65536)
		origin.SegmentBytes(oc.Seed, 8, 0, w)
		if a.status != 206 || !bytes.Equal(a.body, w) {
			t.Fatalf("status %d, %d bytes: want 206 and the first 64 KiB", a.status, len(a.body))
		}
		b := u.get(t, cold)
		nginxCheckWhole(t, "full GET after the range", b, segSize)
		if x := b.h.Get("X-Cache"); x != "HIT" {
			t.Errorf("full GET after a range miss: X-Cache %q, want HIT (the miss cached the whole object)", x)
		}
		if n := u.fetches(cold); n != 1 {
			t.Errorf("origin fetches %d, want 1", n)
		}
	})

	t.Run("50 concurrent misses make one fetch", func(t *testing.T) {
		cold := origin.SegmentPath(9)
		var wg sync.WaitGroup
		answers := make([]nginxAnswer, 50)
		errs := make([]error, 50)
		start := make(chan struct{})
		for i := range answers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				answers[i], errs[i] = u.fetch(cold)
			}()
		}
		close(start)
		wg.Wait()
		xc := map[string]int{}
		for i, a := range answers {
			if errs[i] != nil {
				t.Fatal(errs[i])
			}
			nginxCheckWhole(t, "answer "+strconv.Itoa(i), a, segSize)
			xc[a.h.Get("X-Cache")]++
		}
		if n := u.fetches(cold); n != 1 {
			t.Errorf("origin fetches %d, want 1", n)
		}
		t.Logf("X-Cache of the 50: %v", xc)
	})

	t.Run("counters", func(t *testing.T) {
		m := u.counters(t)
		st := u.o.Stats()
		if d := m["upstream_requests"] - float64(st.Fetches); d < -1 || d > 1 {
			t.Errorf("upstream_requests %v, origin fetches %d: want them within one", m["upstream_requests"], st.Fetches)
		}
		if m["requests"] != 2+2+2+2+50 {
			t.Errorf("requests %v, want 58", m["requests"])
		}
		if m["cache_MISS"] < 4 || m["cache_HIT"] < 5 || m["log_malformed"] != 0 {
			t.Errorf("counters %v: want at least 4 misses and 5 hits, no malformed line", m)
		}
		t.Logf("counters %v; origin fetches %d", m, st.Fetches)
	})

	t.Run("stop", func(t *testing.T) { checkNGINXStop(t, u.inst) })
}

// checkNGINXStop stops inst and checks its master, its workers and its
// directories are gone.
func checkNGINXStop(t *testing.T, li *processEngine) {
	t.Helper()
	master := li.pg.PGID()
	kids := nginxChildPIDs(master)
	if len(kids) == 0 {
		t.Fatalf("no worker under nginx master %d", master)
	}
	if err := li.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for _, pid := range append([]int{master}, kids...) {
		for nginxAlive(pid) {
			if time.Now().After(deadline) {
				t.Fatalf("nginx process %d still running after Stop", pid)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	for _, d := range []string{li.work, li.cache} {
		if _, err := os.Stat(d); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s left behind (%v)", d, err)
		}
	}
	if err := li.Stop(context.Background()); err != nil {
		t.Errorf("second Stop: %v", err)
	}
}

// nginxChildPIDs lists the processes whose parent is pid.
func nginxChildPIDs(pid int) []int {
	ents, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range ents {
		n, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid …; comm may hold spaces and parentheses.
		s := string(b)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(f) > 1 && f[1] == strconv.Itoa(pid) {
			out = append(out, n)
		}
	}
	return out
}

// nginxAlive reports whether pid exists and is not a zombie.
func nginxAlive(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return false
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	return len(f) > 0 && f[0] != "Z"
}

func TestNGINXServesStale(t *testing.T) {
	// The origin's first byte takes longer than the policy's connect timeout
	// but less than its read timeout (1s), so a background update is slow and
	// requests meet it.
	const delay = 600 * time.Millisecond
	p := nginxFlapPolicy()
	u := startNGINX(t, p, origin.Config{FirstByteDelay: delay, TransferRate: origin.Unlimited})
	uri := origin.ManifestPath

	first := u.get(t, uri)
	if first.status != 200 || first.h.Get("X-Cache") != "MISS" {
		t.Fatalf("first answer %d X-Cache %q", first.status, first.h.Get("X-Cache"))
	}
	stamp := first.h.Get(origin.GeneratedHeader)
	u.o.SetMode(origin.Fail5xx)

	// NGINX keeps validity in whole seconds (valid until the end of the
	// second TTL after the fetch), so the copy expires 2 to 3 s later.
	var stale nginxAnswer
	for deadline := time.Now().Add(p.ManifestTTL + 3*time.Second); ; {
		a := u.get(t, uri)
		if a.status != 200 || a.h.Get(origin.GeneratedHeader) != stamp {
			t.Fatalf("while failing: status %d, stamp %s; want 200 with the stale copy's stamp %s", a.status, a.h.Get(origin.GeneratedHeader), stamp)
		}
		if x := a.h.Get("X-Cache"); x != "HIT" {
			if x != "STALE" {
				t.Fatalf("first answer after expiry: X-Cache %q, want STALE", x)
			}
			stale = a
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("still a HIT %v after a %v TTL", time.Since(deadline.Add(-p.ManifestTTL-3*time.Second)), p.ManifestTTL)
		}
		time.Sleep(100 * time.Millisecond)
	}
	// The stale answer does not wait for its background update. With
	// tcp_nopush on it would: corked until the update ends, or for the
	// kernel's 200 ms.
	t.Logf("stale answer in %v", stale.ttfb)
	if stale.ttfb > 100*time.Millisecond {
		t.Errorf("the stale answer took %v: it waited for its background update (%v at the origin)", stale.ttfb, delay)
	}

	// NGINX 1.22 finalizes a request only once its background update has
	// ended, so the next request on the stale answer's connection waits for
	// the origin (nginx trac #1723). Shown, not asserted.
	next := u.get(t, uri)
	t.Logf("the next request on that connection: %v, X-Cache %s", next.ttfb, next.h.Get("X-Cache"))

	// Errors are passed on, never cached: a cold object while the origin
	// fails is a 503 every time, and the header is there too ("always").
	cold := origin.SegmentPath(3)
	for i := range 2 {
		a := u.get(t, cold)
		if a.status != 503 || a.h.Get("X-Cache") != "MISS" {
			t.Fatalf("cold object while failing, answer %d: status %d X-Cache %q; want 503 MISS", i+1, a.status, a.h.Get("X-Cache"))
		}
	}
	if n := u.o.Stats().Objects[cold].Failed; n != 2 {
		t.Errorf("origin answered %s with 503 %d times, want 2: was the error cached?", cold, n)
	}

	// While an update waits for the origin's 503, other clients get UPDATING.
	xc := map[string]int{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for range 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			a, err := u.fetch(uri)
			mu.Lock()
			defer mu.Unlock()
			if err != nil || a.status != 200 || a.h.Get(origin.GeneratedHeader) != stamp {
				xc[fmt.Sprintf("bad: %v %d", err, a.status)]++
				return
			}
			xc[a.h.Get("X-Cache")]++
		}()
	}
	wg.Wait()
	for k := range xc {
		if k != "STALE" && k != "UPDATING" {
			t.Errorf("concurrent answers while failing: %v; want only STALE and UPDATING with the stale stamp", xc)
		}
	}
	if xc["UPDATING"] == 0 {
		t.Errorf("concurrent answers while failing: %v; want some UPDATING", xc)
	}

	// Let the failed updates end, then compare the counts.
	time.Sleep(delay + 200*time.Millisecond)
	m := u.counters(t)
	st := u.o.Stats()
	if m["cache_STALE"] < 1 || m["background_updates"] < 1 || m["upstream_5xx"] < 3 || m["responses_5xx"] != 2 {
		t.Errorf("counters %v: want stale answers, failed background updates and only the cold object's two 5xx served", m)
	}
	if d := m["upstream_requests"] - float64(st.Fetches+st.Failed); d < -1 || d > 1 {
		t.Errorf("upstream_requests %v; origin fetches %d + failed %d: want them within one", m["upstream_requests"], st.Fetches, st.Failed)
	}
	t.Logf("counters %v; origin fetches %d, failed %d, health %+v", m, st.Fetches, st.Failed, st.Health)

	// Recovery: the next update brings a fresh copy.
	u.o.SetMode(origin.Healthy)
	for deadline := time.Now().Add(5 * time.Second); ; {
		a := u.get(t, uri)
		if a.status == 200 && a.h.Get(origin.GeneratedHeader) != stamp {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no fresh copy 5s after the origin recovered")
		}
		time.Sleep(100 * time.Millisecond)
	}
	checkNGINXStop(t, u.inst)
}

// Every worker buffers its own log; a read right after the requests still
// counts them all.
func TestNGINXCountsExactWithTwoWorkers(t *testing.T) {
	if runtime.NumCPU() < 2 {
		t.Skip("needs 2 CPUs")
	}
	needNGINX(t)
	o, err := origin.New(origin.Config{FirstByteDelay: origin.NoDelay, TransferRate: origin.Unlimited})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := origin.Start(o, "127.0.0.1:0", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	inst, err := StartLocal(ctx, NGINX{}, LocalSpec{Policy: DefaultPolicy(), OriginURL: "http://" + srv.DataAddr(), CPUs: []int{0, 1}})
	if inst != nil {
		defer inst.Stop(context.WithoutCancel(ctx))
	}
	if err != nil {
		t.Fatal(err)
	}
	li := inst.(*processEngine)
	if n := len(nginxChildPIDs(li.pg.PGID())); n < 2 {
		t.Fatalf("%d processes under the master, want 2 workers and the cache processes", n)
	}
	before, err := li.Counters(ctx)
	if err != nil {
		t.Fatal(err)
	}
	const conns, each = 8, 50
	var wg sync.WaitGroup
	var failed atomic.Int64
	for range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cl := &http.Client{Transport: &http.Transport{}, Timeout: 10 * time.Second}
			defer cl.CloseIdleConnections()
			for range each {
				resp, err := cl.Get(inst.URL() + origin.MasterPath)
				if err != nil {
					failed.Add(1)
					continue
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		}()
	}
	wg.Wait()
	if failed.Load() > 0 {
		t.Fatalf("%d requests failed", failed.Load())
	}
	after, err := li.Counters(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if d := after["requests"] - before["requests"]; d != conns*each {
		t.Errorf("requests counted %v, sent %d", d, conns*each)
	}
	if d, f := after["upstream_requests"]-before["upstream_requests"], o.Stats().Fetches; d != 1 || f != 1 {
		t.Errorf("upstream_requests %v, origin fetches %d: want 1 and 1", d, f)
	}
}
