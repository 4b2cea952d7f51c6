package engines

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/bits"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"text/template"
	"time"

	"github.com/hlsbench/hlsbench/engines/launch"
)

// Varnish is Varnish Cache as Debian bookworm packages it (7.1): varnishd
// with the VCL rendered from the policy, a RAM store and its own counters.
type Varnish struct{}

// Vinyl is Vinyl Cache, the open-source Varnish Cache project under its new
// name (8.0 onwards): vinyld runs the same VCL as varnishd ("VCL needs
// changes only in rare cases"); vinylstat reads its counters.
type Vinyl struct{}

// vclFile is the rendered VCL, relative to the work directory.
const vclFile = "default.vcl"

// Thread pools. Varnish serves every active client connection and every
// backend fetch on a worker thread of its own; threads beyond the minimum
// are created on demand, one after another, and a request that finds none
// queues (and beyond thread_queue_limit is dropped). So the minimum is raised
// to cover a whole burst: a 200-client miss storm, its fetch and the
// connections of the steady workloads never wait for a thread to be
// created. Two pools is Varnish's default (its documentation only warns
// against more than one pool per CPU); the maximum is Varnish's default too
// (the reference runner lowered it to 200).
const (
	varnishThreadPools   = 2
	varnishThreadPoolMin = 200 // per pool
	varnishThreadPoolMax = 5000
)

// varnishStopTimeout: a Varnish 9 manager here ignored SIGTERM for over 8 s.
const varnishStopTimeout = 10 * time.Second

// A varnishFamily is what differs between Varnish and Vinyl: binary names.
type varnishFamily struct {
	name   string // engine name, also the -n directory under WorkDir
	daemon string // varnishd, vinyld
	stat   string // varnishstat, vinylstat
}

var (
	varnishNames = varnishFamily{name: "varnish", daemon: "varnishd", stat: "varnishstat"}
	vinylNames   = varnishFamily{name: "vinyl", daemon: "vinyld", stat: "vinylstat"}
)

func (Varnish) Name() string                     { return varnishNames.name }
func (Varnish) Binary() string                   { return varnishNames.daemon }
func (Varnish) Render(cfg Config) (Files, error) { return renderVCL(cfg) }
func (Varnish) Launch(cfg Config, binary string) LaunchSpec {
	return varnishNames.launch(cfg, binary)
}
func (Varnish) Version(ctx context.Context, run Exec, binary string) (string, error) {
	return varnishNames.version(ctx, run, binary)
}
func (Varnish) Check(ctx context.Context, run Exec, cfg Config, binary string) error {
	return varnishNames.check(ctx, run, cfg, binary)
}
func (Varnish) ReadCounters(ctx context.Context, run Exec, cfg Config, binary string) (map[string]float64, error) {
	return varnishNames.readCounters(ctx, run, cfg, binary)
}

// InstallHint says how to get varnishd.
// UpstreamCounter is varnishstat's count of backend requests.
func (Varnish) DropGroup(binary string, own *UserConfig) string {
	return varnishNames.DropGroup(binary, own)
}
func (Vinyl) DropGroup(binary string, own *UserConfig) string {
	return vinylNames.DropGroup(binary, own)
}
func (Varnish) UpstreamCounter() string { return "MAIN.backend_req" }
func (Vinyl) UpstreamCounter() string   { return "MAIN.backend_req" }

func (Varnish) InstallHint() string {
	return "install Debian's package (apt-get install varnish), or give the path of its varnishd"
}

func (Vinyl) Name() string   { return vinylNames.name }
func (Vinyl) Binary() string { return vinylNames.daemon }

