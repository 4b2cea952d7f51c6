package engines

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
)

// What hlsbench reads of a configuration of the user's own: no more than
// where it fetches from and where it listens. The engine itself checks the
// rest (varnishd -C, nginx -t).

// A token of VCL or of an NGINX configuration: a word, a quoted string
// (quoted set, its value unquoted) or one of the punctuation characters.
type token struct {
	text   string
	quoted bool
	line   int
}

func (t token) is(s string) bool { return !t.quoted && t.text == s }

// vclTokens splits VCL into words, strings and punctuation, without its
// comments (#, // and /* */). Strings are "…", {"…"} and """…""".
func vclTokens(src string) ([]token, error) {
	var out []token
	line := 1
	for i := 0; i < len(src); {
		c := src[i]
		switch {
		case c == '\n':
			line++
			i++
		case c == ' ' || c == '\t' || c == '\r':
			i++
		case c == '#' || strings.HasPrefix(src[i:], "//"):
			for i < len(src) && src[i] != '\n' {
				i++
			}
		case strings.HasPrefix(src[i:], "/*"):
			end := strings.Index(src[i+2:], "*/")
			if end < 0 {
				return nil, fmt.Errorf("line %d: a /* comment that does not end", line)
			}
			line += strings.Count(src[i:i+2+end], "\n")
			i += end + 4
		case strings.HasPrefix(src[i:], `{"`), strings.HasPrefix(src[i:], `"""`):
			open, closer := src[i:i+2], `"}`
			if open != `{"` {
				open, closer = `"""`, `"""`
			}
			end := strings.Index(src[i+len(open):], closer)
			if end < 0 {
				return nil, fmt.Errorf("line %d: a long string that does not end", line)
			}
			v := src[i+len(open) : i+len(open)+end]
			out = append(out, token{text: v, quoted: true, line: line})
			line += strings.Count(v, "\n")
			i += len(open) + end + len(closer)
		case c == '"':
			end := strings.IndexAny(src[i+1:], "\"\n")
			if end < 0 || src[i+1+end] != '"' {
				return nil, fmt.Errorf("line %d: a string that does not end on its line", line)
			}
			out = append(out, token{text: src[i+1 : i+1+end], quoted: true, line: line})
			i += end + 2
		case strings.ContainsRune("{}();=,", rune(c)):
			out = append(out, token{text: string(c), line: line})
			i++
		default:
			j := i
			for j < len(src) && !strings.ContainsRune(" \t\r\n{}();=,\"#", rune(src[j])) && !strings.HasPrefix(src[j:], "//") && !strings.HasPrefix(src[j:], "/*") {
				j++
			}
			if j == i { // an operator character on its own
				j++
			}
			out = append(out, token{text: src[i:j], line: line})
			i = j
		}
	}
	return out, nil
}

// vclBackends reads the addresses of a VCL's backends: every
// `backend NAME { .host = "…"; .port = "…"; }` (a probe or other block
// inside is skipped); `backend NAME none;` has none.
func vclBackends(src string) ([]string, error) {
	toks, err := vclTokens(src)
	if err != nil {
		return nil, err
	}
	var addrs []string
	for i := 0; i+2 < len(toks); i++ {
		if !toks[i].is("backend") || toks[i+1].quoted || !toks[i+2].is("{") {
			continue
		}
		name, line := toks[i+1].text, toks[i].line
		var host, port, path string
		depth := 0
		j := i + 2
		for ; j < len(toks); j++ {
			t := toks[j]
			switch {
			case t.is("{"):
				depth++
			case t.is("}"):
				depth--
			case depth == 1 && j+2 < len(toks) && toks[j+1].is("=") && toks[j+2].quoted:
				switch t.text {
				case ".host":
					host = toks[j+2].text
				case ".port":
					port = toks[j+2].text
				case ".path":
					path = toks[j+2].text
				}
			}
			if depth == 0 {
				break
			}
		}
		if depth != 0 {
			return nil, fmt.Errorf("line %d: backend %s: its block does not end", line, name)
		}
		i = j
		switch {
		case path != "":
			return nil, fmt.Errorf("line %d: backend %s: .path %q is a Unix socket: hlsbench's origin listens on TCP: want .host and .port", line, name, path)
		case host == "":
			return nil, fmt.Errorf("line %d: backend %s: no .host", line, name)
		}
		if h, p, err := net.SplitHostPort(host); err == nil && port == "" {
			host, port = h, p
		}
		if port == "" {
			port = "80" // Varnish's default, "http"
		}
		a, err := loopbackAddr(host, port)
		if err != nil {
			return nil, fmt.Errorf("line %d: backend %s: %w", line, name, err)
		}
		addrs = append(addrs, a)
	}
	return addrs, nil
}

