package engines

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hlsbench/hlsbench/engines/freeport"
	"github.com/hlsbench/hlsbench/origin"
)

func TestVCLBackends(t *testing.T) {
	cases := []struct {
		name, vcl string
		want      []string
		err       string
	}{
		{name: "one", vcl: `vcl 4.1;
backend default { .host = "127.0.0.1"; .port = "8081"; }`, want: []string{"127.0.0.1:8081"}},
		{name: "comments and a probe", vcl: `vcl 4.1;
# backend commented { .host = "10.0.0.1"; .port = "80"; }
// backend also { .host = "10.0.0.2"; }
/* backend block {
   .host = "10.0.0.3"; } */
backend origin {
    .host = "localhost";
    .port = "9000";
    .probe = { .url = "/health"; .interval = 1s; }
}
sub vcl_recv { set req.http.x = {"backend fake { .host = "10.0.0.4"; }"}; }`, want: []string{"127.0.0.1:9000"}},
		{name: "port in host, default port", vcl: `backend a { .host = "127.0.0.1:7000"; } backend b { .host = "::1"; }`,
			want: []string{"127.0.0.1:7000", "[::1]:80"}},
		{name: "none", vcl: `vcl 4.1; backend default none;`, want: nil},
		{name: "not loopback", vcl: `backend a { .host = "192.0.2.1"; .port = "80"; }`, err: "loopback only"},
		{name: "unix socket", vcl: `backend a { .path = "/run/origin.sock"; }`, err: "Unix socket"},
		{name: "no host", vcl: `backend a { .port = "80"; }`, err: "no .host"},
		{name: "unterminated", vcl: `backend a { .host = "127.0.0.1";`, err: "does not end"},
		{name: "bad port", vcl: `backend a { .host = "127.0.0.1"; .port = "http"; }`, err: "want a number"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := vclBackends(c.vcl)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("err %v, want one with %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if strings.Join(got, " ") != strings.Join(c.want, " ") {
				t.Errorf("backends %q, want %q", got, c.want)
			}
		})
	}
}

func TestVarnishReadOwnConfig(t *testing.T) {
	uc, err := Varnish{}.ReadOwnConfig([]byte(`vcl 4.1;
backend a { .host = "127.0.0.1"; .port = "8081"; }
backend b { .host = "127.0.0.1"; .port = "8081"; }`))
	if err != nil {
		t.Fatal(err)
	}
	if uc.Origin != "127.0.0.1:8081" || uc.Listen != "" || len(uc.Caveats) < 2 {
		t.Errorf("%+v", uc)
	}
	_, err = Varnish{}.ReadOwnConfig([]byte(`backend a { .host = "127.0.0.1"; .port = "1"; }
backend b { .host = "127.0.0.1"; .port = "2"; }`))
	if err == nil || !strings.Contains(err.Error(), "2 addresses") {
		t.Errorf("two origins: %v", err)
	}
	_, err = Varnish{}.ReadOwnConfig([]byte(`vcl 4.1; backend default none;`))
	if err == nil || !strings.Contains(err.Error(), "no backend") {
		t.Errorf("no backend: %v", err)
	}
}

