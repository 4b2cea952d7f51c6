// Package testhosts makes hosts for tests of several machines on one: each
// host is a network namespace with one veth to a switch namespace (a
// bridge), an address of 198.18.0.0/24 (the range set aside for
// benchmarking network devices, RFC 2544) that exists inside those
// namespaces only, and, when asked, its own dockerd (own data root, exec
// root and socket). Traffic between them never leaves the namespaces.
//
// A test makes a Net, starts what it needs on its hosts, and closes it;
// a Net a killed test left behind is removed by the next New (its
// namespaces carry the PID that made them).
package testhosts

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Prefix begins the name of every namespace a Net makes: hbt-PID-NAME.
const Prefix = "hbt-"

// Subnet is where the hosts' addresses are.
var Subnet = netip.MustParsePrefix("198.18.0.0/24")

// Net is one test network: a switch and its hosts.
type Net struct {
	id     string // hbt-PID
	dir    string // sockets, data roots and logs
	hosts  []*Host
	closed bool
}

// Host is one namespace on the switch.
type Host struct {
	Name string
	NS   string     // the network namespace's name
	Addr netip.Addr // its address on the switch
	net  *Net

	dockerd *exec.Cmd
	exited  chan struct{} // closed when dockerd has exited
	// Docker is the endpoint of its dockerd (unix://…), "" without one.
	Docker string
	root   string
}

// Missing says what the machine lacks to make test hosts: root, ip, or
// (for dockerd) dockerd. "" when nothing is missing.
func Missing(docker bool) string {
	if os.Geteuid() != 0 {
		return "test hosts need root (network namespaces)"
	}
	for _, tool := range []string{"ip", "nsenter"} {
		if _, err := exec.LookPath(tool); err != nil {
			return "test hosts need " + tool + " (iproute2, util-linux)"
		}
	}
	if docker {
		if _, err := exec.LookPath("dockerd"); err != nil {
			return "test hosts need dockerd (docker.io)"
		}
	}
	return ""
}

// New makes a switch and one host per name, with addresses .2, .3, … in
// order; dir holds what their dockerds keep (a test's TempDir). What a
// killed test left is removed first.
func New(ctx context.Context, dir string, names ...string) (*Net, error) {
	if why := Missing(false); why != "" {
		return nil, errors.New(why)
	}
	Sweep(ctx)
	n := &Net{id: fmt.Sprintf("%s%d", Prefix, os.Getpid()), dir: dir}
	sw := n.id + "-sw"
	steps := [][]string{{"netns", "add", sw}, {"-n", sw, "link", "add", "br0", "type", "bridge"},
		{"-n", sw, "link", "set", "br0", "up"}}
	if err := n.ip(ctx, steps...); err != nil {
		n.Close()
		return nil, err
	}
	for i, name := range names {
		if strings.ContainsAny(name, "-/ ") || name == "" || name == "sw" {
			n.Close()
			return nil, fmt.Errorf("test host name %q: want letters and digits, not sw", name)
		}
		h := &Host{Name: name, NS: n.id + "-" + name, Addr: Subnet.Addr().Next().Next(), net: n}
		for range i {
			h.Addr = h.Addr.Next()
		}
		port := fmt.Sprintf("p%d", i)
		err := n.ip(ctx, []string{"netns", "add", h.NS},
			[]string{"-n", h.NS, "link", "set", "lo", "up"},
			[]string{"-n", h.NS, "link", "add", "eth0", "type", "veth", "peer", "name", port, "netns", sw},
			[]string{"-n", h.NS, "addr", "add", fmt.Sprintf("%s/%d", h.Addr, Subnet.Bits()), "dev", "eth0"},
			[]string{"-n", h.NS, "link", "set", "eth0", "up"},
			[]string{"-n", sw, "link", "set", port, "master", "br0"},
			[]string{"-n", sw, "link", "set", port, "up"})
		n.hosts = append(n.hosts, h)
		if err != nil {
			n.Close()
			return nil, err
		}
	}
	return n, nil
}

// Host is the host named name, nil if there is none.
func (n *Net) Host(name string) *Host {
	for _, h := range n.hosts {
		if h.Name == name {
			return h
		}
	}
	return nil
}

// Command is name with args run inside h's network namespace. Only the
// network namespace is entered (nsenter), not ip netns exec's fresh /sys:
// a dockerd needs the machine's cgroup mounts.
func (h *Host) Command(ctx context.Context, name string, args ...string) *exec.Cmd {
	return exec.CommandContext(ctx, "nsenter", append([]string{"--net=/run/netns/" + h.NS, "--", name}, args...)...)
}

// StartDocker starts h's own dockerd and waits until it answers (up to a
// minute). Its containers with the host's network are in h's namespace.
func (h *Host) StartDocker(ctx context.Context) error {
	if why := Missing(true); why != "" {
		return errors.New(why)
	}
	// Socket paths are short: a unix socket's path has at most 107 bytes,
	// and containerd puts its own under the exec root.
	h.root = filepath.Join("/run", h.NS)
	data := filepath.Join(h.net.dir, h.Name+"-docker")
	for _, d := range []string{h.root, data} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return err
		}
	}
	sock := filepath.Join(h.root, "docker.sock")
	logf, err := os.Create(filepath.Join(h.net.dir, h.Name+"-dockerd.log"))
	if err != nil {
		return err
	}
	defer logf.Close()
	cmd := h.Command(context.Background(), "dockerd", "--data-root", data, "--exec-root", filepath.Join(h.root, "exec"),
		"--pidfile", filepath.Join(h.root, "docker.pid"), "-H", "unix://"+sock,
		"--bridge=none", "--iptables=false", "--ip6tables=false")
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("host %s: dockerd: %w", h.Name, err)
	}
	h.dockerd, h.exited = cmd, make(chan struct{})
	var waitErr error
	go func() { waitErr = cmd.Wait(); close(h.exited) }()
	deadline := time.Now().Add(time.Minute)
	for {
		if ok, _ := dockerAnswers(sock); ok {
			h.Docker = "unix://" + sock
			return nil
		}
		select {
		case <-h.exited:
			h.dockerd = nil
			return fmt.Errorf("host %s: dockerd exited (%v): %s", h.Name, waitErr, tail(logf.Name()))
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("host %s: dockerd did not answer in a minute: %s", h.Name, tail(logf.Name()))
		}
	}
}

