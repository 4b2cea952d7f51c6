package cli

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
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