func TestNGINXReadOwnConfig(t *testing.T) {
	cases := []struct {
		name, conf     string
		origin, listen string
		daemon, pid    bool // added on the command line
		err            string
	}{
		{name: "upstream", conf: `
events {}
http {
    upstream o { server 127.0.0.1:8081 max_fails=0; keepalive 8; }
    server {
        listen 127.0.0.1:8443 ssl;
        listen 8080 default_server;   # the first plaintext one
        location / { proxy_pass http://o; }
        location /x { proxy_pass http://o/x; }
    }
    server { listen 127.0.0.1:9090; location / { proxy_pass http://o; } }
}`, origin: "127.0.0.1:8081", listen: "127.0.0.1:8080", daemon: true, pid: true},
		{name: "direct, own daemon and pid", conf: `daemon off; pid /run/mine.pid;
events {}
http { server { listen [::1]:8080; location / { proxy_pass "http://[::1]:8081/"; } } }`,
			origin: "[::1]:8081", listen: "[::1]:8080"},
		{name: "daemon on", conf: `daemon on; events {} http { server { listen 80; location / { proxy_pass http://127.0.0.1:1; } } }`, err: "foreground"},
		{name: "variables", conf: `events {} http { server { listen 80; location / { proxy_pass http://$host; } } }`, err: "variables"},
		{name: "two origins", conf: `events {} http { server { listen 80; location / { proxy_pass http://127.0.0.1:1; } location /a { proxy_pass http://127.0.0.1:2; } } }`, err: "2 addresses"},
		{name: "remote origin", conf: `events {} http { server { listen 80; location / { proxy_pass http://198.51.100.7:80; } } }`, err: "loopback only"},
		{name: "https origin", conf: `events {} http { server { listen 80; location / { proxy_pass https://127.0.0.1:443; } } }`, err: "plain http"},
		{name: "no plaintext listen", conf: `events {} http { server { listen 443 ssl; location / { proxy_pass http://127.0.0.1:1; } } }`, err: "no plaintext listen"},
		{name: "no proxy_pass", conf: `events {} http { server { listen 80; } }`, err: "no proxy_pass"},
		{name: "unbalanced", conf: `events {} http { server { listen 80; }`, err: "does not end"},
		{name: "quoted semicolon", conf: `events {} http { server { listen 80; add_header X "a;b}"; location / { proxy_pass http://127.0.0.1:1; } } }`,
			origin: "127.0.0.1:1", listen: "127.0.0.1:80", daemon: true, pid: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			uc, err := NGINX{}.ReadOwnConfig([]byte(c.conf))
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("err %v, want one with %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if uc.Origin != c.origin || uc.Listen != c.listen || uc.addDaemonOff != c.daemon || uc.addPID != c.pid {
				t.Errorf("origin %s listen %s daemon %v pid %v, want %s %s %v %v", uc.Origin, uc.Listen, uc.addDaemonOff, uc.addPID, c.origin, c.listen, c.daemon, c.pid)
			}
		})
	}
}

// The -g directives hlsbench adds are only those the file lacks.
func TestNGINXArgsOwnConfig(t *testing.T) {
	cfg := Config{WorkDir: "/w", Own: &UserConfig{addDaemonOff: true, addPID: true}}
	got := strings.Join(nginxArgs(cfg), " ")
	if !strings.HasSuffix(got, "-g daemon off; pid /w/nginx.pid;") {
		t.Errorf("args %s", got)
	}
	cfg.Own = &UserConfig{}
	if got := strings.Join(nginxArgs(cfg), " "); strings.Contains(got, "-g") {
		t.Errorf("args %s", got)
	}
}

func TestLoadUserConfig(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "my.vcl")
	content := "vcl 4.1;\nbackend default { .host = \"127.0.0.1\"; .port = \"8081\"; }\n"
	os.WriteFile(p, []byte(content), 0o644)
	uc, err := LoadUserConfig(Varnish{}, p)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte(content))
	if uc.SHA256 != hex.EncodeToString(sum[:]) || string(uc.Content) != content || uc.Path != p {
		t.Errorf("%+v", uc)
	}
	rec := uc.Record()
	if rec.SHA256 != uc.SHA256 || rec.Content != content || len(rec.Caveats) == 0 {
		t.Errorf("record %+v", rec)
	}
	if _, err := LoadUserConfig(Builtin{}, p); err == nil || !strings.Contains(err.Error(), "no configuration file") {
		t.Errorf("builtin: %v", err)
	}
	if _, err := LoadUserConfig(Varnish{}, filepath.Join(dir, "missing.vcl")); err == nil {
		t.Error("a missing file read")
	}
	if _, err := LoadUserConfig(Varnish{}, dir); err == nil || !strings.Contains(err.Error(), "regular file") {
		t.Errorf("a directory: %v", err)
	}
}

// A VCL of the user's own: varnishd -C rejects a broken one; a good one
// runs as given, the origin reached where its backend points, and the
// results keep it with its digest. Its counters are read as usual.
func TestStartLocalOwnVCL(t *testing.T) {
	bin := needVarnishd(t)
	srv, addr := ownOrigin(t)
	defer srv.Close()
	host, port, _ := net.SplitHostPort(addr)
	vcl := "vcl 4.1;\n# an operator's VCL\nbackend default { .host = \"" + host + "\"; .port = \"" + port + "\"; }\n" +
		"sub vcl_deliver { set resp.http.x-own = \"yes\"; }\n"
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()

	bad := writeOwn(t, "bad.vcl", strings.Replace(vcl, "resp.http.x-own", "resp.nonsense", 1))
	buc, err := LoadUserConfig(Varnish{}, bad)
	if err != nil {
		t.Fatal(err)
	}
	if err := CheckUserConfig(ctx, Varnish{}, buc, bin); err == nil || !strings.Contains(err.Error(), "-C") {
		t.Fatalf("a broken VCL checked: %v", err)
	}

	uc, err := LoadUserConfig(Varnish{}, writeOwn(t, "my.vcl", vcl))
	if err != nil {
		t.Fatal(err)
	}
	if err := CheckUserConfig(ctx, Varnish{}, uc, bin); err != nil {
		t.Fatal(err)
	}
	inst, err := StartLocal(ctx, Varnish{}, LocalSpec{Policy: DefaultPolicy(), OriginURL: "http://" + addr, Own: uc})
	if err != nil {
		t.Fatal(err)
	}
	defer inst.Stop(context.WithoutCancel(ctx))
	checkOwnAnswers(t, inst.URL())
	if c := inst.Info().Config; c == nil || c.SHA256 != uc.SHA256 || c.Content != vcl {
		t.Errorf("recorded config %+v", c)
	}
	m, err := inst.(Counters).Counters(ctx)
	if err != nil || m["MAIN.client_req"] < 1 {
		t.Errorf("counters %v, %v", m["MAIN.client_req"], err)
	}

	_, err = StartLocal(ctx, Varnish{}, LocalSpec{Policy: DefaultPolicy(), OriginURL: "http://127.0.0.1:1", Own: uc})
	if err == nil || !strings.Contains(err.Error(), "fetches from") {
		t.Errorf("an origin elsewhere than the VCL's backend: %v", err)
	}
}