// ReadOwnConfig reads a VCL of the user's own: its backends must all reach
// one loopback address, where the run's origin listens.
func (f varnishFamily) readOwnConfig(content []byte) (*UserConfig, error) {
	addrs, err := vclBackends(string(content))
	if err != nil {
		return nil, err
	}
	origin, err := oneOrigin(addrs, "backend")
	if err != nil {
		return nil, err
	}
	return &UserConfig{Origin: origin, Caveats: []string{
		policyCaveat,
		"the origin listens where the VCL's backend points, " + origin + "; hlsbench gives " + f.daemon + " its listener (-a on loopback), its store (-s malloc, the workload's size) and its thread pools on the command line, as it does for its own VCL",
		"purge-stampede and repeated-bans send PURGE requests (which this VCL must answer with return (purge), from loopback) or bans through " + strings.TrimSuffix(f.daemon, "d") + "adm that test obj.http.x-url, which hlsbench's VCL sets to each object's URL: a VCL that sets no x-url makes those bans match nothing",
	}}, nil
}

func (Varnish) ReadOwnConfig(content []byte) (*UserConfig, error) {
	return varnishNames.readOwnConfig(content)
}
func (Vinyl) ReadOwnConfig(content []byte) (*UserConfig, error) {
	return vinylNames.readOwnConfig(content)
}
func (Varnish) OwnConfigFile() string { return vclFile }

// CountersWithOwnConfig: varnishstat reads the same counters whatever the
// VCL.
func (Varnish) CountersWithOwnConfig() bool { return true }
func (Vinyl) CountersWithOwnConfig() bool   { return true }
func (Vinyl) OwnConfigFile() string         { return vclFile }

// An NGINX directive: its name, arguments, and block when it has one.
type nginxDirective struct {
	name  string
	args  []string
	line  int
	block []nginxDirective
}

// nginxTokens splits an NGINX configuration into words (quoted ones with
// their quotes and escapes removed) and the characters ; { }, without
// comments.
func nginxTokens(src string) ([]token, error) {
	var out []token
	line := 1
	for i := 0; i < len(src); {
		c := src[i]
		switch {
		case c == '\n':
			line++
			i++
		case c == ' ' || c == '\t' || c == '\r':
			i++
		case c == '#':
			for i < len(src) && src[i] != '\n' {
				i++
			}
		case c == ';' || c == '{' || c == '}':
			out = append(out, token{text: string(c), line: line})
			i++
		case c == '"' || c == '\'':
			var b strings.Builder
			start := line
			j := i + 1
			for ; j < len(src) && src[j] != c; j++ {
				if src[j] == '\\' && j+1 < len(src) {
					j++
				}
				if src[j] == '\n' {
					line++
				}
				b.WriteByte(src[j])
			}
			if j == len(src) {
				return nil, fmt.Errorf("line %d: a quoted string that does not end", start)
			}
			out = append(out, token{text: b.String(), quoted: true, line: start})
			i = j + 1
		default:
			j := i
			for j < len(src) && !strings.ContainsRune(" \t\r\n;{}\"'", rune(src[j])) {
				if src[j] == '\\' && j+1 < len(src) {
					j++
				}
				j++
			}
			out = append(out, token{text: src[i:j], line: line})
			i = j
		}
	}
	return out, nil
}

