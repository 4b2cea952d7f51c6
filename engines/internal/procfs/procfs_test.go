package procfs

import (
	"fmt"
	"os"
	"syscall"
	"testing"
)

func TestParseStat(t *testing.T) {
	for _, tc := range []struct {
		line string
		want Stat
	}{
		{"6551 (varnishd) S 6536 6536 2413 0 -1 4194624 9 0 0 0 120 35 0 0 20 0 407 0 29351 1 2 3\n",
			Stat{PID: 6551, Comm: "varnishd", State: 'S', PPID: 6536, PGID: 6536, SID: 2413, UTime: 120, STime: 35, Start: 29351}},
		{"6536 (varnishd) S 1 6536 2413 0 -1 4194560 9 0 0 0 40 12 310 77 20 0 1 0 29300 1 2 3\n",
			Stat{PID: 6536, Comm: "varnishd", State: 'S', PPID: 1, PGID: 6536, SID: 2413, UTime: 40, STime: 12, CUTime: 310, CSTime: 77, Start: 29300}},
		{"77 (a) b) (c) Z 1 77 77 0 -1 0 0 0 0 0 1 2 0 0 20 0 1 0 99 0",
			Stat{PID: 77, Comm: "a) b) (c", State: 'Z', PPID: 1, PGID: 77, SID: 77, UTime: 1, STime: 2, Start: 99}},
		{"12 (nginx: worker) R 11 11 5 0 -1 0 0 0 0 0 18446744073709551615 0 0 0 20 0 1 0 18446744073709551615",
			Stat{PID: 12, Comm: "nginx: worker", State: 'R', PPID: 11, PGID: 11, SID: 5, UTime: 1<<64 - 1, Start: 1<<64 - 1}},
	} {
		got, err := ParseStat([]byte(tc.line))
		if err != nil || got != tc.want {
			t.Errorf("ParseStat(%q) = %+v, %v; want %+v", tc.line, got, err, tc.want)
		}
	}
	for _, bad := range []string{"", "12 (x", "x (y) S 1 2 3", "1 (a) S 1 2 3 0 -1 0 0 0 0 0 1 2 0 0 20 0 1 0",
		"1 (a) SS 1 2 3 0 -1 0 0 0 0 0 1 2 0 0 20 0 1 0 5", "1 (a) S 1 x 3 0 -1 0 0 0 0 0 1 2 0 0 20 0 1 0 5",
		"1 (a) S 1 2 3 0 -1 0 0 0 0 0 1 2 0 0 20 0 1 0 -5", "1 (a) S 1 2 3 0 -1 0 0 0 0 0 1 2 -3 0 20 0 1 0 5"} {
		if s, err := ParseStat([]byte(bad)); err == nil {
			t.Errorf("ParseStat(%q) = %+v, want an error", bad, s)
		}
	}
}

