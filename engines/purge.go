package engines

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/hlsbench/hlsbench/engines/builtin"
)

// The invalidation modes of the purge-stampede workload (Policy.Purge).
const (
	// PurgeBan invalidates every object under a URL prefix in one call
	// (a Varnish ban, the built-in cache's BAN).
	PurgeBan = "ban"
	// PurgeObject invalidates each object with an HTTP request of its own
	// (PURGE in Varnish's VCL, NGINX's proxy_cache_purge, the built-in
	// cache's PURGE).
	PurgeObject = "purge"
)

// PurgeAuto asks each engine for its own way: a ban where it has one,
// else a request per object.
const PurgeAuto = "auto"

// PurgeModes are the modes a workload may ask for.
var PurgeModes = []string{PurgeAuto, PurgeBan, PurgeObject}

// PurgeModer is an instance started under a purging policy: PurgeMode is
// the mode it runs with (PurgeAuto resolved).
type PurgeModer interface {
	PurgeMode() string
}

// PurgeMode is the engine's resolved mode, "" without a purging policy.
func (l *localInstance) PurgeMode() string { return l.cfg.Policy.Purge }

// PurgeMethod is the HTTP method of a per-object purge.
const PurgeMethod = "PURGE"

// Purger is an engine that can invalidate what it caches. PurgeSupport
// says, running the binary where the engine runs, whether mode works with
// this build: nil, or a NotApplicableError saying why not. Ban bans every
// object whose URL starts with prefix, in mode PurgeBan, through run (a
// command where the engine runs) or over HTTP to cfg.Listen; it returns
// once the engine has accepted the ban.
type Purger interface {
	PurgeSupport(ctx context.Context, run Exec, binary, mode string) error
	Ban(ctx context.Context, run Exec, cfg Config, binary, prefix string) error
}

// Banner is an instance that bans a URL prefix (Purger.Ban on the running
// engine).
type Banner interface {
	Ban(ctx context.Context, prefix string) error
}

// Ban bans prefix on the running engine.
func (l *localInstance) Ban(ctx context.Context, prefix string) error {
	p, ok := l.e.(Purger)
	if !ok {
		return fmt.Errorf("%s cannot ban", l.e.Name())
	}
	return p.Ban(ctx, l.inst.Exec, l.cfg, l.bin, prefix)
}

var _ Banner = (*localInstance)(nil)

// ResolvePurge is resolvePurge on this host: mode auto asks binary.
func ResolvePurge(ctx context.Context, e Engine, binary, mode string) (string, error) {
	return resolvePurge(ctx, e, LocalExec(""), binary, mode)
}

// resolvePurge is StartLocal's check of the policy's purge mode: the mode
// the engine runs with (PurgeAuto: a ban if it has one, else a request per
// object), or a NotApplicableError saying why it has none.
func resolvePurge(ctx context.Context, e Engine, run Exec, bin, mode string) (string, error) {
	if mode == "" {
		return "", nil
	}
	p, ok := e.(Purger)
	if !ok {
		return "", &NotApplicableError{Reason: e.Name() + " has no purge"}
	}
	if mode != PurgeAuto {
		return mode, p.PurgeSupport(ctx, run, bin, mode)
	}
	var why []string
	for _, m := range []string{PurgeBan, PurgeObject} {
		err := p.PurgeSupport(ctx, run, bin, m)
		if err == nil {
			return m, nil
		}
		var na *NotApplicableError
		if !errors.As(err, &na) {
			return "", err
		}
		why = append(why, na.Reason)
	}
	return "", &NotApplicableError{Reason: strings.Join(why, "; ")}
}

// checkPurgeMode refuses a mode no engine knows.
func checkPurgeMode(mode string) error {
	if mode == "" || slices.Contains(PurgeModes, mode) {
		return nil
	}
	return fmt.Errorf("policy purge %q: want %s", mode, strings.Join(PurgeModes, ", "))
}