// parseNGINX reads an NGINX configuration into its directives.
func parseNGINX(src string) ([]nginxDirective, error) {
	toks, err := nginxTokens(src)
	if err != nil {
		return nil, err
	}
	list, rest, err := nginxBlock(toks, false)
	if err != nil {
		return nil, err
	}
	if len(rest) > 0 {
		return nil, fmt.Errorf("line %d: unexpected %q", rest[0].line, rest[0].text)
	}
	return list, nil
}

func nginxBlock(toks []token, inner bool) ([]nginxDirective, []token, error) {
	var list []nginxDirective
	for len(toks) > 0 {
		t := toks[0]
		if t.is("}") {
			if !inner {
				return nil, nil, fmt.Errorf("line %d: a } without its {", t.line)
			}
			return list, toks[1:], nil
		}
		if t.is(";") || t.is("{") {
			return nil, nil, fmt.Errorf("line %d: %q without a directive", t.line, t.text)
		}
		d := nginxDirective{name: t.text, line: t.line}
		toks = toks[1:]
		for len(toks) > 0 && !toks[0].is(";") && !toks[0].is("{") && !toks[0].is("}") {
			d.args = append(d.args, toks[0].text)
			toks = toks[1:]
		}
		switch {
		case len(toks) == 0 || toks[0].is("}"):
			return nil, nil, fmt.Errorf("line %d: %s: no ; or { after it", d.line, d.name)
		case toks[0].is("{"):
			var err error
			if d.block, toks, err = nginxBlock(toks[1:], true); err != nil {
				return nil, nil, err
			}
		default:
			toks = toks[1:]
		}
		list = append(list, d)
	}
	if inner {
		return nil, nil, errors.New("a { block that does not end")
	}
	return list, nil, nil
}

// walkNGINX calls fn on every directive, depth first.
func walkNGINX(list []nginxDirective, fn func(d nginxDirective)) {
	for _, d := range list {
		fn(d)
		walkNGINX(d.block, fn)
	}
}

