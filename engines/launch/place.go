package launch

import (
	"fmt"
	"net"
	"net/url"
	"regexp"
	"strings"
)

// A Host is where a role of a run is placed: a Docker daemon, and the
// address the other hosts reach what runs there at.
type Host struct {
	// Endpoint is the daemon in Docker's own forms: unix:///path,
	// tcp://host:port (TLS from DOCKER_CERT_PATH and DOCKER_TLS_VERIFY, as
	// the docker CLI reads them), ssh://[user@]host[:port], or the name of a
	// Docker context. Empty is this host, as the run's runtime reaches it.
	Endpoint string `json:"endpoint,omitempty"`
	// Addr is the address the other hosts reach this one at; empty is
	// loopback (everything on one host).
	Addr string `json:"addr,omitempty"`
}

func (h Host) String() string {
	e := h.Endpoint
	if e == "" {
		e = "this host"
	}
	if h.Addr == "" {
		return e
	}
	return e + "@" + h.Addr
}

// Placement says where each role of a run runs. The zero value is
// everything on this host.
type Placement struct {
	Generators []Host `json:"generators,omitempty"`
	Engine     Host   `json:"engine"`
	Origin     Host   `json:"origin"`
}

// Placed reports whether any role is on another host.
func (p Placement) Placed() bool {
	return len(p.Generators) > 0 || p.Engine != (Host{}) || p.Origin != (Host{})
}

// PlaceError is a placement that cannot be read: Spec is what was given,
// Msg what is wrong and what is accepted.
type PlaceError struct {
	Spec string
	Msg  string
}

func (e *PlaceError) Error() string { return fmt.Sprintf("%q: %s", e.Spec, e.Msg) }

// PlaceSyntax says what ParsePlacement accepts.
const PlaceSyntax = "want generator=H[,H…],engine=H,origin=H (any of the three), each H a Docker endpoint (unix:///path, tcp://host:port, ssh://[user@]host) or context name, with @ADDR for the address the other hosts reach it at"

// contextName is what Docker accepts as a context's name.
var contextName = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9_.+-]*$`)

// ParsePlacement reads generator=H1,H2,engine=H3,origin=H4: the roles in
// any order, each once, a value without a role continuing the role before
// it (only generators may be several). An H is a Docker endpoint or
// context name, optionally followed by @ADDR, the address the other hosts
// reach it at (an ssh:// endpoint with an address names its user:
// ssh://me@h3@10.0.0.3). A role left out stays on this host.
func ParsePlacement(s string) (Placement, error) {
	var p Placement
	bad := func(format string, args ...any) (Placement, error) {
		return Placement{}, &PlaceError{Spec: s, Msg: fmt.Sprintf(format, args...)}
	}
	if strings.TrimSpace(s) == "" {
		return bad("empty: %s", PlaceSyntax)
	}
	role, seen := "", map[string]bool{}
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		if r, v, ok := strings.Cut(item, "="); ok && !strings.Contains(r, "/") {
			role, item = r, v
			if seen[role] {
				return bad("%s is placed twice", role)
			}
			seen[role] = true
		} else if role == "" {
			return bad("%q has no role: %s", item, PlaceSyntax)
		} else if role != "generator" {
			return bad("%s takes one host; only generators may be several", role)
		}
		h, err := parseHost(item)
		if err != nil {
			return bad("%s %q: %v", role, item, err)
		}
		switch role {
		case "generator":
			p.Generators = append(p.Generators, h)
		case "engine":
			p.Engine = h
		case "origin":
			p.Origin = h
		default:
			return bad("unknown role %q: %s", role, PlaceSyntax)
		}
	}
	return p, nil
}

// parseHost reads H or H@ADDR.
func parseHost(s string) (Host, error) {
	if s == "" {
		return Host{}, fmt.Errorf("no host: %s", PlaceSyntax)
	}
	var h Host
	h.Endpoint = s
	at := strings.LastIndex(s, "@")
	// A single @ in an ssh:// endpoint is its user's.
	if at >= 0 && !(strings.HasPrefix(s, "ssh://") && strings.Count(s, "@") == 1) {
		h.Endpoint, h.Addr = s[:at], s[at+1:]
		if ip := net.ParseIP(strings.Trim(h.Addr, "[]")); ip == nil || ip.IsUnspecified() {
			return Host{}, fmt.Errorf("@%s: want the IP address the other hosts reach this one at", h.Addr)
		}
		h.Addr = strings.Trim(h.Addr, "[]")
	}
	scheme, rest, isURL := strings.Cut(h.Endpoint, "://")
	switch {
	case !isURL:
		if !contextName.MatchString(h.Endpoint) {
			return Host{}, fmt.Errorf("%q is neither an endpoint (unix://, tcp://, ssh://) nor a Docker context name", h.Endpoint)
		}
	case scheme == "unix":
		if !strings.HasPrefix(rest, "/") {
			return Host{}, fmt.Errorf("unix://%s: want an absolute socket path, unix:///path", rest)
		}
	case scheme == "tcp" || scheme == "ssh":
		u, err := url.Parse(h.Endpoint)
		if err != nil || u.Hostname() == "" || (u.Path != "" && u.Path != "/") {
			return Host{}, fmt.Errorf("%q: want %s://host[:port]", h.Endpoint, scheme)
		}
		if scheme == "tcp" && u.Port() == "" {
			return Host{}, fmt.Errorf("%q: want tcp://host:port (2376 with TLS)", h.Endpoint)
		}
	default:
		return Host{}, fmt.Errorf("%s:// is not a Docker endpoint: want unix://, tcp:// or ssh://", scheme)
	}
	return h, nil
}
