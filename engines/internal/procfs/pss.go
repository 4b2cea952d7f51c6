package procfs

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// ParsePSS reads a process's proportional set size from its smaps_rollup
// (one "Pss:" line) or its smaps (one per mapping, summed), in bytes: each
// resident page counts as 1/n of a page when n processes map it, so the
// sizes of processes that share pages add up to the pages they hold. Other
// lines that start with Pss (Pss_Dirty, Pss_Anon, SwapPss) are not it.
// Empty text (a zombie, with no memory) reads as 0.
func ParsePSS(b []byte) (int64, error) {
	var sum int64
	seen := false
	for line := range bytes.Lines(b) {
		key, val, ok := strings.Cut(strings.TrimRight(string(line), "\n"), ":")
		if !ok || key != "Pss" {
			continue
		}
		n, err := parseKB(val)
		if err != nil {
			return 0, fmt.Errorf("smaps: Pss: %w", err)
		}
		sum += n
		seen = true
	}
	if !seen && len(bytes.TrimSpace(b)) > 0 {
		return 0, errors.New("smaps: no Pss line")
	}
	return sum, nil
}

// ReadPSS reads pid's proportional set size from /proc/PID/smaps_rollup
// (Linux 4.14 and later), else by summing /proc/PID/smaps. Both need the
// right to read the process's memory map: its own user, or root.
func ReadPSS(pid int) (int64, error) {
	dir := filepath.Join(Root, strconv.Itoa(pid))
	b, rerr := os.ReadFile(filepath.Join(dir, "smaps_rollup"))
	if rerr == nil {
		return ParsePSS(b)
	}
	b, err := os.ReadFile(filepath.Join(dir, "smaps"))
	if err != nil {
		// The smaps error is the one wrapped: smaps is on every kernel, so
		// its absence means the process is gone.
		return 0, fmt.Errorf("proportional set size of pid %d: neither smaps_rollup nor smaps could be read (%v; %w)", pid, rerr, err)
	}
	return ParsePSS(b)
}