// ReadOwnConfig reads an nginx.conf of the user's own: requests go to the
// first plaintext listen of its first server, and every proxy_pass
// (directly or through an upstream block) must reach one loopback
// address, where the run's origin listens.
func (NGINX) ReadOwnConfig(content []byte) (*UserConfig, error) {
	top, err := parseNGINX(string(content))
	if err != nil {
		return nil, err
	}
	uc := &UserConfig{addDaemonOff: true, addPID: true}
	var includes []string
	upstreams := map[string][]string{}
	var passes []nginxDirective
	for _, d := range top {
		switch d.name {
		case "daemon":
			if len(d.args) == 1 && d.args[0] == "on" {
				return nil, fmt.Errorf("line %d: daemon on: hlsbench runs nginx in the foreground, as its child: remove it (hlsbench adds daemon off)", d.line)
			}
			uc.addDaemonOff = false
		case "pid":
			uc.addPID = false
		case "user":
			// user USER [GROUP]: without a group, the one named as the
			// user is NGINX's.
			if len(d.args) > 0 {
				uc.workerGroup = d.args[len(d.args)-1]
			}
		}
	}
	walkNGINX(top, func(d nginxDirective) {
		switch d.name {
		case "include":
			includes = append(includes, strings.Join(d.args, " "))
		case "upstream":
			if len(d.args) == 1 {
				for _, s := range d.block {
					if s.name == "server" && len(s.args) > 0 {
						upstreams[d.args[0]] = append(upstreams[d.args[0]], s.args[0])
					}
				}
			}
		case "proxy_pass":
			passes = append(passes, d)
		}
	})
	var origins []string
	for _, p := range passes {
		if len(p.args) != 1 {
			return nil, fmt.Errorf("line %d: proxy_pass: want one URL", p.line)
		}
		if strings.Contains(p.args[0], "$") {
			return nil, fmt.Errorf("line %d: proxy_pass %s: a URL with variables: hlsbench cannot tell where it fetches from; write the origin's address", p.line, p.args[0])
		}
		u, err := url.Parse(p.args[0])
		if err != nil || u.Host == "" {
			return nil, fmt.Errorf("line %d: proxy_pass %s: want http://HOST:PORT or http://UPSTREAM", p.line, p.args[0])
		}
		if u.Scheme != "http" {
			return nil, fmt.Errorf("line %d: proxy_pass %s: hlsbench's origin speaks plain http", p.line, p.args[0])
		}
		servers, ok := upstreams[u.Host]
		if !ok {
			servers = []string{u.Host}
		}
		for _, s := range servers {
			host, port, err := net.SplitHostPort(s)
			if err != nil {
				host, port = s, "80"
			}
			if strings.HasPrefix(s, "unix:") {
				return nil, fmt.Errorf("line %d: proxy_pass %s reaches %s, a Unix socket: hlsbench's origin listens on TCP", p.line, p.args[0], s)
			}
			a, err := loopbackAddr(host, port)
			if err != nil {
				return nil, fmt.Errorf("line %d: proxy_pass %s: %w", p.line, p.args[0], err)
			}
			origins = append(origins, a)
		}
	}
	if uc.Origin, err = oneOrigin(origins, "proxy_pass"); err != nil {
		return nil, err
	}
	walkNGINX(top, func(d nginxDirective) {
		if d.name != "server" || d.block == nil || uc.Listen != "" {
			return
		}
		for _, l := range d.block {
			if l.name != "listen" || len(l.args) == 0 || uc.Listen != "" || strings.HasPrefix(l.args[0], "unix:") {
				continue
			}
			if plainListen(l.args[1:]) {
				uc.Listen = l.args[0]
			}
		}
	})
	if uc.Listen == "" {
		return nil, errors.New("no plaintext listen in a server block: hlsbench sends its requests to the first one of the first server, e.g. listen 127.0.0.1:8080;")
	}
	host, port, err := net.SplitHostPort(uc.Listen)
	if err != nil { // a port alone
		host, port = "", uc.Listen
	}
	if uc.Listen, err = loopbackAddr(host, port); err != nil {
		return nil, fmt.Errorf("listen %s: %w", uc.Listen, err)
	}
	uc.Caveats = []string{
		policyCaveat,
		"the origin listens where it proxies to, " + uc.Origin + ", and requests go to its first plaintext listen, " + uc.Listen + "; its cache (path, size, keys), workers and logs are its own: the workload's store size is not applied",
		"hlsbench does not read its counters (they come from the access log format of the configuration hlsbench renders): origin requests are counted at the origin alone",
		"purge-stampede sends PURGE requests, which need ngx_cache_purge loaded and a location that purges the key the file caches under, as hlsbench's configuration has",
	}
	if len(includes) > 0 {
		uc.Caveats = append(uc.Caveats, "it includes other files ("+strings.Join(includes, ", ")+"): nginx -t checked them, but the results keep this file alone, and hlsbench read its listen and proxy_pass from this file only; relative paths resolve against the run's work directory")
	}
	return uc, nil
}

// plainListen: a listen's parameters after the address serve plain HTTP/1
// (not ssl, quic, http2 or proxy_protocol).
func plainListen(params []string) bool {
	for _, p := range params {
		switch p {
		case "ssl", "quic", "http2", "proxy_protocol":
			return false
		}
	}
	return true
}

func (NGINX) OwnConfigFile() string { return NGINXConf }

var (
	_ OwnConfigurable = Varnish{}
	_ OwnConfigurable = Vinyl{}
	_ OwnConfigurable = NGINX{}
)