// Render renders the same VCL as Varnish's.
func (Vinyl) Render(cfg Config) (Files, error) { return renderVCL(cfg) }
func (Vinyl) Launch(cfg Config, binary string) LaunchSpec {
	return vinylNames.launch(cfg, binary)
}
func (Vinyl) Version(ctx context.Context, run Exec, binary string) (string, error) {
	return vinylNames.version(ctx, run, binary)
}
func (Vinyl) Check(ctx context.Context, run Exec, cfg Config, binary string) error {
	return vinylNames.check(ctx, run, cfg, binary)
}
func (Vinyl) ReadCounters(ctx context.Context, run Exec, cfg Config, binary string) (map[string]float64, error) {
	return vinylNames.readCounters(ctx, run, cfg, binary)
}

// InstallHint says how to get vinyld.
func (Vinyl) InstallHint() string {
	return "Vinyl Cache is not packaged in Debian bookworm; build it from the project's source release " +
		"(https://vinyl-cache.org/) or install a newer distribution's vinyl-cache package, " +
		"then put vinyld on PATH or give the path of the vinyld binary"
}

// launch is the command line: the manager in the foreground (-F), so it
// stays our child and Stop's SIGTERM reaches it and, through it, the cache
// process; a private state directory (-n) that varnishstat and varnishadm
// find with the same -n; the RAM store sized by the policy. As root, varnishd
// keeps its default jail and drops privileges to the package's users
// (varnish, vcache): the work directory is their group's (StartLocal makes
// it so) and varnishd creates its -n directory with the owners it needs, so
// nothing runs as root that a packaged varnishd would not run as root.
// Grace and keep are set per response by the VCL, so default_grace and
// default_keep do not matter; nor do CPUs: Varnish's threads are not per core.
func (f varnishFamily) launch(cfg Config, binary string) LaunchSpec {
	args := append([]string{"-F"}, jailArgs(binary)...)
	switch cfg.Topology {
	case TopologyTLS:
		args = append(args, "-A", filepath.Join(cfg.WorkDir, varnishTLSFile))
	case TopologyProxyV2:
		args = append(args, "-a", cfg.ProxyListen+",PROXY")
	}
	args = append(args,
		"-n", f.stateDir(cfg),
		"-a", cfg.Listen,
		"-f", filepath.Join(cfg.WorkDir, vclFile),
		"-s", "malloc,"+varnishSize(cfg.Policy.StoreBytes),
		"-p", "thread_pools="+strconv.Itoa(varnishThreadPools),
		"-p", "thread_pool_min="+strconv.Itoa(varnishThreadPoolMin),
		// Keep idle client connections as long as NGINX's keepalive_timeout
		// (the default 5 s would make Varnish's clients reconnect after a
		// pause between passes, and only Varnish's).
		"-p", "timeout_idle=300",
		"-p", "thread_pool_max="+strconv.Itoa(varnishThreadPoolMax),
	)
	return LaunchSpec{Binary: binary, Args: args, StopTimeout: varnishStopTimeout}
}

// jailArgs: varnishd started as root drops privileges to the varnish user
// (its default "unix" jail), which must reach the binary's prefix: the
// VMODs and the compiled VCL are loaded as that user. A build in a
// directory only root can enter (root's ~/.cache, where hlsbench engines
// build puts it), or a host with no varnish user, runs with -j none, as
// root throughout: no figure depends on the jail.
func jailArgs(binary string) []string {
	if os.Geteuid() != 0 || !filepath.IsAbs(binary) {
		return nil // not root: no privileges to drop; a name on PATH is the package's
	}
	if _, err := user.Lookup("varnish"); err != nil {
		return []string{"-j", "none"}
	}
	for dir := filepath.Dir(binary); ; dir = filepath.Dir(dir) {
		if st, err := os.Stat(dir); err != nil || st.Mode().Perm()&0o001 == 0 {
			return []string{"-j", "none"}
		}
		if dir == "/" {
			return nil
		}
	}
}

// DropGroup: started as root in its default jail, varnishd compiles the
// VCL as the varnish user and runs the cache process as vcache, both in the
// varnish user's group.
func (f varnishFamily) DropGroup(binary string, _ *UserConfig) string {
	if len(jailArgs(binary)) > 0 {
		return ""
	}
	return primaryGroup("varnish")
}