// dockerAnswers asks the daemon's /_ping over its socket.
func dockerAnswers(sock string) (bool, error) {
	c := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", sock)
		}}}
	defer c.CloseIdleConnections()
	resp, err := c.Get("http://docker/_ping")
	if err != nil {
		return false, err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode == 200 && string(b) == "OK", nil
}

func tail(path string) string {
	b, _ := os.ReadFile(path)
	if len(b) > 1500 {
		b = b[len(b)-1500:]
	}
	return string(bytes.TrimSpace(b))
}

// Close stops every dockerd the Net started (they stop their
// containers), ends anything still running in its namespaces, and
// removes them.
func (n *Net) Close() error {
	if n.closed {
		return nil
	}
	n.closed = true
	for _, h := range n.hosts {
		if h.dockerd == nil {
			continue
		}
		// dockerd alone is asked: it stops its containers and its
		// containerd itself. Its group is killed if it has not in 30 s.
		_ = h.dockerd.Process.Signal(syscall.SIGTERM)
		select {
		case <-h.exited:
		case <-time.After(30 * time.Second):
			_ = syscall.Kill(-h.dockerd.Process.Pid, syscall.SIGKILL)
			<-h.exited
		}
	}
	for _, h := range n.hosts {
		unmountUnder(filepath.Join(n.dir, h.Name+"-docker"))
	}
	return removeAll(context.Background(), n.id)
}

// removeAll ends every process in the namespaces named id-* and deletes
// them, the switch last.
func removeAll(ctx context.Context, id string) error {
	names, err := list(ctx)
	if err != nil {
		return err
	}
	var errs []error
	var sw string
	for _, ns := range names {
		if !strings.HasPrefix(ns, id+"-") {
			continue
		}
		if ns == id+"-sw" {
			sw = ns
			continue
		}
		errs = append(errs, remove(ctx, ns))
	}
	if sw != "" {
		errs = append(errs, remove(ctx, sw))
	}
	if entries, err := os.ReadDir("/run"); err == nil {
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), id+"-") {
				dir := filepath.Join("/run", e.Name())
				unmountUnder(dir)
				errs = append(errs, os.RemoveAll(dir))
			}
		}
	}
	return errors.Join(errs...)
}

// unmountUnder detaches every mount below dir, deepest first: a dockerd
// leaves its network namespace bound at EXEC-ROOT/netns/default when it
// exits, which would keep the namespace, and its veth, alive.
func unmountUnder(dir string) {
	b, err := os.ReadFile("/proc/self/mounts")
	if err != nil {
		return
	}
	var points []string
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) > 1 && strings.HasPrefix(f[1], dir+"/") {
			points = append(points, f[1])
		}
	}
	for i := len(points) - 1; i >= 0; i-- {
		_ = syscall.Unmount(points[i], syscall.MNT_DETACH)
	}
}

// remove kills what runs in ns (processes a test started there: its
// dockerd's containers, a command) and deletes the namespace.
func remove(ctx context.Context, ns string) error {
	for range 3 {
		out, _ := exec.CommandContext(ctx, "ip", "netns", "pids", ns).Output()
		pids := strings.Fields(string(out))
		if len(pids) == 0 {
			break
		}
		for _, p := range pids {
			if pid, err := strconv.Atoi(p); err == nil {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	if out, err := exec.CommandContext(ctx, "ip", "netns", "del", ns).CombinedOutput(); err != nil {
		return fmt.Errorf("ip netns del %s: %v: %s", ns, err, bytes.TrimSpace(out))
	}
	return nil
}

// list is every network namespace's name.
func list(ctx context.Context) ([]string, error) {
	out, err := exec.CommandContext(ctx, "ip", "netns", "list").Output()
	if err != nil {
		return nil, fmt.Errorf("ip netns list: %w", err)
	}
	var names []string
	for _, line := range strings.Split(string(out), "\n") {
		if f := strings.Fields(line); len(f) > 0 {
			names = append(names, f[0])
		}
	}
	return names, nil
}

// Sweep removes the namespaces of Nets whose test process is gone (killed
// before its Close).
func Sweep(ctx context.Context) {
	names, err := list(ctx)
	if err != nil {
		return
	}
	dead := map[string]bool{}
	for _, ns := range names {
		rest, ok := strings.CutPrefix(ns, Prefix)
		if !ok {
			continue
		}
		pidS, _, _ := strings.Cut(rest, "-")
		pid, err := strconv.Atoi(pidS)
		if err != nil || pid == os.Getpid() {
			continue
		}
		if syscall.Kill(pid, 0) == syscall.ESRCH {
			dead[Prefix+pidS] = true
		}
	}
	for id := range dead {
		_ = removeAll(ctx, id)
	}
}

// ip runs ip with each argument list in turn.
func (n *Net) ip(ctx context.Context, steps ...[]string) error {
	for _, args := range steps {
		if out, err := exec.CommandContext(ctx, "ip", args...).CombinedOutput(); err != nil {
			return fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, bytes.TrimSpace(out))
		}
	}
	return nil
}
