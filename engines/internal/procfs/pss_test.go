package procfs

import (
	"os"
	"testing"
)

const rollupFixture = `56344baf7000-7ffe85e1b000 ---p 00000000 00:00 0                          [rollup]
Rss:                1752 kB
Pss:                 503 kB
Pss_Dirty:           116 kB
Pss_Anon:            116 kB
Pss_File:            387 kB
Pss_Shmem:             0 kB
Shared_Clean:       1580 kB
Private_Dirty:       116 kB
SwapPss:               0 kB
`

// Two mappings, each with its own Pss line (and a Pss_Dirty line, on newer
// kernels, that is not the figure).
const smapsFixture = `55d0c0a00000-55d0c0a02000 r--p 00000000 08:01 131 /usr/bin/sleep
Size:                  8 kB
Rss:                   8 kB
Pss:                   4 kB
Pss_Dirty:             0 kB
Shared_Clean:          8 kB
VmFlags: rd mr mw me sd
7f1e2c000000-7f1e2c021000 rw-p 00000000 00:00 0
Size:                132 kB
Rss:                  12 kB
Pss:                  12 kB
Pss_Dirty:            12 kB
VmFlags: rd wr mr mw me nr sd
`

// A process's proportional set size counts each page it shares with n
// processes as 1/n of a page: the smaps_rollup line, or the sum of smaps'
// lines, never Pss_Dirty, Pss_Anon or SwapPss.
func TestParsePSS(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
	}{
		{rollupFixture, 503 << 10},
		{smapsFixture, 16 << 10},
		{"", 0}, // a zombie: no memory
	} {
		if got, err := ParsePSS([]byte(tc.in)); err != nil || got != tc.want {
			t.Errorf("ParsePSS(%.40q) = %d, %v; want %d", tc.in, got, err, tc.want)
		}
	}
	for _, bad := range []string{"Rss:  1 kB\n", "Pss:  1 MB\n", "Pss: x kB\n", "Pss_Anon: 4 kB\n"} {
		if n, err := ParsePSS([]byte(bad)); err == nil {
			t.Errorf("ParsePSS(%q) = %d, want an error", bad, n)
		}
	}
}

// This process's own: read, and no larger than its resident set.
func TestReadPSSSelf(t *testing.T) {
	pss, err := ReadPSS(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	st, err := ReadStatus(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if pss <= 0 || pss > st.RSS+64<<10 {
		t.Errorf("PSS %d bytes, RSS %d: want 0 < PSS <= RSS", pss, st.RSS)
	}
	if _, err := ReadPSS(1 << 30); err == nil {
		t.Error("a process that does not exist: no error")
	}
}
