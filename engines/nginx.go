package engines

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"text/template"
	"time"

	"github.com/hlsbench/hlsbench/engines/launch"
)

// NGINX is the NGINX engine (Debian bookworm's 1.22) run as a local process:
// a proxy_cache in a RAM-backed directory that imposes the policy's TTLs,
// coalesces misses with proxy_cache_lock, serves stale while it refreshes in
// the background or while the origin fails, and logs every request, and
// every upstream request, to an access log its counters are read from.
//
// What NGINX cannot be asked, and is not:
//   - An active health probe (NGINX Plus only). ProbePath and the probe
//     settings are not rendered; max_fails is ignored for a single server.
//     NGINX learns that the origin fails from the fetch that fails.
//   - Grace as a duration, and HealthyGrace: see the inactive= comment in the
//     rendered configuration.
//   - A first-byte timeout separate from the between-bytes one:
//     proxy_read_timeout is both, so it gets the longer of the two.
type NGINX struct{}

// Name is the engine's name on the command line.
func (NGINX) Name() string { return "nginx" }

// Binary is looked up on PATH and in the sbin directories.
func (NGINX) Binary() string { return "nginx" }

// InstallHint says how to get nginx.
// UpstreamCounter counts the access log's lines with an upstream status.
func (NGINX) UpstreamCounter() string { return "upstream_requests" }

func (NGINX) InstallHint() string {
	return "install it with `apt-get install nginx-light` (or nginx), or give the path of its binary"
}

// NGINXConf is the name of the rendered configuration in WorkDir.
const NGINXConf = "nginx.conf"

// Files in WorkDir that NGINX writes.
const (
	nginxAccessLog = "access.log"
	nginxErrorLog  = "error.log"
	nginxPID       = "nginx.pid"
)

// nginxLogFlush is how long a worker keeps access log lines in its buffer.
// ReadCounters waits this long, and nginxFlushMargin more, before it reads:
// every line logged before the call is then in the file. Buffering saves a
// write(2) per request (measured at ~2–3 µs of the ~30 µs a hit costs the
// worker here); the wait is paid between passes, never inside one.
const (
	nginxLogFlush    = 50 * time.Millisecond
	nginxFlushMargin = 100 * time.Millisecond
)

// Render writes nginx.conf. It is pure: paths come from cfg.
func (NGINX) Render(cfg Config) (Files, error) {
	d, err := nginxData(cfg)
	if err != nil {
		return nil, fmt.Errorf("render nginx: %w", err)
	}
	var b bytes.Buffer
	if err := nginxTemplate.Execute(&b, d); err != nil {
		return nil, fmt.Errorf("render nginx: %w", err)
	}
	return Files{NGINXConf: b.Bytes()}, nil
}

// Launch runs nginx in the foreground (daemon off is in the configuration)
// with WorkDir as its prefix. -e sends the messages NGINX writes before it
// has read its configuration to WorkDir too, not to the compiled-in path.
func (NGINX) Launch(cfg Config, binary string) LaunchSpec {
	return LaunchSpec{
		Binary:      binary,
		Args:        nginxArgs(cfg),
		StopTimeout: launch.DefaultStopTimeout,
	}
}

// TLSSupport: an nginx built with the SSL module (Debian's nginx-light is)
// says so in `nginx -V`.
func (NGINX) TLSSupport(ctx context.Context, run Exec, binary string) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	out, err := run(ctx, binary, "-V")
	if err != nil {
		return fmt.Errorf("%s -V: %w: %s", binary, err, out.Text())
	}
	if !strings.Contains(out.Text(), "--with-http_ssl_module") {
		return &NotApplicableError{Reason: "this nginx was built without the SSL module (--with-http_ssl_module)"}
	}
	return nil
}