// stateDir is the instance's -n directory.
func (f varnishFamily) stateDir(cfg Config) string { return filepath.Join(cfg.WorkDir, f.name) }

// varnishSize writes a byte count the way varnishd reads it.
func varnishSize(n int64) string {
	for _, u := range []struct {
		suffix string
		size   int64
	}{{"G", 1 << 30}, {"M", 1 << 20}, {"k", 1 << 10}} {
		if n >= u.size && n%u.size == 0 {
			return strconv.FormatInt(n/u.size, 10) + u.suffix
		}
	}
	return strconv.FormatInt(n, 10)
}

var varnishVersionRE = regexp.MustCompile(`\d+\.\d+(?:\.\d+)?`)

// version reads `varnishd -V` (on stderr): "varnishd (varnish-7.1.1
// revision 7cee1c5…)" gives "7.1.1".
func (f varnishFamily) version(ctx context.Context, run Exec, binary string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	out, err := run(ctx, binary, "-V")
	if err != nil {
		return "", fmt.Errorf("%s -V: %w: %s", binary, err, out.Text())
	}
	first, _, _ := strings.Cut(out.Text(), "\n")
	if v := varnishVersionRE.FindString(first); v != "" {
		return v, nil
	}
	// A build of a development tree: "varnishd (varnish-trunk revision
	// NOGIT)" from a tarball, with the commit from a git checkout.
	if m := varnishBranchRE.FindStringSubmatch(first); m != nil {
		if m[2] != "NOGIT" && len(m[2]) >= 9 {
			return m[1] + "-" + m[2][:9], nil
		}
		return m[1], nil
	}
	return "", fmt.Errorf("%s -V: no version in %q", binary, first)
}

var varnishBranchRE = regexp.MustCompile(`\((?:varnish|vinyl)[a-z-]*?-([A-Za-z][\w.]*) revision (\w+)\)`)

// check compiles the rendered VCL with the engine itself (-C) in a scratch
// state directory, which varnishd creates and removes. On success varnishd
// prints the generated C on stderr; on failure, the compiler's message.
func (f varnishFamily) check(ctx context.Context, run Exec, cfg Config, binary string) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	scratch := filepath.Join(cfg.WorkDir, f.name+"-check")
	defer os.RemoveAll(scratch)
	vcl := filepath.Join(cfg.WorkDir, vclFile)
	argv := append(append([]string{binary}, jailArgs(binary)...), "-C", "-n", scratch, "-f", vcl)
	if out, err := run(ctx, argv...); err != nil {
		return fmt.Errorf("%s -C -f %s: %w\n%s", f.daemon, vcl, err, launch.LastLines(strings.TrimSpace(string(out.Stderr)), 40))
	}
	return nil
}

// readCounters runs `varnishstat -1 -j` on the instance's state directory
// and returns its MAIN, SMA (storage) and VBE (backend) counters by name,
// e.g. "MAIN.cache_hit". The backend's probe bitmap ("VBE.boot.origin.happy",
// 64 bits that a float64 would round) is replaced by "….healthy": 1 while
// enough of the last window of probes succeeded, else 0.
func (f varnishFamily) readCounters(ctx context.Context, run Exec, cfg Config, binary string) (map[string]float64, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	stat := f.statBinary(binary)
	out, err := run(ctx, stat, "-n", f.stateDir(cfg), "-1", "-j")
	if err != nil {
		return nil, fmt.Errorf("%s -n %s -1 -j: %w: %s", stat, f.stateDir(cfg), err, bytes.TrimSpace(out.Stderr))
	}
	m, err := parseVarnishstat(out.Stdout, cfg.Policy)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", stat, err)
	}
	return m, nil
}

