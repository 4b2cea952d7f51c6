package cli

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hlsbench/hlsbench/origin"
)

// `hlsbench origin` says where it listens, serves exact sizes, and stops
// cleanly when interrupted.
func TestOriginCommand(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pr, pw := io.Pipe()
	done := make(chan int, 1)
	go func() {
		done <- Run(ctx, []string{"origin", "--listen", "127.0.0.1:0", "--control", "127.0.0.1:0",
			"--manifest-size", "3000", "--first-byte-delay", "0", "--transfer-rate", "0"}, pw, io.Discard)
		pw.Close()
	}()
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	go io.Copy(io.Discard, pr)
	f := strings.Fields(line) // origin: data http://A control http://B
	if len(f) != 5 || f[0] != "origin:" {
		t.Fatalf("first line %q", line)
	}
	resp, err := http.Get(f[2] + "/stream/index.m3u8")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || len(b) != 3000 || !strings.HasPrefix(string(b), "#EXTM3U") {
		t.Errorf("playlist: %s, %d bytes", resp.Status, len(b))
	}
	if resp, err := http.Get(f[4] + "/stats"); err != nil || resp.StatusCode != 200 {
		t.Errorf("control /stats: %v", err)
	}
	cancel()
	select {
	case code := <-done:
		if code != 0 {
			t.Errorf("exit %d after interrupt, want 0", code)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("origin did not stop")
	}
}

// The origin a run starts as a child process is the one its workload asked
// for: origin.ChildArgs carries every field a workload sets.
func TestOriginChildArgs(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cfg := origin.Config{SegmentSize: 1000, ManifestSize: 3000, FirstByteDelay: origin.NoDelay, TransferRate: origin.Unlimited,
		CacheControl: origin.CacheControl{Master: "public, max-age=7", Manifest: "public, max-age=8", Segment: "public, max-age=9"}}
	data, done := serveChildArgs(t, ctx, cfg)
	for _, c := range []struct {
		path, cc string
		size     int
	}{{origin.SegmentPath(3), "public, max-age=9", 1000}, {origin.ManifestPath, "public, max-age=8", 3000}, {origin.MasterPath, "public, max-age=7", -1}} {
		resp, err := http.Get(data + c.path)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || (c.size >= 0 && len(b) != c.size) || resp.Header.Get("Cache-Control") != c.cc {
			t.Errorf("%s: %d, %d bytes, Cache-Control %q; want %d bytes and %q", c.path, resp.StatusCode, len(b), resp.Header.Get("Cache-Control"), c.size, c.cc)
		}
	}
	cancel()
	if code := <-done; code != 0 {
		t.Errorf("exit %d", code)
	}
}

// serveChildArgs runs `hlsbench origin` with origin.ChildArgs(cfg) until ctx
// ends: its data URL, and its exit code once it does.
func serveChildArgs(t *testing.T, ctx context.Context, cfg origin.Config) (string, <-chan int) {
	t.Helper()
	pr, pw := io.Pipe()
	done := make(chan int, 1)
	go func() {
		done <- Run(ctx, origin.ChildArgs(cfg, "127.0.0.1:0"), pw, io.Discard)
		pw.Close()
	}()
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	go io.Copy(io.Discard, pr)
	f := strings.Fields(line)
	if len(f) != 5 {
		t.Fatalf("first line %q", line)
	}
	return f[2], done
}
