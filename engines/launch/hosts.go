package launch

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"time"

	"github.com/docker/docker/client"

	"github.com/hlsbench/hlsbench/engines/internal/procgroup"
)

// ConnectHost returns a client of the Docker daemon at h (this host's, as
// Connect, when h.Endpoint is empty or names the default context), once it
// answered a ping within limit. A tcp:// endpoint takes its TLS from
// DOCKER_CERT_PATH and DOCKER_TLS_VERIFY as the docker CLI does; ssh://
// runs `ssh HOST docker system dial-stdio`, as the docker CLI does, so the
// remote user must reach its daemon; a context name is read from the docker
// CLI's context store (DOCKER_CONFIG, else ~/.docker).
func ConnectHost(ctx context.Context, h Host, limit time.Duration) (*client.Client, error) {
	if h.Endpoint == "" || h.Endpoint == "default" {
		return Connect(ctx, limit)
	}
	opts, err := endpointOpts(h.Endpoint)
	if err != nil {
		return nil, err
	}
	cli, err := client.NewClientWithOpts(append(opts, client.WithAPIVersionNegotiation())...)
	if err != nil {
		return nil, fmt.Errorf("docker client for %s: %w", h.Endpoint, err)
	}
	return pinged(ctx, cli, h.Endpoint, limit)
}

// endpointOpts are the client options that reach an endpoint or context.
func endpointOpts(endpoint string) ([]client.Opt, error) {
	u, err := url.Parse(endpoint)
	if err != nil || u.Scheme == "" {
		return contextOpts(endpoint)
	}
	switch u.Scheme {
	case "unix":
		return []client.Opt{client.WithHost(endpoint)}, nil
	case "tcp":
		return []client.Opt{client.WithTLSClientConfigFromEnv(), client.WithHost(endpoint)}, nil
	case "ssh":
		// The host is never resolved: every connection is ssh's.
		return []client.Opt{client.WithHost("http://docker-over-ssh"), client.WithDialContext(sshDialer(u))}, nil
	}
	return nil, fmt.Errorf("%s: not a Docker endpoint (unix://, tcp://, ssh://)", endpoint)
}

// contextMeta is the part of a docker CLI context's meta.json hlsbench reads.
type contextMeta struct {
	Name      string `json:"Name"`
	Endpoints map[string]struct {
		Host          string `json:"Host"`
		SkipTLSVerify bool   `json:"SkipTLSVerify"`
	} `json:"Endpoints"`
}

// dockerConfigDir is the docker CLI's configuration directory.
func dockerConfigDir() string {
	if d := os.Getenv("DOCKER_CONFIG"); d != "" {
		return d
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".docker")
}

// contextOpts reads a context the docker CLI made (docker context create):
// its metadata under contexts/meta/SHA256(name)/meta.json, its TLS files
// under contexts/tls/SHA256(name)/docker/.
func contextOpts(name string) ([]client.Opt, error) {
	sum := sha256.Sum256([]byte(name))
	id := hex.EncodeToString(sum[:])
	dir := dockerConfigDir()
	metaPath := filepath.Join(dir, "contexts", "meta", id, "meta.json")
	b, err := os.ReadFile(metaPath)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("no Docker context %q in %s (docker context ls lists them)", name, filepath.Join(dir, "contexts"))
	}
	if err != nil {
		return nil, fmt.Errorf("Docker context %q: %w", name, err)
	}
	var m contextMeta
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("Docker context %q: %s: %w", name, metaPath, err)
	}
	ep, ok := m.Endpoints["docker"]
	if !ok || ep.Host == "" {
		return nil, fmt.Errorf("Docker context %q has no docker endpoint (%s)", name, metaPath)
	}
	u, err := url.Parse(ep.Host)
	if err != nil || u.Scheme == "" {
		return nil, fmt.Errorf("Docker context %q: endpoint %q is not a URL", name, ep.Host)
	}
	if u.Scheme != "tcp" {
		return endpointOpts(ep.Host)
	}
	opts := []client.Opt{client.WithHost(ep.Host)}
	tlsDir := filepath.Join(dir, "contexts", "tls", id, "docker")
	if _, err := os.Stat(filepath.Join(tlsDir, "ca.pem")); err == nil {
		opts = append(opts, client.WithTLSClientConfig(filepath.Join(tlsDir, "ca.pem"), filepath.Join(tlsDir, "cert.pem"), filepath.Join(tlsDir, "key.pem")))
		if ep.SkipTLSVerify {
			return nil, fmt.Errorf("Docker context %q skips TLS verification: hlsbench does not; give the daemon a certificate its CA signs", name)
		}
	}
	return opts, nil
}

// sshCommand is the ssh program a dialer runs (tests replace it).
var sshCommand = "ssh"

// sshArgs are ssh's arguments for `docker system dial-stdio` on u's host.
func sshArgs(u *url.URL) []string {
	args := []string{"-o", "ConnectTimeout=30", "-o", "BatchMode=yes", "-T"}
	if u.User != nil && u.User.Username() != "" {
		args = append(args, "-l", u.User.Username())
	}
	if u.Port() != "" {
		args = append(args, "-p", u.Port())
	}
	return append(args, "--", u.Hostname(), "docker", "system", "dial-stdio")
}

// sshDialer connects through ssh: each connection is one ssh process whose
// standard input and output carry it.
func sshDialer(u *url.URL) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, _, _ string) (net.Conn, error) {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		// Not CommandContext: the connection outlives the dial's context.
		cmd := exec.Command(sshCommand, sshArgs(u)...)
		in, err := cmd.StdinPipe()
		if err != nil {
			return nil, err
		}
		out, err := cmd.StdoutPipe()
		if err != nil {
			return nil, err
		}
		stderr := procgroup.NewTail(4096)
		cmd.Stderr = stderr
		if err := cmd.Start(); err != nil {
			return nil, fmt.Errorf("ssh to %s: %w", u.Host, err)
		}
		return &cmdConn{cmd: cmd, in: in, out: out, stderr: stderr, host: u.Host}, nil
	}
}

// cmdConn is a connection carried by a process's standard input and
// output. It has no deadlines: the HTTP client's context ends a request.
type cmdConn struct {
	cmd    *exec.Cmd
	in     io.WriteCloser
	out    io.ReadCloser
	stderr *procgroup.Tail
	host   string
	once   sync.Once
}

func (c *cmdConn) Read(p []byte) (int, error) {
	n, err := c.out.Read(p)
	if err == io.EOF {
		if msg := c.stderr.String(); msg != "" {
			return n, fmt.Errorf("ssh to %s: %s", c.host, msg)
		}
	}
	return n, err
}

func (c *cmdConn) Write(p []byte) (int, error) { return c.in.Write(p) }

func (c *cmdConn) Close() error {
	c.once.Do(func() {
		c.in.Close()
		c.cmd.Process.Kill()
		c.cmd.Wait()
	})
	return nil
}

type pipeAddr string

func (a pipeAddr) Network() string { return "ssh" }
func (a pipeAddr) String() string  { return string(a) }

func (c *cmdConn) LocalAddr() net.Addr                { return pipeAddr("local") }
func (c *cmdConn) RemoteAddr() net.Addr               { return pipeAddr(c.host) }
func (c *cmdConn) SetDeadline(t time.Time) error      { return nil }
func (c *cmdConn) SetReadDeadline(t time.Time) error  { return nil }
func (c *cmdConn) SetWriteDeadline(t time.Time) error { return nil }