// parseVarnishstat reads `varnishstat -j`: since 6.5 {"version": 1,
// "timestamp": …, "counters": {"MAIN.cache_hit": {"value": …}, …}}, before
// that the counters at the top level.
func parseVarnishstat(b []byte, p Policy) (map[string]float64, error) {
	type counter struct {
		Value json.Number `json:"value"`
	}
	var top map[string]json.RawMessage
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	if err := d.Decode(&top); err != nil {
		return nil, fmt.Errorf("read counters: %w", err)
	}
	raw := top
	if c, ok := top["counters"]; ok {
		raw = nil
		d := json.NewDecoder(bytes.NewReader(c))
		d.UseNumber()
		if err := d.Decode(&raw); err != nil {
			return nil, fmt.Errorf("read counters: %w", err)
		}
	}
	m := make(map[string]float64, len(raw))
	for name, r := range raw {
		if !strings.HasPrefix(name, "MAIN.") && !strings.HasPrefix(name, "SMA.") && !strings.HasPrefix(name, "VBE.") {
			continue
		}
		var c counter
		d := json.NewDecoder(bytes.NewReader(r))
		d.UseNumber()
		if err := d.Decode(&c); err != nil || c.Value == "" {
			continue // "timestamp" and other non-counters
		}
		if be, ok := strings.CutSuffix(name, ".happy"); ok && strings.HasPrefix(name, "VBE.") {
			if p.ProbePath == "" {
				continue // no probe: the bitmap means nothing
			}
			happy, err := strconv.ParseUint(c.Value.String(), 10, 64)
			if err != nil {
				continue
			}
			window := min(p.ProbeWindow, 64)
			good := bits.OnesCount64(happy & (^uint64(0) >> (64 - window)))
			m[be+".healthy"] = 0
			if good >= p.ProbeThreshold {
				m[be+".healthy"] = 1
			}
			continue
		}
		v, err := c.Value.Float64()
		if err != nil {
			continue
		}
		m[name] = v
	}
	if _, ok := m["MAIN.cache_hit"]; !ok {
		return nil, fmt.Errorf("read counters: no MAIN.cache_hit among %d counters", len(raw))
	}
	return m, nil
}

// statBinary finds the counters tool installed with the daemon; admBinary
// its command line, varnishadm (see toolBinary).
func (f varnishFamily) statBinary(daemon string) string { return f.toolBinary(daemon, "stat") }
func (f varnishFamily) admBinary(daemon string) string  { return f.toolBinary(daemon, "adm") }

// toolBinary finds the tool installed with the daemon, named after
// it (varnishd: varnishstat, vinyld: vinylstat, so Vinyl's adapter also
// works with --binary varnishd), else the family's own. A daemon given by
// path has its tool in its own installation: beside it or in its prefix's
// bin directory (varnishstat lives in /usr/bin, varnishd in /usr/sbin), and
// never another installation's, whose shared-memory format may differ (in a
// container the path need not exist on this host: the prefix's bin is
// taken). A daemon found by name has its tool on PATH or in the usual
// directories.
func (f varnishFamily) toolBinary(daemon, tool string) string {
	own := strings.TrimSuffix(f.stat, "stat") + tool
	names := []string{own}
	if stem, ok := strings.CutSuffix(filepath.Base(daemon), "d"); ok && stem != "" && stem+tool != own {
		names = []string{stem + tool, own}
	}
	isExec := func(p string) bool {
		st, err := os.Stat(p)
		return err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0
	}
	if filepath.IsAbs(daemon) {
		dir := filepath.Dir(daemon)
		for _, name := range names {
			for _, p := range []string{filepath.Join(dir, name), filepath.Join(filepath.Dir(dir), "bin", name)} {
				if isExec(p) {
					return p
				}
			}
		}
		return filepath.Join(filepath.Dir(dir), "bin", names[0])
	}
	for _, name := range names {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
		for _, d := range []string{"/usr/bin", "/usr/local/bin", "/usr/sbin", "/usr/local/sbin"} {
			if p := filepath.Join(d, name); isExec(p) {
				return p
			}
		}
	}
	return own
}

