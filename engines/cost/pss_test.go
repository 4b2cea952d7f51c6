package cost_test

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/hlsbench/hlsbench/engines/cost"
)

// shareEnv makes the test binary a process that maps the file it names
// shared, touches every page, says "ready" and waits for its stdin to
// close.
const shareEnv = "HLSBENCH_COST_SHARE"

const shareMB = 32

func share(path string) int {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	buf, err := syscall.Mmap(int(f.Fd()), 0, shareMB<<20, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	for i := 0; i < len(buf); i += 4096 {
		buf[i] = 1
	}
	fmt.Println("ready")
	bufio.NewReader(os.Stdin).ReadString('\n')
	return 0
}

// Two processes of a group that map the same 32 MiB count it once in the
// group's proportional set size, and twice in its resident set.
func TestPSSNowCountsSharedPagesOnce(t *testing.T) {
	path := filepath.Join(t.TempDir(), "shared")
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(path, shareMB<<20); err != nil {
		t.Fatal(err)
	}
	pgid := 0
	for range 2 {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), shareEnv+"="+path)
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pgid: pgid}
		in, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { in.Close(); cmd.Wait() })
		if pgid == 0 {
			pgid = cmd.Process.Pid
		}
		if line, err := bufio.NewReader(out).ReadString('\n'); line != "ready\n" {
			t.Fatalf("helper said %q, %v", line, err)
		}
	}
	g := cost.Group{Name: "engine", PGID: pgid}
	pss, err := cost.PSSNow(g)
	if err != nil {
		t.Fatal(err)
	}
	rss, err := cost.RSSNow(g)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("two processes sharing %d MiB: PSS %.1f MiB, RSS %.1f MiB", shareMB, mb(pss), mb(rss))
	if pss < shareMB<<20 {
		t.Errorf("PSS %.1f MiB: want at least the %d MiB the group holds", mb(pss), shareMB)
	}
	if rss-pss < (shareMB-4)<<20 {
		t.Errorf("PSS %.1f MiB, RSS %.1f MiB: want the shared %d MiB once in PSS, twice in RSS", mb(pss), mb(rss), shareMB)
	}
	if _, err := cost.PSSNow(cost.Group{Name: "gone", PGID: 1 << 30}); err == nil {
		t.Error("a group with no process: no error")
	}
}
