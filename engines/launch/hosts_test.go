package launch

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
	"sync/atomic"
	"testing"
	"time"
)

// fakeSSHEnv makes this test binary a stand-in for ssh: it writes its
// arguments to $fakeSSHEnv.args and carries its standard input and output
// to the unix socket $fakeSSHEnv, as `docker system dial-stdio` would to
// the remote daemon.
const fakeSSHEnv = "HLSBENCH_TEST_FAKE_SSH"

func TestMain(m *testing.M) {
	if sock := os.Getenv(fakeSSHEnv); sock != "" {
		os.WriteFile(sock+".args", []byte(strings.Join(os.Args[1:], " ")), 0o600)
		c, err := net.Dial("unix", sock)
		if err != nil {
			os.Stderr.WriteString("fake ssh: " + err.Error())
			os.Exit(255)
		}
		go func() { io.Copy(c, os.Stdin); c.(*net.UnixConn).CloseWrite() }()
		io.Copy(os.Stdout, c)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// fakeDaemon answers Docker's ping on a unix socket and counts the pings.
func fakeDaemon(t *testing.T) (sock string, pings *atomic.Int64) {
	t.Helper()
	sock = filepath.Join(t.TempDir(), "docker.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	pings = new(atomic.Int64)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/_ping") {
			pings.Add(1)
			w.Header().Set("Api-Version", "1.41")
			w.Write([]byte("OK"))
			return
		}
		http.NotFound(w, r)
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return sock, pings
}

func TestConnectHostUnixAndContext(t *testing.T) {
	sock, pings := fakeDaemon(t)
	ctx := context.Background()
	cli, err := ConnectHost(ctx, Host{Endpoint: "unix://" + sock}, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	cli.Close()

	// A context made by `docker context create lab --docker host=unix://…`.
	dir := t.TempDir()
	t.Setenv("DOCKER_CONFIG", dir)
	sum := sha256.Sum256([]byte("lab"))
	meta := filepath.Join(dir, "contexts", "meta", hex.EncodeToString(sum[:]))
	os.MkdirAll(meta, 0o700)
	os.WriteFile(filepath.Join(meta, "meta.json"),
		[]byte(`{"Name":"lab","Metadata":{},"Endpoints":{"docker":{"Host":"unix://`+sock+`","SkipTLSVerify":false}}}`), 0o600)
	cli, err = ConnectHost(ctx, Host{Endpoint: "lab"}, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	cli.Close()
	if pings.Load() < 2 {
		t.Errorf("%d pings, want one per connection", pings.Load())
	}
	if _, err := ConnectHost(ctx, Host{Endpoint: "nolab"}, 5*time.Second); err == nil || !strings.Contains(err.Error(), `no Docker context "nolab"`) {
		t.Errorf("an unknown context: %v", err)
	}
	if _, err := ConnectHost(ctx, Host{Endpoint: "unix://" + sock + ".none"}, 2*time.Second); err == nil || !strings.Contains(err.Error(), "no Docker daemon at unix://") {
		t.Errorf("no daemon: %v", err)
	}
}

// An ssh:// endpoint runs ssh with the user and port, and speaks the API
// over its standard input and output.
func TestConnectHostSSH(t *testing.T) {
	sock, pings := fakeDaemon(t)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	old := sshCommand
	sshCommand = self
	t.Cleanup(func() { sshCommand = old })
	t.Setenv(fakeSSHEnv, sock)
	cli, err := ConnectHost(context.Background(), Host{Endpoint: "ssh://me@edge1:2222"}, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	cli.Close()
	args, _ := os.ReadFile(sock + ".args")
	if !strings.Contains(string(args), "-l me -p 2222 -- edge1 docker system dial-stdio") || pings.Load() == 0 {
		t.Errorf("ssh ran with %q (%d pings)", args, pings.Load())
	}
}