// renderVCL renders the policy as VCL 4.1 for Varnish 7.1 and Vinyl Cache.
// It is a pure function of cfg.
func renderVCL(cfg Config) (Files, error) {
	p := cfg.Policy
	if err := p.Validate(); err != nil {
		return nil, err
	}
	host, port, err := net.SplitHostPort(cfg.Origin)
	if err != nil || host == "" || port == "" {
		return nil, fmt.Errorf("origin %q: want host:port", cfg.Origin)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return nil, fmt.Errorf("origin %q: want a port number from 1 to 65535", cfg.Origin)
	}
	if !vclSafe(host) {
		return nil, fmt.Errorf("origin host %q: quotes, spaces and control characters cannot go into VCL", host)
	}
	if p.ProbePath != "" {
		if !strings.HasPrefix(p.ProbePath, "/") || !vclSafe(p.ProbePath) {
			return nil, fmt.Errorf("probe path %q: want an absolute path without quotes, spaces or control characters", p.ProbePath)
		}
		if p.ProbeWindow > 64 {
			return nil, fmt.Errorf("probe window %d: Varnish keeps at most 64 probes", p.ProbeWindow)
		}
	}
	v := vclValues{
		BanURL:              p.Purge == PurgeBan,
		ClientHeader:        cfg.Topology == TopologyProxyV2,
		Host:                host,
		Port:                port,
		ConnectTimeout:      vclDuration(p.ConnectTimeout),
		FirstByteTimeout:    vclDuration(p.FirstByteTimeout),
		BetweenBytesTimeout: vclDuration(p.BetweenBytesTimeout),
		Probe:               p.ProbePath != "",
		ProbePath:           p.ProbePath,
		ProbeInterval:       vclDuration(p.ProbeInterval),
		ProbeTimeout:        vclDuration(p.ProbeTimeout),
		ProbeWindow:         p.ProbeWindow,
		ProbeThreshold:      p.ProbeThreshold,
		HealthyGrace:        vclDuration(p.HealthyGrace),
		ManifestTTL:         vclDuration(p.ManifestTTL),
		SegmentTTL:          vclDuration(p.SegmentTTL),
		Grace:               vclDuration(p.Grace),
		Keep:                vclDuration(varnishKeep),
	}
	var b bytes.Buffer
	if err := vclTemplate.Execute(&b, v); err != nil {
		return nil, fmt.Errorf("render VCL: %w", err)
	}
	files := Files{vclFile: b.Bytes()}
	if cfg.Topology == TopologyTLS {
		tc, err := varnishTLSConf(cfg)
		if err != nil {
			return nil, err
		}
		files[varnishTLSFile] = tc
	}
	return files, nil
}

// varnishTLSFile is Varnish 9's TLS configuration (varnishd -A), in the
// hitch-like syntax of its vtls_cfg parser.
const varnishTLSFile = "tls.conf"

// varnishTLSConf is the TLS listener: a frontend on cfg.TLSListen serving
// the run's certificate (a PEM of the certificate and its key), TLS 1.2 and
// 1.3 as the other engines are configured; the rest are Varnish's defaults.
func varnishTLSConf(cfg Config) ([]byte, error) {
	host, port, err := net.SplitHostPort(cfg.TLSListen)
	if err != nil || !vclSafe(host) || !vclSafe(port) || !vclSafe(cfg.Certs.Combined) || cfg.Certs.Combined == "" {
		return nil, fmt.Errorf("TLS listener %q with certificate %q: want host:port and a path without quotes or spaces", cfg.TLSListen, cfg.Certs.Combined)
	}
	return fmt.Appendf(nil, `# Rendered by hlsbench: Varnish 9's own TLS listener (varnishd -A).
frontend = {
	host = "%s"
	port = "%s"
}
pem-file = "%s"
tls-protos = TLSv1.2 TLSv1.3
`, host, port, cfg.Certs.Combined), nil
}