// BanPattern is the regular expression a Varnish ban matches a URL
// prefix with: the prefix, its regex metacharacters escaped, anchored.
func BanPattern(prefix string) string {
	var b strings.Builder
	b.WriteByte('^')
	for _, r := range prefix {
		if strings.ContainsRune(`\.+*?()|[]{}^$`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// cliQuote is s as one quoted word of the Varnish CLI.
func cliQuote(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}

// PurgeSupport: Varnish and Vinyl Cache do both, a ban through
// varnishadm (lurker-friendly: it tests obj.http.x-url, which the VCL
// stores on every object) and PURGE in the VCL.
func (f varnishFamily) purgeSupport(mode string) error { return checkPurgeMode(mode) }

// ban runs `varnishadm -n STATE ban obj.http.x-url ~ ^PREFIX`.
func (f varnishFamily) ban(ctx context.Context, run Exec, cfg Config, binary, prefix string) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	adm := f.admBinary(binary)
	// varnishadm joins its arguments as they are: the CLI's own quoting
	// keeps the regex's backslashes.
	out, err := run(ctx, adm, "-n", f.stateDir(cfg), "ban", "obj.http.x-url", "~", cliQuote(BanPattern(prefix)))
	if err != nil {
		return fmt.Errorf("%s ban: %w: %s", adm, err, strings.TrimSpace(out.Text()))
	}
	return nil
}

func (Varnish) PurgeSupport(_ context.Context, _ Exec, _, mode string) error {
	return varnishNames.purgeSupport(mode)
}
func (Varnish) Ban(ctx context.Context, run Exec, cfg Config, binary, prefix string) error {
	return varnishNames.ban(ctx, run, cfg, binary, prefix)
}
func (Vinyl) PurgeSupport(_ context.Context, _ Exec, _, mode string) error {
	return vinylNames.purgeSupport(mode)
}
func (Vinyl) Ban(ctx context.Context, run Exec, cfg Config, binary, prefix string) error {
	return vinylNames.ban(ctx, run, cfg, binary, prefix)
}

// NGINXPurgeModule is Debian's ngx_cache_purge (libnginx-mod-http-cache-purge).
const NGINXPurgeModule = "/usr/lib/nginx/modules/ngx_http_cache_purge_module.so"

// PurgeSupport: open-source NGINX has no purge; Debian's
// libnginx-mod-http-cache-purge (ngx_cache_purge 2.3) adds PURGE per
// object (proxy_cache_purge) but no prefix or wildcard purge, so a ban is
// not applicable.
func (NGINX) PurgeSupport(ctx context.Context, run Exec, binary, mode string) error {
	if err := checkPurgeMode(mode); err != nil {
		return err
	}
	if mode == PurgeBan {
		return &NotApplicableError{Reason: "NGINX has no ban: ngx_cache_purge 2.3 (Debian's libnginx-mod-http-cache-purge) purges one key per request, with no prefix or wildcard"}
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, err := run(ctx, "test", "-f", NGINXPurgeModule); err != nil {
		return &NotApplicableError{Reason: "open-source NGINX has no purge, and the module that adds one is not installed here (" +
			NGINXPurgeModule + ": apt-get install libnginx-mod-http-cache-purge)"}
	}
	return nil
}

// Ban: NGINX has none (PurgeSupport says so before a run starts).
func (NGINX) Ban(context.Context, Exec, Config, string, string) error {
	return &NotApplicableError{Reason: "NGINX has no ban"}
}

// PurgeSupport: the built-in cache does both (PURGE, BAN).
func (Builtin) PurgeSupport(_ context.Context, _ Exec, _, mode string) error {
	return checkPurgeMode(mode)
}

// Ban sends the built-in cache BAN PREFIX.
func (Builtin) Ban(ctx context.Context, _ Exec, cfg Config, _, prefix string) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "BAN", "http://"+cfg.Listen+prefix, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("BAN %s: %w", prefix, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<10))
	if resp.StatusCode != http.StatusOK || resp.Header.Get(builtin.BannedHeader) == "" {
		return fmt.Errorf("BAN %s: %s: %s", prefix, resp.Status, strings.TrimSpace(string(b)))
	}
	return nil
}

var (
	_ Purger = Varnish{}
	_ Purger = Vinyl{}
	_ Purger = NGINX{}
	_ Purger = Builtin{}
)
