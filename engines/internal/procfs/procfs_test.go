package procfs

import (
	"os"
	"testing"
)

func TestParseStat(t *testing.T) {
	for _, tc := range []struct {
		line string
		want Stat
	}{
		{"6551 (varnishd) S 6536 6536 2413 0 -1 4194624 9 0 0 0 120 35 0 0 20 0 407 0 29351 1 2 3\n",
			Stat{PID: 6551, Comm: "varnishd", State: 'S', PPID: 6536, PGID: 6536, SID: 2413, UTime: 120, STime: 35, Start: 29351}},
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
		"1 (a) S 1 2 3 0 -1 0 0 0 0 0 1 2 0 0 20 0 1 0 -5"} {
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
