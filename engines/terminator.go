package engines

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/user"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/hlsbench/hlsbench/engines/certs"
)

// TermConfig is a TLS terminator's start in topology proxyv2: it accepts
// TLS on Listen with the run's certificate and forwards every connection to
// Backend, the engine's PROXY listener, beginning with a PROXY v2 header
// that carries the client's address.
type TermConfig struct {
	Listen, Backend string // host:port
	WorkDir         string
	Certs           certs.Files
	CPUs            int // threads or worker processes
	// User is the user hitch's workers run as where hitch starts as root
	// (it refuses to keep root): "" decides on this host (hitchUser); a
	// container names its image's user, whoever runs hlsbench.
	User string
}

// A Terminator is a TLS terminator hlsbench puts in front of an engine.
// Like an engine it is pure: it renders files and describes its command
// line; the launch layer runs it.
type Terminator interface {
	Name() string
	Binary() string
	Render(TermConfig) (Files, error)
	Launch(TermConfig, string) LaunchSpec
	Version(ctx context.Context, run Exec, binary string) (string, error)
}

// Terminators by name; hitch is the default.
var terminators = map[string]Terminator{"hitch": Hitch{}, "haproxy": HAProxy{}}

// DefaultTerminator is the terminator of topology proxyv2 unless another
// is asked for.
const DefaultTerminator = "hitch"

// LookupTerminator returns the terminator called name.
func LookupTerminator(name string) (Terminator, bool) {
	t, ok := terminators[name]
	return t, ok
}

// TerminatorNames are the terminators, sorted.
func TerminatorNames() []string { return []string{"haproxy", "hitch"} }

// termSafe checks what goes into a terminator's configuration file.
func termSafe(t TermConfig) error {
	for _, a := range []string{t.Listen, t.Backend} {
		if _, _, err := net.SplitHostPort(a); err != nil || strings.ContainsAny(a, " \t\n\"'#;") {
			return fmt.Errorf("terminator address %q: want host:port", a)
		}
	}
	if t.Certs.Combined == "" || strings.ContainsAny(t.Certs.Combined, " \t\n\"'#;") || !filepath.IsAbs(t.Certs.Combined) {
		return fmt.Errorf("terminator certificate %q: want an absolute path without spaces or quotes", t.Certs.Combined)
	}
	return nil
}

// Hitch is Varnish Software's TLS proxy, writing a PROXY v2 header to its
// backend (write-proxy-v2).
type Hitch struct{}

const hitchConf = "hitch.conf"

func (Hitch) Name() string   { return "hitch" }
func (Hitch) Binary() string { return "hitch" }

// Render writes hitch.conf: one frontend, one backend, the run's
// certificate, TLS 1.2 and 1.3, a worker per CPU, in the foreground.
func (Hitch) Render(t TermConfig) (Files, error) {
	if err := termSafe(t); err != nil {
		return nil, err
	}
	fh, fp, _ := net.SplitHostPort(t.Listen)
	bh, bp, _ := net.SplitHostPort(t.Backend)
	u := t.User
	if u == "" {
		u = hitchUser()
	}
	if strings.ContainsAny(u, " \t\n\"'#;") {
		return nil, fmt.Errorf("hitch user %q: want a user name", u)
	}
	userLine := ""
	if u != "" {
		userLine = "user = \"" + u + "\"\n"
	}
	return Files{hitchConf: fmt.Appendf(nil, `# Rendered by hlsbench: TLS in front of the engine, PROXY v2 to it.
frontend = "[%s]:%s"
backend = "[%s]:%s"
pem-file = "%s"
write-proxy-v2 = on
tls-protos = TLSv1.2 TLSv1.3
workers = %d
backlog = 1024
keepalive = 300
daemon = off
%s`, fh, fp, bh, bp, t.Certs.Combined, max(t.CPUs, 1), userLine)}, nil
}

// HitchImageUser is the user hitch's workers run as in hlsbench's images
// (Debian's package makes it), where hitch starts as root.
const HitchImageUser = "_hitch"

// hitchUser: hitch refuses to run its workers as root. Started as root on
// this host, they run as Debian's _hitch where it exists, else nobody;
// started as anyone else, they stay that user ("").
func hitchUser() string {
	if os.Geteuid() != 0 {
		return ""
	}
	if _, err := user.Lookup(HitchImageUser); err == nil {
		return HitchImageUser
	}
	return "nobody"
}

// Launch runs hitch on the rendered file.
func (Hitch) Launch(t TermConfig, binary string) LaunchSpec {
	return LaunchSpec{Binary: binary, Args: []string{"--config=" + filepath.Join(t.WorkDir, hitchConf)}, StopTimeout: 5 * time.Second}
}

var termVersionRE = regexp.MustCompile(`\d+\.\d+(?:\.\d+)?`)

// Version reads `hitch --version`: "hitch 1.7.2".
func (Hitch) Version(ctx context.Context, run Exec, binary string) (string, error) {
	return termVersion(ctx, run, binary, "--version")
}

// HAProxy in TCP mode, sending a PROXY v2 header to its server
// (send-proxy-v2).
type HAProxy struct{}

const haproxyConf = "haproxy.cfg"

func (HAProxy) Name() string   { return "haproxy" }
func (HAProxy) Binary() string { return "haproxy" }

// Render writes haproxy.cfg: a TLS bind with the run's certificate (TLS 1.2
// and up), TCP mode, one server with send-proxy-v2, a thread per CPU.
func (HAProxy) Render(t TermConfig) (Files, error) {
	if err := termSafe(t); err != nil {
		return nil, err
	}
	return Files{haproxyConf: fmt.Appendf(nil, `# Rendered by hlsbench: TLS in front of the engine, PROXY v2 to it.
global
    nbthread %d
    # Enough for the generator's connections, under a 20000 descriptor limit.
    maxconn 4096

defaults
    mode tcp
    timeout connect 5s
    timeout client 300s
    timeout server 300s

frontend tls
    bind %s ssl crt %s ssl-min-ver TLSv1.2
    default_backend engine

backend engine
    server engine %s send-proxy-v2
`, max(t.CPUs, 1), t.Listen, t.Certs.Combined, t.Backend)}, nil
}

// Launch runs haproxy in the foreground (-db) on the rendered file.
func (HAProxy) Launch(t TermConfig, binary string) LaunchSpec {
	return LaunchSpec{Binary: binary, Args: []string{"-db", "-f", filepath.Join(t.WorkDir, haproxyConf)}, StopTimeout: 5 * time.Second}
}

// Version reads `haproxy -v`: "HAProxy version 2.6.12-1+deb12u4 …".
func (HAProxy) Version(ctx context.Context, run Exec, binary string) (string, error) {
	return termVersion(ctx, run, binary, "-v")
}

func termVersion(ctx context.Context, run Exec, binary, flag string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	out, err := run(ctx, binary, flag)
	if err != nil {
		return "", fmt.Errorf("%s %s: %w: %s", binary, flag, err, out.Text())
	}
	first, _, _ := strings.Cut(strings.TrimSpace(out.Text()), "\n")
	v := termVersionRE.FindString(first)
	if v == "" {
		return "", fmt.Errorf("%s %s: no version in %q", binary, flag, first)
	}
	return v, nil
}

// ProxyListener is an engine that may take PROXY v2 connections on a
// listener of its own (Config.ProxyListen).
type ProxyListener interface {
	ProxySupport(ctx context.Context, run Exec, binary string) error
}

var (
	_ Terminator = Hitch{}
	_ Terminator = HAProxy{}
)