// ProxySupport: an nginx with the realip module (Debian's nginx-light has
// it) takes the client's address from the PROXY header.
func (NGINX) ProxySupport(ctx context.Context, run Exec, binary string) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	out, err := run(ctx, binary, "-V")
	if err != nil {
		return fmt.Errorf("%s -V: %w: %s", binary, err, out.Text())
	}
	if !strings.Contains(out.Text(), "--with-http_realip_module") {
		return &NotApplicableError{Reason: "this nginx was built without the realip module (--with-http_realip_module)"}
	}
	return nil
}

// DropGroup: started as root, NGINX runs its workers as its file's user
// directive says, else as nobody in group nogroup (Debian's build; nobody
// elsewhere). The workers write the temp and cache directories.
func (NGINX) DropGroup(_ string, own *UserConfig) string {
	if own != nil && own.workerGroup != "" {
		return own.workerGroup
	}
	if _, err := user.LookupGroup("nogroup"); err == nil {
		return "nogroup"
	}
	return primaryGroup("nobody")
}

func nginxArgs(cfg Config) []string {
	args := []string{"-p", cfg.WorkDir, "-c", filepath.Join(cfg.WorkDir, NGINXConf), "-e", filepath.Join(cfg.WorkDir, nginxErrorLog)}
	if own := cfg.Own; own != nil {
		// A file of the user's own keeps its directives; those it lacks
		// that hlsbench needs (the foreground, a pid file of the
		// instance's own) are added on the command line.
		var g []string
		if own.addDaemonOff {
			g = append(g, "daemon off;")
		}
		if own.addPID {
			g = append(g, "pid "+filepath.Join(cfg.WorkDir, nginxPID)+";")
		}
		if len(g) > 0 {
			args = append(args, "-g", strings.Join(g, " "))
		}
	}
	return args
}

// Version runs `nginx -v`, which prints "nginx version: nginx/1.22.1" (and,
// in some builds, a distribution suffix) to stderr.
func (NGINX) Version(ctx context.Context, run Exec, binary string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	out, err := run(ctx, binary, "-v") // it answers on stderr
	if err != nil {
		return "", fmt.Errorf("%s -v: %w: %s", binary, err, out.Text())
	}
	v, ok := parseNGINXVersion(out.Text())
	if !ok {
		return "", fmt.Errorf("%s -v: no version in %q", binary, out.Text())
	}
	return v, nil
}

func parseNGINXVersion(out string) (string, bool) {
	_, rest, ok := strings.Cut(out, "version: ")
	if !ok {
		return "", false
	}
	f := strings.Fields(rest)
	if len(f) == 0 {
		return "", false
	}
	_, v, ok := strings.Cut(f[0], "/")
	if !ok || v == "" {
		return "", false
	}
	return v, true
}

// Check runs `nginx -t` on the files already written to cfg.WorkDir.
func (NGINX) Check(ctx context.Context, run Exec, cfg Config, binary string) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	args := append([]string{"-t", "-q"}, nginxArgs(cfg)...)
	if out, err := run(ctx, append([]string{binary}, args...)...); err != nil {
		return fmt.Errorf("%s %s: %w\n%s", binary, strings.Join(args, " "), err, out.Text())
	}
	return nil
}

// ReadCounters counts the access log (see nginxLogFormat), from the start of
// the instance, so a pass's figures are the difference of two reads:
//
//	requests             client requests (background updates excluded)
//	background_updates   background update subrequests (proxy_cache_background_update)
//	upstream_requests    requests that went to the origin, background updates included:
//	                     log lines with an upstream status
//	upstream_5xx         those whose (last) upstream status was 5xx, including the
//	                     502/504 NGINX records when it could not connect or timed out
//	responses_5xx        client requests answered 5xx
//	cache_<STATUS>       client requests by $upstream_cache_status: cache_HIT, cache_MISS,
//	                     cache_STALE, cache_UPDATING, cache_EXPIRED, …
//	log_malformed        lines that could not be read (0 unless the format changed)
//
// Workers buffer the log for nginxLogFlush; ReadCounters first waits for that
// flush, so every request that ended before the call is counted. Requests
// still under way (a background update outliving its pass) are counted by
// the next read. The log is read incrementally: a read costs what was logged
// since the last one.
func (NGINX) ReadCounters(ctx context.Context, _ Exec, cfg Config, _ string) (map[string]float64, error) {
	t := time.NewTimer(nginxLogFlush + nginxFlushMargin)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
		return nil, fmt.Errorf("read nginx counters: %w", ctx.Err())
	}
	m, err := nginxLogs.read(filepath.Join(cfg.WorkDir, nginxAccessLog))
	if err != nil {
		return nil, fmt.Errorf("read nginx counters: %w", err)
	}
	return m, nil
}