// An nginx.conf of the user's own: requests go to its listen, the -g
// directives keep it in the foreground, and no counters are claimed.
func TestStartLocalOwnNGINX(t *testing.T) {
	bin := needNGINX(t)
	srv, addr := ownOrigin(t)
	defer srv.Close()
	listen, err := freeport.Addr()
	if err != nil {
		t.Fatal(err)
	}
	parent, _ := ramDir(false)
	cache, err := os.MkdirTemp(parent, "hlsbench-test-own-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(cache)
	os.Chmod(cache, 0o777)
	conf := `worker_processes 1;
error_log ` + cache + `/error.log;
events { worker_connections 64; }
http {
    access_log off;
    proxy_temp_path ` + cache + `/temp;
    proxy_cache_path ` + cache + `/cache keys_zone=mine:1m;
    server {
        listen ` + listen + `;
        location / {
            proxy_pass http://` + addr + `;
            proxy_cache mine;
            proxy_cache_valid 200 10s;
            add_header X-Own yes;
        }
    }
}
`
	uc, err := LoadUserConfig(NGINX{}, writeOwn(t, "my.conf", conf))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	if err := CheckUserConfig(ctx, NGINX{}, uc, bin); err != nil {
		t.Fatal(err)
	}
	broken, _ := LoadUserConfig(NGINX{}, writeOwn(t, "broken.conf", strings.Replace(conf, "proxy_cache_valid", "proxy_cache_validity", 1)))
	if err := CheckUserConfig(ctx, NGINX{}, broken, bin); err == nil || !strings.Contains(err.Error(), "proxy_cache_validity") {
		t.Errorf("a broken nginx.conf checked: %v", err)
	}
	inst, err := StartLocal(ctx, NGINX{}, LocalSpec{Policy: DefaultPolicy(), OriginURL: "http://" + addr, Own: uc})
	if err != nil {
		t.Fatal(err)
	}
	defer inst.Stop(context.WithoutCancel(ctx))
	if inst.URL() != "http://"+listen {
		t.Errorf("URL %s, want its listen %s", inst.URL(), listen)
	}
	checkOwnAnswers(t, inst.URL())
	if m, err := inst.(Counters).Counters(ctx); m != nil || err != nil {
		t.Errorf("counters of a file of one's own: %v, %v", m, err)
	}
	if u := inst.(UpstreamCounter).UpstreamCounter(); u != "" {
		t.Errorf("upstream counter %q", u)
	}
	if _, err := StartLocal(ctx, NGINX{}, LocalSpec{Policy: DefaultPolicy(), OriginURL: "http://" + addr, Own: uc, Topology: TopologyTLS}); err == nil {
		t.Error("a file of one's own started over TLS")
	}
}

func ownOrigin(t *testing.T) (*origin.Server, string) {
	t.Helper()
	o, err := origin.New(origin.Config{})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := origin.Start(o, "127.0.0.1:0", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return srv, srv.DataAddr()
}

func writeOwn(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// checkOwnAnswers: the playlist comes through the file's own addition.
func checkOwnAnswers(t *testing.T, base string) {
	t.Helper()
	for range 2 {
		resp, err := http.Get(base + "/stream/index.m3u8")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.HasPrefix(string(b), "#EXTM3U") || resp.Header.Get("X-Own") != "yes" {
			t.Fatalf("status %d, x-own %q, body %.40q", resp.StatusCode, resp.Header.Get("X-Own"), b)
		}
	}
}