// tlsSupport: a varnishd with native TLS (Varnish 9.0 onwards) lists -A
// in its usage; Varnish 7.1 and Vinyl Cache have none.
func (f varnishFamily) tlsSupport(ctx context.Context, run Exec, binary string) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	out, _ := run(ctx, binary, "-?") // usage exits non-zero
	if strings.Contains(out.Text(), "-A cfgfile") {
		return nil
	}
	return &NotApplicableError{Reason: "this " + filepath.Base(binary) + " has no TLS listener of its own (Varnish Cache has one from 9.0; Varnish 7.1 and Vinyl Cache have none): the proxyv2 topology puts a terminator in front"}
}

// ProxySupport: every varnishd since 4.1 takes PROXY v1 and v2 on a
// listener marked PROXY.
func (Varnish) ProxySupport(context.Context, Exec, string) error { return nil }

// ProxySupport: Vinyl Cache takes PROXY as Varnish does.
func (Vinyl) ProxySupport(context.Context, Exec, string) error { return nil }

// TLSSupport says whether this varnishd has native TLS.
func (Varnish) TLSSupport(ctx context.Context, run Exec, binary string) error {
	return varnishNames.tlsSupport(ctx, run, binary)
}

// TLSSupport says whether this Vinyl Cache daemon has native TLS.
func (Vinyl) TLSSupport(ctx context.Context, run Exec, binary string) error {
	return vinylNames.tlsSupport(ctx, run, binary)
}

// varnishKeep keeps an object past its grace for a conditional fetch: a 304
// refreshes it without sending the body again.
const varnishKeep = 10 * time.Second

// vclSafe reports whether s can go between the double quotes of a VCL
// string (which has no escapes).
func vclSafe(s string) bool {
	return s != "" && !strings.ContainsFunc(s, func(r rune) bool {
		return r <= ' ' || r == '"' || r == 0x7f
	})
}

// vclDuration writes d in the largest VCL unit that holds it exactly.
func vclDuration(d time.Duration) string {
	for _, u := range []struct {
		suffix string
		size   time.Duration
	}{{"h", time.Hour}, {"m", time.Minute}, {"s", time.Second}, {"ms", time.Millisecond}} {
		if d >= u.size && d%u.size == 0 {
			return strconv.FormatInt(int64(d/u.size), 10) + u.suffix
		}
	}
	if d == 0 {
		return "0s"
	}
	return strconv.FormatFloat(d.Seconds(), 'f', -1, 64) + "s"
}

type vclValues struct {
	// ClientHeader: topology proxyv2, answers say the client address
	// Varnish took from the PROXY header.
	ClientHeader bool
	// BanURL: policy purge "ban", every object keeps its URL in x-url so
	// the ban lurker can test bans on it without a request.
	BanURL                                                bool
	Host, Port                                            string
	ConnectTimeout, FirstByteTimeout, BetweenBytesTimeout string
	Probe                                                 bool
	ProbePath, ProbeInterval, ProbeTimeout                string
	ProbeWindow, ProbeThreshold                           int
	HealthyGrace, ManifestTTL, SegmentTTL, Grace, Keep    string
}