func TestReadSelf(t *testing.T) {
	s, err := ReadStat(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if s.PID != os.Getpid() || s.PPID != os.Getppid() || s.Start == 0 || s.Zombie() {
		t.Errorf("self: %+v", s)
	}
	tasks, err := ReadTaskStats(os.Getpid())
	if err != nil || len(tasks) == 0 {
		t.Fatalf("threads: %d, %v", len(tasks), err)
	}
	all, err := All()
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, a := range all {
		found = found || a == s || (a.PID == s.PID && a.Start == s.Start)
	}
	if !found {
		t.Error("All does not list this process")
	}
	st, err := ReadStatus(os.Getpid())
	if err != nil || st.HWM <= 0 || st.RSS <= 0 || st.HWM < st.RSS {
		t.Errorf("status %+v, %v", st, err)
	}
	// Touch 16 MB, give it back: the peak stays until it is reset.
	buf, err := syscall.Mmap(-1, 0, 16<<20, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < len(buf); i += 4096 {
		buf[i] = 1
	}
	if err := syscall.Munmap(buf); err != nil {
		t.Fatal(err)
	}
	high, _ := ReadStatus(os.Getpid())
	if high.HWM < high.RSS+12<<20 {
		t.Errorf("after 16 MB given back: %+v", high)
	}
	if err := ResetPeakRSS(os.Getpid()); err != nil {
		t.Logf("cannot reset the peak (not checked): %v", err)
	} else if low, _ := ReadStatus(os.Getpid()); low.HWM > high.HWM-12<<20 {
		t.Errorf("reset: peak %d, was %d", low.HWM, high.HWM)
	}
	if BootID() == "" {
		t.Error("no boot id")
	}
}

func FuzzParseStat(f *testing.F) {
	f.Add([]byte("6551 (varnishd) S 6536 6536 2413 0 -1 4194624 9 0 0 0 120 35 0 0 20 0 407 0 29351 1 2 3\n"))
	f.Add([]byte("77 (a) b) (c) Z 1 77 77 0 -1 0 0 0 0 0 1 2 0 0 20 0 1 0 99 0"))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := ParseStat(b)
		if err == nil && s.State == 0 {
			t.Errorf("parsed %+v without a state", s)
		}
	})
}

// statusFixture is an nginx worker's /proc/PID/status, shortened.
const statusFixture = `Name:	nginx
Umask:	0022
State:	S (sleeping)
Tgid:	4120
Pid:	4120
PPid:	4119
Uid:	33	33	33	33
Groups:	 
VmPeak:	   59144 kB
VmSize:	   58980 kB
VmLck:	       0 kB
VmHWM:	    6436 kB
VmRSS:	    5912 kB
RssAnon:	    1184 kB
VmSwap:	       0 kB
Threads:	1
voluntary_ctxt_switches:	1502
`

func TestParseStatus(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Status
	}{
		{statusFixture, Status{Name: "nginx", HWM: 6436 << 10, RSS: 5912 << 10}},
		// A zombie has no memory lines.
		{"Name:\tsh\nState:\tZ (zombie)\nTgid:\t77\n", Status{Name: "sh"}},
		{"Name:\tnginx: worker\nVmHWM:\t0 kB\nVmRSS:\t 1 kB", Status{Name: "nginx: worker", RSS: 1024}},
	} {
		got, err := ParseStatus([]byte(tc.in))
		if err != nil || got != tc.want {
			t.Errorf("ParseStatus(%q) = %+v, %v; want %+v", tc.in, got, err, tc.want)
		}
	}
	for _, bad := range []string{"", "VmHWM:\t1 kB\n", "Name:\tx\nVmHWM:\t1 MB\n", "Name:\tx\nVmHWM:\t1\n",
		"Name:\tx\nVmRSS:\t-1 kB\n", "Name:\tx\nVmHWM:\tx kB\n", "Name:\tx\nVmHWM:\t9007199254740993 kB\n"} {
		if s, err := ParseStatus([]byte(bad)); err == nil {
			t.Errorf("ParseStatus(%q) = %+v, want an error", bad, s)
		}
	}
}

func FuzzParseStatus(f *testing.F) {
	f.Add([]byte(statusFixture))
	f.Add([]byte("Name:\tsh\nState:\tZ (zombie)\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := ParseStatus(b)
		if err != nil {
			return
		}
		if s.HWM < 0 || s.RSS < 0 || s.HWM%1024 != 0 || s.RSS%1024 != 0 {
			t.Fatalf("parsed %+v", s)
		}
		// What it read, written back the kernel's way, reads the same.
		again, err := ParseStatus(fmt.Appendf(nil, "Name:\t%s\nVmHWM:\t%8d kB\nVmRSS:\t%8d kB\n", s.Name, s.HWM>>10, s.RSS>>10))
		if err != nil || again != s {
			t.Errorf("%+v written back reads %+v, %v", s, again, err)
		}
	})
}
