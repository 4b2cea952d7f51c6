package testhosts

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// The test binary plays a server or a client inside a namespace when
// these are set (see TestHostsTalk).
const (
	envListen = "HLSBENCH_TESTHOSTS_LISTEN"
	envDial   = "HLSBENCH_TESTHOSTS_DIAL"
)

func TestMain(m *testing.M) {
	if a := os.Getenv(envListen); a != "" {
		os.Exit(serveOnce(a))
	}
	if a := os.Getenv(envDial); a != "" {
		os.Exit(dialOnce(a))
	}
	os.Exit(m.Run())
}

// serveOnce answers one connection with the address it came from.
func serveOnce(addr string) int {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		fmt.Println(err)
		return 1
	}
	fmt.Println("ready")
	ln.(*net.TCPListener).SetDeadline(time.Now().Add(20 * time.Second))
	c, err := ln.Accept()
	if err != nil {
		fmt.Println(err)
		return 1
	}
	defer c.Close()
	fmt.Fprintf(c, "%s\n", c.RemoteAddr().(*net.TCPAddr).IP)
	return 0
}

func dialOnce(addr string) int {
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		fmt.Println(err)
		return 1
	}
	defer c.Close()
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		fmt.Println(err)
		return 1
	}
	fmt.Print(line)
	return 0
}

// need skips without root or ip, except under CI=true.
func need(t *testing.T, docker bool) {
	t.Helper()
	if why := Missing(docker); why != "" {
		if os.Getenv("CI") == "true" {
			t.Fatal(why)
		}
		t.Skip(why)
	}
}

// Two hosts on the switch reach each other at their addresses, and are
// gone, namespaces and all, after Close.
func TestHostsTalk(t *testing.T) {
	need(t, false)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	n, err := New(ctx, t.TempDir(), "a", "b")
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	a, b := n.Host("a"), n.Host("b")
	if a.Addr.String() != "198.18.0.2" || b.Addr.String() != "198.18.0.3" {
		t.Fatalf("addresses %v %v, want 198.18.0.2 and .3", a.Addr, b.Addr)
	}
	self, _ := os.Executable()
	addr := net.JoinHostPort(a.Addr.String(), "7070")
	srv := a.Command(ctx, self)
	srv.Env = append(os.Environ(), envListen+"="+addr)
	out, _ := srv.StdoutPipe()
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(out)
	if line, _ := r.ReadString('\n'); line != "ready\n" {
		t.Fatalf("server in a: %q", line)
	}
	cl := b.Command(ctx, self)
	cl.Env = append(os.Environ(), envDial+"="+addr)
	got, err := cl.CombinedOutput()
	if err != nil {
		t.Fatalf("client in b: %v: %s", err, got)
	}
	if strings.TrimSpace(string(got)) != b.Addr.String() {
		t.Errorf("a saw the client at %q, want b's address %v", got, b.Addr)
	}
	srv.Wait()
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	names, _ := list(ctx)
	for _, ns := range names {
		if strings.HasPrefix(ns, n.id+"-") {
			t.Errorf("namespace %s left after Close", ns)
		}
	}
}

// A Net whose test was killed is removed by the next New; a live one is
// not.
func TestSweep(t *testing.T) {
	need(t, false)
	ctx := context.Background()
	// A process that has exited is a dead owner.
	c := exec.Command("true")
	if err := c.Run(); err != nil {
		t.Fatal(err)
	}
	dead := fmt.Sprintf("%s%d", Prefix, c.Process.Pid)
	for _, ns := range []string{dead + "-sw", dead + "-x"} {
		if out, err := exec.Command("ip", "netns", "add", ns).CombinedOutput(); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
	}
	n, err := New(ctx, t.TempDir(), "a")
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	Sweep(ctx)
	names, _ := list(ctx)
	var left, mine []string
	for _, ns := range names {
		if strings.HasPrefix(ns, dead+"-") {
			left = append(left, ns)
		}
		if strings.HasPrefix(ns, n.id+"-") {
			mine = append(mine, ns)
		}
	}
	if len(left) > 0 {
		t.Errorf("a killed test's namespaces are left: %v", left)
	}
	if len(mine) != 2 {
		t.Errorf("this test's own namespaces: %v, want its switch and a", mine)
	}
}

// A host's dockerd answers on its own socket, and its host-network
// containers would share the host's namespace.
func TestHostDocker(t *testing.T) {
	need(t, true)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	n, err := New(ctx, t.TempDir(), "a")
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	h := n.Host("a")
	if err := h.StartDocker(ctx); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(h.Docker, "unix:///run/"+h.NS+"/") {
		t.Errorf("endpoint %q", h.Docker)
	}
	sock := strings.TrimPrefix(h.Docker, "unix://")
	if ok, err := dockerAnswers(sock); !ok {
		t.Fatalf("dockerd of a does not answer: %v", err)
	}
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(sock); err == nil {
		t.Errorf("%s left after Close", sock)
	}
	// dockerd binds its namespace under its exec root and leaves it
	// there: a mount left would keep the namespace alive.
	if b, _ := os.ReadFile("/proc/self/mounts"); strings.Contains(string(b), h.NS) {
		t.Errorf("mounts of %s left after Close", h.NS)
	}
}