var vclTemplate = template.Must(template.New("vcl").Parse(`# Generated by hlsbench from a workload's cache policy. The same VCL runs
# under Varnish Cache 7.1 (varnishd) and Vinyl Cache (vinyld). Every sub
# below falls through to the built-in VCL unless it returns, and returns
# only where it has decided what the built-in rules would have.
vcl 4.1;

import std;

backend origin {
    .host = "{{.Host}}";
    .port = "{{.Port}}";
    .connect_timeout = {{.ConnectTimeout}};
    .first_byte_timeout = {{.FirstByteTimeout}};
    .between_bytes_timeout = {{.BetweenBytesTimeout}};
{{- if .Probe}}
    # The origin's health path fails while the origin fails: the probe is
    # what tells vcl_recv when the object's full grace may be used.
    .probe = {
        .url = "{{.ProbePath}}";
        .interval = {{.ProbeInterval}};
        .timeout = {{.ProbeTimeout}};
        .window = {{.ProbeWindow}};
        .threshold = {{.ProbeThreshold}};
        # Varnish's default, threshold - 1, starts the backend sick until a
        # first probe succeeds, and a sick backend is not even asked: the
        # requests of a run started at once would get 503s. Starting with
        # threshold good probes makes it healthy at once, and exactly as
        # healthy as after threshold good answers: failures then count as
        # they always do (window - threshold + 1 of them make it sick).
        .initial = {{.ProbeThreshold}};
    }
{{- end}}
}

# PURGE is accepted from loopback only.
acl purgers {
    "127.0.0.1";
    "::1";
}

sub vcl_recv {
    # hlsbench's readiness check: answered here, never sent to the origin.
    if (req.url == "/_hlsbench/ready") {
        return (synth(200, "ready"));
    }
    if (req.method == "PURGE") {
        if (client.ip !~ purgers) {
            return (synth(405, "PURGE not allowed"));
        }
        return (purge);
    }
    # Only GET and HEAD are cached; anything else goes to the origin.
    if (req.method != "GET" && req.method != "HEAD") {
        return (pass);
    }
{{- if .Probe}}
    # While the origin is healthy an expired object is served for at most
    # this long while one background fetch refreshes it; past that a request
    # waits for the fresh copy (one fetch, its waiters coalesced). While the
    # probe says sick, the object's full grace applies.
    if (std.healthy(req.backend_hint)) {
        set req.grace = {{.HealthyGrace}};
    }
{{- else}}
    # No probe: a failing origin cannot be told from a healthy one, so the
    # object's full grace always applies.
{{- end}}
    # Nothing else changes: the built-in vcl_recv follows (Host lowercased;
    # Authorization or Cookie pass), and the built-in hash is the URL, query
    # string included, and the Host.
}

sub vcl_backend_response {
    # A pass: delivered as it is, as the built-in VCL does first.
    if (bereq.uncacheable) {
        return (deliver);
    }
    # Requests waiting on this fetch are released when the headers arrive
    # and read the body as it comes.
    set beresp.do_stream = true;
{{- if .BanURL}}
    # Policy purge "ban": bans test obj.http.x-url, which the ban lurker
    # can evaluate on stored objects without a request (a req.url ban
    # waits for a lookup and keeps the ban list long).
    set beresp.http.x-url = bereq.url;
{{- end}}
    if (beresp.status >= 500) {
        # A failed background refresh: keep the stale object and its grace.
        if (bereq.is_bgfetch) {
            return (abandon);
        }
        # Varnish made this fetch conditional from a copy it still holds
        # (past req.grace, or past its grace but within keep). Delivering the
        # error would insert an object that supersedes, and so evicts, that
        # copy for good. Abandoning sends this client a 503 and keeps the
        # copy, to be served in grace once the probe marks the origin sick.
        if (bereq.http.If-None-Match || bereq.http.If-Modified-Since) {
            return (abandon);
        }
        # Nothing to protect: never cache the error. A short hit-for-miss (a
        # positive TTL and uncacheable; a zero TTL would leave the waiting
        # list to retry one request after another) lets the requests that
        # waited on this fetch go to the origin side by side, and the first
        # good answer replaces it, so coalescing resumes as soon as the origin
        # recovers. No grace or keep: it must not outlive its second.
        set beresp.ttl = 1s;
        set beresp.grace = 0s;
        set beresp.keep = 0s;
        set beresp.uncacheable = true;
        return (deliver);
    }
    if (beresp.status >= 400) {
        # Client errors (a 404 for a segment not yet published): cached for
        # at most 1s, never served stale. The built-in rules follow, so an
        # error the origin marks no-store becomes a hit-for-miss instead.
        if (beresp.ttl > 1s) {
            set beresp.ttl = 1s;
        }
        set beresp.grace = 0s;
        set beresp.keep = 0s;
    } else {
        # The policy's TTL per object class, whatever the origin's
        # Cache-Control max-age says.
        if (beresp.status == 200) {
            if (bereq.url ~ "\.m3u8(\?|$)") {
                set beresp.ttl = {{.ManifestTTL}};
            } elsif (bereq.url ~ "\.ts(\?|$)") {
                set beresp.ttl = {{.SegmentTTL}};
            }
        }
        set beresp.grace = {{.Grace}};
        # Past its grace an object is kept a little longer for a conditional
        # fetch: a 304 refreshes it without the body.
        set beresp.keep = {{.Keep}};
    }
    # The built-in rules follow: no-store, private, Set-Cookie and Vary: *
    # still make a hit-for-miss.
}

sub vcl_backend_error {
    # The origin could not be reached (refused, reset, timed out) during a
    # background refresh: keep the stale object, as for a 5xx above.
    if (bereq.is_bgfetch) {
        return (abandon);
    }
}

sub vcl_deliver {
    # MISS: this request fetched (a miss, a pass, a hit-for-miss: the object
    # has no hits). STALE: a grace hit, the object's TTL has run out
    # (obj.ttl is what is left of it). HIT: a fresh hit, requests released
    # from a coalesced fetch included. Age is Varnish's own.
    if (obj.uncacheable || obj.hits == 0) {
        set resp.http.X-Cache = "MISS";
    } elsif (obj.ttl <= 0s) {
        set resp.http.X-Cache = "STALE";
    } else {
        set resp.http.X-Cache = "HIT";
    }
{{- if .BanURL}}
    unset resp.http.x-url;
{{- end}}
{{- if .ClientHeader}}
    # Topology proxyv2: the client as the PROXY v2 header gave it.
    set resp.http.` + ClientHeader + ` = client.ip + ":" + std.port(client.ip);
{{- end}}
}

sub vcl_synth {
    # Answers Varnish makes itself: an abandoned fetch's 503, PURGE.
    set resp.http.X-Cache = "MISS";
}
`))

