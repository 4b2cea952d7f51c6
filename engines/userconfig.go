package engines

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/hlsbench/hlsbench/results"
)

// UserConfig is a configuration file of the user's own (a VCL, an
// nginx.conf), run as given instead of the one the engine renders from the
// workload's policy. It is never rewritten: hlsbench starts its origin
// where the file fetches from and sends its requests where the file
// listens, and says what of the workload's policy it cannot guarantee.
type UserConfig struct {
	// Path is where it was read (absolute), Content what was read and
	// SHA256 its digest.
	Path    string
	Content []byte
	SHA256  string
	// Origin is the one loopback host:port its backends fetch from: the
	// run's origin listens there.
	Origin string
	// Listen is the plaintext host:port it listens on itself (NGINX's
	// listen), where the generator sends its requests; "" when hlsbench
	// gives the listener on the command line (Varnish's -a).
	Listen string
	// Caveats are the workload assumptions hlsbench cannot guarantee of it.
	Caveats []string

	// nginx: main-context directives the file lacks, which hlsbench adds
	// with -g so that nginx stays in the foreground and its pid file in
	// the work directory.
	addDaemonOff, addPID bool
	// workerGroup is the group of the file's user directive, which
	// NGINX's workers run as when it is started as root ("": none).
	workerGroup string
}

// Record is the configuration as the results keep it.
func (u *UserConfig) Record() *results.ConfigFile {
	if u == nil {
		return nil
	}
	return &results.ConfigFile{Path: u.Path, SHA256: u.SHA256, Content: string(u.Content), Caveats: u.Caveats}
}

// OwnConfigurable is an engine that runs a configuration of the user's own.
type OwnConfigurable interface {
	// ReadOwnConfig reads one: where it fetches from and listens, and its
	// caveats. It is pure: content is the file's.
	ReadOwnConfig(content []byte) (*UserConfig, error)
	// OwnConfigFile is the name it is written under in the work
	// directory: the rendered file's, which Launch and Check read.
	OwnConfigFile() string
}

// maxConfigBytes bounds a configuration file: it is kept whole in every
// results file.
const maxConfigBytes = 1 << 20

// LoadUserConfig reads path as a configuration of e's.
func LoadUserConfig(e Engine, path string) (*UserConfig, error) {
	oc, ok := e.(OwnConfigurable)
	if !ok {
		return nil, fmt.Errorf("%s takes no configuration file: hlsbench configures it from the workload's policy", e.Name())
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	st, err := os.Stat(abs)
	switch {
	case err != nil:
		return nil, err
	case !st.Mode().IsRegular():
		return nil, fmt.Errorf("%s: not a regular file", path)
	case st.Size() > maxConfigBytes:
		return nil, fmt.Errorf("%s: %d bytes: want at most %d (the results keep it whole)", path, st.Size(), maxConfigBytes)
	}
	b, err := os.ReadFile(abs)
	if err != nil {
		return nil, err
	}
	uc, err := oc.ReadOwnConfig(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	sum := sha256.Sum256(b)
	uc.Path, uc.Content, uc.SHA256 = abs, b, hex.EncodeToString(sum[:])
	return uc, nil
}

// CheckUserConfig has the engine check the file on this host before a run
// (varnishd -C, nginx -t), in a scratch directory laid out as the run's
// work directory will be.
func CheckUserConfig(ctx context.Context, e Engine, uc *UserConfig, binary string) error {
	c, ok := e.(Checker)
	if !ok {
		return nil
	}
	oc, ok := e.(OwnConfigurable)
	if !ok {
		return fmt.Errorf("%s takes no configuration file", e.Name())
	}
	dir, err := os.MkdirTemp("", "hlsbench-check-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	if group := dropGroup(e, binary, uc); group != "" {
		// varnishd's jail compiles the VCL as another user.
		if err := shareWith(dir, e.Name(), group); err != nil {
			return err
		}
	}
	if err := os.WriteFile(filepath.Join(dir, oc.OwnConfigFile()), uc.Content, 0o644); err != nil {
		return err
	}
	cfg := Config{Listen: uc.Listen, Origin: uc.Origin, WorkDir: dir, CacheDir: dir, CPUs: 1, Topology: TopologyPlaintext, Own: uc}
	return c.Check(ctx, LocalExec(dir), cfg, binary)
}

// OwnTopology is why a configuration of one's own is not measured over TLS
// or PROXY: it has the listeners its author wrote, and hlsbench adds TLS
// and PROXY listeners only to its own.
const OwnTopology = "a configuration of your own runs in plaintext: hlsbench adds TLS and PROXY listeners only to the configurations it renders (measure your own TLS listener with hlsbench load --ca)"

// policyCaveat is every own configuration's: the workloads are designed
// around a policy the file may not follow.
const policyCaveat = "the workloads assume hlsbench's cache policy (TTLs, grace, request coalescing, the origin probe): this file's own policy is measured instead, and a workload whose figures depend on that policy (miss-storm's coalescing, origin-flap's grace, purge-stampede) says what this file does, not what the policy asks"

// loopbackAddr reads host:port as the generator or the origin may use it:
// a loopback host (127.0.0.0/8, ::1, localhost, or the wildcard, which
// includes loopback) and a port number. The result is dialable.
func loopbackAddr(host, port string) (string, error) {
	n, err := strconv.Atoi(port)
	if err != nil || n < 1 || n > 65535 {
		return "", fmt.Errorf("port %q: want a number from 1 to 65535", port)
	}
	switch strings.Trim(host, "[]") {
	case "localhost", "", "*", "0.0.0.0":
		host = "127.0.0.1"
	case "::":
		host = "::1"
	default:
		ip := net.ParseIP(strings.Trim(host, "[]"))
		if ip == nil || !ip.IsLoopback() {
			return "", fmt.Errorf("address %s: hlsbench runs its origin and sends its traffic on loopback only: want 127.0.0.1, ::1 or localhost", net.JoinHostPort(strings.Trim(host, "[]"), port))
		}
		host = ip.String()
	}
	return net.JoinHostPort(host, port), nil
}

// oneOrigin is the one address a file's backends reach.
func oneOrigin(addrs []string, what string) (string, error) {
	var uniq []string
	for _, a := range addrs {
		if !slices.Contains(uniq, a) {
			uniq = append(uniq, a)
		}
	}
	switch len(uniq) {
	case 0:
		return "", errors.New("no " + what + ": hlsbench starts its origin where the file fetches from")
	case 1:
		return uniq[0], nil
	}
	return "", fmt.Errorf("its %ss reach %d addresses (%s): hlsbench starts one origin, so point every %s at one address", what, len(uniq), strings.Join(uniq, ", "), what)
}