// nginxLogFormat is tab-separated: NGINX escapes control characters in
// variable values, so a tab only ever separates fields (a space would not:
// $upstream_status reads "502, 200" after a retry). $request_length is 0 for
// subrequests, which is how background updates are told from client requests.
const nginxLogFormat = `$msec\t$status\t$request_length\t$upstream_status\t$upstream_cache_status\t` +
	`$body_bytes_sent\t$request_time\t$upstream_response_time\t$request_uri`

// Fields of a log line.
const (
	nlStatus = 1 + iota
	nlRequestLength
	nlUpstreamStatus
	nlCacheStatus
	nlFields = 9
)

// nginxLogs keeps, per access log, how far it was read and the counts so far.
var nginxLogs = &nginxLogTallies{m: map[string]*nginxLogTally{}}

type nginxLogTallies struct {
	mu sync.Mutex
	m  map[string]*nginxLogTally
}

type nginxLogTally struct {
	dev, ino uint64
	off      int64
	counts   map[string]float64
}

func (l *nginxLogTallies) read(path string) (map[string]float64, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	// Forget logs whose instance is gone (its WorkDir removed).
	for p := range l.m {
		if _, err := os.Stat(p); errors.Is(err, os.ErrNotExist) {
			delete(l.m, p)
		}
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	var dev, ino uint64
	if sys, ok := st.Sys().(*syscall.Stat_t); ok {
		dev, ino = uint64(sys.Dev), sys.Ino
	}
	t := l.m[path]
	if t == nil || t.dev != dev || t.ino != ino || st.Size() < t.off {
		// A new file (another instance at the same path, or rotated): count from its start.
		t = &nginxLogTally{dev: dev, ino: ino, counts: map[string]float64{}}
		l.m[path] = t
	}
	if _, err := f.Seek(t.off, io.SeekStart); err != nil {
		return nil, err
	}
	// Only whole lines are counted; one NGINX is still writing is read again
	// next time.
	buf := make([]byte, 256<<10)
	var carry []byte
	for {
		n, err := f.Read(buf)
		if n > 0 {
			data := append(carry, buf[:n]...)
			end := bytes.LastIndexByte(data, '\n')
			if end < 0 {
				carry = data
			} else {
				countNGINXLog(t.counts, data[:end+1])
				t.off += int64(end + 1)
				carry = append([]byte(nil), data[end+1:]...)
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
	}
	out := make(map[string]float64, len(t.counts)+4)
	for _, k := range []string{"requests", "background_updates", "upstream_requests", "upstream_5xx", "responses_5xx"} {
		out[k] = 0
	}
	for k, v := range t.counts {
		out[k] = v
	}
	return out, nil
}

// countNGINXLog adds whole lines to c.
func countNGINXLog(c map[string]float64, data []byte) {
	var f [nlFields][]byte
	for len(data) > 0 {
		i := bytes.IndexByte(data, '\n')
		line := data[:i]
		data = data[i+1:]
		if len(line) == 0 {
			continue
		}
		n, rest := 0, line
		for ; n < nlFields-1; n++ {
			j := bytes.IndexByte(rest, '\t')
			if j < 0 {
				break
			}
			f[n], rest = rest[:j], rest[j+1:]
		}
		if n < nlFields-1 {
			c["log_malformed"]++
			continue
		}
		f[n] = rest
		us := f[nlUpstreamStatus]
		upstream := len(us) > 0 && us[0] != '-'
		// A subrequest reads no request of its own; a client request that
		// NGINX could not read (a 400 on an empty one) has no upstream status.
		if upstream && string(f[nlRequestLength]) == "0" {
			c["background_updates"]++
		} else {
			c["requests"]++
			if cs := f[nlCacheStatus]; len(cs) > 0 && cs[0] != '-' {
				c["cache_"+string(cs)]++
			}
			if len(f[nlStatus]) == 3 && f[nlStatus][0] == '5' {
				c["responses_5xx"]++
			}
		}
		if upstream {
			c["upstream_requests"]++
			// After a retry or a redirect it lists every attempt: "502, 200".
			last := us[bytes.LastIndexAny(us, ", :")+1:]
			if len(last) == 3 && last[0] == '5' {
				c["upstream_5xx"]++
			}
		}
	}
}

// nginxConf is what the template needs, every value already in NGINX's syntax.
type nginxConf struct {
	Work, CacheDir, Listen, Origin string
	// TLSListen, Cert and Key: the TLS listener of topology tls.
	TLSListen, Cert, Key string
	// ProxyListen: the PROXY v2 listener of topology proxyv2; ProxyFrom
	// its host when not loopback (a placed engine's terminator's address).
	ProxyListen, ProxyFrom      string
	AccessLog, ErrorLog, PID    string
	Workers                     int
	StoreBytes                  int64
	ManifestTTL, SegmentTTL     string // seconds
	Inactive                    string // seconds
	Lock                        string // "on" or "off"
	LockTimeout                 string
	ConnectTimeout, ReadTimeout string
	SendTimeout                 string
	LogFormat, LogFlush         string
	// Purge: policy purge "purge", ngx_cache_purge from PurgeModule.
	Purge       bool
	PurgeModule string
	Policy      Policy
}

func nginxData(cfg Config) (nginxConf, error) {
	p := cfg.Policy
	if err := p.Validate(); err != nil {
		return nginxConf{}, err
	}
	if cfg.CPUs < 1 {
		return nginxConf{}, fmt.Errorf("cpus %d: want at least 1 (worker_processes)", cfg.CPUs)
	}
	for _, a := range []struct{ name, v string }{{"listen", cfg.Listen}, {"origin", cfg.Origin}} {
		if _, port, err := net.SplitHostPort(a.v); err != nil || port == "" || strings.ContainsAny(a.v, " \t\n;{}\"'$") {
			return nginxConf{}, fmt.Errorf("%s address %q: want host:port", a.name, a.v)
		}
	}
	for _, d := range []struct{ name, v string }{{"work dir", cfg.WorkDir}, {"cache dir", cfg.CacheDir}} {
		if !filepath.IsAbs(d.v) || strings.ContainsAny(d.v, " \t\n;{}\"'$#\\") {
			return nginxConf{}, fmt.Errorf("%s %q: want an absolute path without spaces, quotes or any of ;{}$#\\", d.name, d.v)
		}
	}
	c := nginxConf{
		Work:       filepath.Clean(cfg.WorkDir),
		AccessLog:  filepath.Join(cfg.WorkDir, nginxAccessLog),
		ErrorLog:   filepath.Join(cfg.WorkDir, nginxErrorLog),
		PID:        filepath.Join(cfg.WorkDir, nginxPID),
		CacheDir:   filepath.Clean(cfg.CacheDir),
		Listen:     cfg.Listen,
		Origin:     cfg.Origin,
		Workers:    cfg.CPUs,
		StoreBytes: p.StoreBytes,
		Lock:       "off",
		LogFormat:  nginxLogFormat,
		LogFlush:   nginxMsec(nginxLogFlush),
		Policy:     p,
	}
	if p.Purge == PurgeObject {
		c.Purge, c.PurgeModule = true, NGINXPurgeModule
	}
	if cfg.Topology == TopologyTLS {
		for _, v := range []string{cfg.TLSListen, cfg.Certs.Cert, cfg.Certs.Key} {
			if v == "" || strings.ContainsAny(v, " \t\n;{}\"'$#\\") {
				return nginxConf{}, fmt.Errorf("TLS listener %q with %q and %q: want an address and paths without spaces, quotes or any of ;{}$#\\", cfg.TLSListen, cfg.Certs.Cert, cfg.Certs.Key)
			}
		}
		c.TLSListen, c.Cert, c.Key = cfg.TLSListen, cfg.Certs.Cert, cfg.Certs.Key
	}
	if cfg.Topology == TopologyProxyV2 {
		if _, _, err := net.SplitHostPort(cfg.ProxyListen); err != nil || strings.ContainsAny(cfg.ProxyListen, " \t\n;{}\"'$") {
			return nginxConf{}, fmt.Errorf("PROXY listener %q: want host:port", cfg.ProxyListen)
		}
		c.ProxyListen = cfg.ProxyListen
		// Placed on another host, the terminator beside it connects
		// from that host's address.
		if h, _, _ := net.SplitHostPort(cfg.ProxyListen); !net.ParseIP(h).IsLoopback() {
			c.ProxyFrom = h
		}
	}
	var err error
	// proxy_cache_valid counts whole seconds; a TTL NGINX would round is refused
	// rather than changed behind the user's back.
	if c.ManifestTTL, err = nginxSec("manifest_ttl", p.ManifestTTL); err != nil {
		return c, err
	}
	if c.SegmentTTL, err = nginxSec("segment_ttl", p.SegmentTTL); err != nil {
		return c, err
	}
	longest := max(p.ManifestTTL, p.SegmentTTL)
	c.Inactive = strconv.FormatInt(int64((longest+p.Grace+time.Second-1)/time.Second), 10) + "s"
	if p.Coalesce {
		c.Lock = "on"
	}
	for _, d := range []struct {
		name string
		v    time.Duration
		out  *string
	}{
		{"lock_timeout", p.LockTimeout, &c.LockTimeout},
		{"connect_timeout", p.ConnectTimeout, &c.ConnectTimeout},
		{"first_byte_timeout/between_bytes_timeout", max(p.FirstByteTimeout, p.BetweenBytesTimeout), &c.ReadTimeout},
		{"between_bytes_timeout", p.BetweenBytesTimeout, &c.SendTimeout},
	} {
		if d.v <= 0 {
			return c, fmt.Errorf("policy %s %v: nginx needs a timeout > 0", d.name, d.v)
		}
		*d.out = nginxMsec(d.v)
	}
	return c, nil
}

// nginxSec renders a duration NGINX reads in whole seconds.
func nginxSec(name string, d time.Duration) (string, error) {
	if d%time.Second != 0 {
		return "", fmt.Errorf("policy %s %v: nginx counts cache validity in whole seconds", name, d)
	}
	return strconv.FormatInt(int64(d/time.Second), 10) + "s", nil
}

// nginxMsec renders a duration NGINX reads in milliseconds, rounded up.
func nginxMsec(d time.Duration) string {
	if d%time.Second == 0 {
		return strconv.FormatInt(int64(d/time.Second), 10) + "s"
	}
	return strconv.FormatInt(int64((d+time.Millisecond-1)/time.Millisecond), 10) + "ms"
}

var nginxTemplate = template.Must(template.New(NGINXConf).Parse(`# Rendered by hlsbench for NGINX 1.22: every engine is asked for the same cache policy.
# Policy: manifest TTL {{.Policy.ManifestTTL}}, segment TTL {{.Policy.SegmentTTL}}, grace {{.Policy.Grace}},
# coalesce {{.Policy.Coalesce}} (lock timeout {{.Policy.LockTimeout}}), store {{.Policy.StoreBytes}} bytes.

# No "user": run by root, the workers become nobody, and NGINX itself chowns the
# cache and temp directories below to them (the work and cache directories are
# 0750 and nobody's group's); run by anyone else, it stays that user.
{{- if .Purge}}
# Policy purge "purge": Debian's ngx_cache_purge (libnginx-mod-http-cache-purge).
load_module {{.PurgeModule}};
{{- end}}
worker_processes {{.Workers}};
worker_rlimit_nofile 8192;
daemon off;
pid {{.PID}};
error_log {{.ErrorLog}} warn;

events {
    worker_connections 4096;
}

http {
    # Tab-separated; hlsbench counts requests, origin fetches (background
    # updates included: log_subrequest) and cache statuses from it. Buffered,
    # flushed every {{.LogFlush}}: hlsbench waits for the flush before it reads.
    log_format hlsbench "{{.LogFormat}}";
    access_log {{.AccessLog}} hlsbench buffer=64k flush={{.LogFlush}};
    log_subrequest on;

    client_body_temp_path {{.Work}}/client_body_temp;
    proxy_temp_path {{.Work}}/proxy_temp;
    fastcgi_temp_path {{.Work}}/fastcgi_temp;
    uwsgi_temp_path {{.Work}}/uwsgi_temp;
    scgi_temp_path {{.Work}}/scgi_temp;

    sendfile on;
    # tcp_nopush stays off: with it, a stale answer whose background update is
    # running stays corked in the kernel until the update ends (the request is
    # finalized only then), so its first byte waits for the origin. Measured.
    tcp_nopush off;
    tcp_nodelay on;
    # Load generators keep their connections for a whole run.
    keepalive_timeout 300s;
    keepalive_requests 10000000;
    keepalive_time 24h;

    # In RAM (tmpfs), like Varnish's malloc store.
    # Grace: NGINX has no grace duration. An expired object is served stale
    # (proxy_cache_use_stale) for as long as it stays in the cache, and it stays
    # until nobody asked for it for inactive= (or max_size evicts it). inactive=
    # is the longest TTL plus grace, so NGINX never drops an object Varnish would
    # still hold (fresh or in grace); but where Varnish stops serving an object
    # grace after its TTL, NGINX keeps serving it stale while it is asked for,
    # without limit. HealthyGrace has no equivalent either: a request on an
    # expired object always gets the stale copy while one update runs.
    proxy_cache_path {{.CacheDir}} levels=1:2 keys_zone=hlsbench:16m max_size={{.StoreBytes}} inactive={{.Inactive}} use_temp_path=off;

    upstream origin {
        server {{.Origin}};
        keepalive 64;
    }

    server {
        listen {{.Listen}};
{{- if .TLSListen}}
        # Topology tls: NGINX's own TLS listener, the run's certificate, TLS 1.2
        # and 1.3; session tickets (NGINX's default) let clients resume.
        listen {{.TLSListen}} ssl;
        ssl_certificate {{.Cert}};
        ssl_certificate_key {{.Key}};
        ssl_protocols TLSv1.2 TLSv1.3;
{{- end}}
{{- if .ProxyListen}}
        # Topology proxyv2: a terminator in front speaks PROXY v2 here; the
        # client address and port are taken from it (realip), and answers
        # say which they were.
        listen {{.ProxyListen}} proxy_protocol;
        set_real_ip_from 127.0.0.1;
        set_real_ip_from ::1;
{{- if .ProxyFrom}}
        set_real_ip_from {{.ProxyFrom}};
{{- end}}
        real_ip_header proxy_protocol;
        add_header ` + ClientHeader + ` $remote_addr:$remote_port always;
{{- end}}

        proxy_http_version 1.1;
        proxy_set_header Connection "";

        proxy_cache hlsbench;
        proxy_cache_key $scheme$proxy_host$request_uri;
        # Concurrent misses on one object make one origin fetch. Waiters poll the
        # lock every 500 ms at most and get the object only once it is complete;
        # past the lock timeout they fetch for themselves, uncached, so it must
        # outlast a slow whole-object fetch.
        proxy_cache_lock {{.Lock}};
        proxy_cache_lock_timeout {{.LockTimeout}};
        proxy_cache_lock_age {{.LockTimeout}};
        # Expired objects are served stale while one background subrequest
        # refreshes them, and whenever the origin fails.
        proxy_cache_use_stale error timeout updating http_500 http_502 http_503 http_504;
        proxy_cache_background_update on;
        # TTLs come from the policy, not from the origin's headers.
        proxy_ignore_headers Cache-Control Expires Set-Cookie X-Accel-Expires Vary;
        # NGINX has no first-byte timeout: proxy_read_timeout bounds every read,
        # the first included, so it gets the longer of the two.
        proxy_connect_timeout {{.ConnectTimeout}};
        proxy_read_timeout {{.ReadTimeout}};
        proxy_send_timeout {{.SendTimeout}};

        # Sent on every answer, hits and errors included.
        add_header X-Cache $upstream_cache_status always;
{{- if .Purge}}
        # PURGE removes the object of the request's own key, from loopback
        # only. ngx_cache_purge 2.3's same-location form (proxy_cache_purge
        # PURGE) crashes the worker on NGINX 1.11.6 and later (signal 11,
        # seen here with Debian's 1.22): the separate-location form is used,
        # with the cache key spelled as proxy_cache_key makes it ($proxy_host
        # is the upstream's name, "origin").
        if ($request_method = PURGE) {
            rewrite ^ /_hlsbench/purge last;
        }
        location = /_hlsbench/purge {
            allow 127.0.0.1;
            allow ::1;
            deny all;
            proxy_cache_purge hlsbench ${scheme}origin$request_uri;
        }
{{- end}}

        # Only 200 is cached (never a 5xx); other objects get the segment TTL.
        location / {
            proxy_pass http://origin;
            proxy_cache_valid 200 {{.SegmentTTL}};
        }
        location ~ \.m3u8$ {
            proxy_pass http://origin;
            proxy_cache_valid 200 {{.ManifestTTL}};
        }
        location ~ \.ts$ {
            proxy_pass http://origin;
            proxy_cache_valid 200 {{.SegmentTTL}};
        }

        # hlsbench's readiness check, answered here: it reaches neither the
        # origin nor the counters.
        location = /_hlsbench/ready {
            access_log off;
            return 200 "ready\n";
        }
    }
}
`))

var (
	_ Engine        = NGINX{}
	_ Versioner     = NGINX{}
	_ Checker       = NGINX{}
	_ CounterReader = NGINX{}
	_ Installer     = NGINX{}
)

// Differences are NGINX's (METHODOLOGY.md, "what no configuration can
// make equal").
func (NGINX) Differences() []string {
	return []string{
		"NGINX's proxy_cache_lock makes waiters poll, every 500 ms at most, and hands them the object only once it is complete: its miss-storm TTFB is about half a second by design.",
		"NGINX has no grace duration: proxy_cache_use_stale serves an expired object as long as it stays in the cache, and open-source NGINX has no active health probe, so it keeps retrying a failing origin in the background.",
		"NGINX counts TTLs in whole seconds: a 2 s TTL lasts 2–3 s.",
		"NGINX's hit and origin counts are read from its access log ($upstream_cache_status), coarser than varnishstat's live counters.",
		"Open-source NGINX has no purge: purge-stampede loads Debian's ngx_cache_purge 2.3, which removes one key per PURGE request and has no prefix ban, so NGINX's stream is invalidated with 502 requests where Varnish needs one ban.",
	}
}