var (
	_ Engine        = Varnish{}
	_ Versioner     = Varnish{}
	_ Checker       = Varnish{}
	_ CounterReader = Varnish{}
	_ Installer     = Varnish{}
	_ Engine        = Vinyl{}
	_ Versioner     = Vinyl{}
	_ Checker       = Vinyl{}
	_ CounterReader = Vinyl{}
	_ Installer     = Vinyl{}
	_ TLSServer     = Vinyl{}
	_ TLSServer     = Varnish{}
	_ ProxyListener = Varnish{}
	_ ProxyListener = Vinyl{}
)

// Differences are Varnish's (METHODOLOGY.md, "what no configuration can
// make equal").
func (Varnish) Differences() []string { return varnishDifferences("Varnish") }

// Differences are Vinyl Cache's: it shares Varnish's code base.
func (Vinyl) Differences() []string {
	return append(varnishDifferences("Vinyl Cache"),
		"Vinyl Cache and Varnish Cache share a maintainer team and an ancestor commit; this measures shipped binaries and configuration only.")
}

func varnishDifferences(name string) []string {
	return []string{
		name + " releases coalesced waiters as soon as the origin's headers arrive and streams the body to all of them.",
		name + " serves stale for the policy's grace (capped at healthy_grace while its probe says the origin is healthy) and abandons a failed background fetch.",
		name + "'s origin and hit counters are varnishstat's live counters (MAIN.backend_req and the rest).",
	}
}
