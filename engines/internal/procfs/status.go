package procfs

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Status is the part of /proc/PID/status we use. Sizes are in bytes. A
// process without memory of its own (a zombie, a kernel thread) has no Vm
// lines: its sizes read as zero.
type Status struct {
	Name string
	// HWM is the peak resident set size (VmHWM): since the process started,
	// or since ResetPeakRSS. It counts shared pages (the binary, shared
	// memory) as every process mapping them does.
	HWM int64
	// RSS is the resident set size now (VmRSS).
	RSS int64
}

// ParseStatus reads the "Key:\tvalue" lines of /proc/PID/status. Sizes are
// "N kB", in units of 1024 bytes.
func ParseStatus(b []byte) (Status, error) {
	var s Status
	named := false
	for line := range bytes.Lines(b) {
		key, val, ok := strings.Cut(strings.TrimRight(string(line), "\n"), ":")
		if !ok {
			continue
		}
		var dst *int64
		switch key {
		case "Name":
			// The kernel escapes the name, so it holds no newline; it may
			// hold spaces.
			s.Name, named = strings.TrimPrefix(val, "\t"), true
			continue
		case "VmHWM":
			dst = &s.HWM
		case "VmRSS":
			dst = &s.RSS
		default:
			continue
		}
		n, err := parseKB(val)
		if err != nil {
			return Status{}, fmt.Errorf("status: %s: %w", key, err)
		}
		*dst = n
	}
	if !named {
		return Status{}, errors.New("status: no Name line")
	}
	return s, nil
}

// parseKB reads "    1772 kB" as bytes.
func parseKB(v string) (int64, error) {
	f := strings.Fields(v)
	if len(f) != 2 || f[1] != "kB" {
		return 0, fmt.Errorf("%q: want N kB", v)
	}
	n, err := strconv.ParseInt(f[0], 10, 64)
	if err != nil || n < 0 || n > math.MaxInt64/1024 {
		return 0, fmt.Errorf("%q: want N kB", v)
	}
	return n * 1024, nil
}

// ReadStatus reads /proc/PID/status.
func ReadStatus(pid int) (Status, error) {
	b, err := os.ReadFile(filepath.Join(Root, strconv.Itoa(pid), "status"))
	if err != nil {
		return Status{}, err
	}
	return ParseStatus(b)
}

// ResetPeakRSS sets pid's peak resident set size (VmHWM) to its size now,
// by writing 5 to /proc/PID/clear_refs (Linux 4.0 and later). It needs the
// right to write that file: root, or the process's own user while it is
// dumpable. Only the peak is reset; the page bits the other values clear
// are left alone.
func ResetPeakRSS(pid int) error {
	f, err := os.OpenFile(filepath.Join(Root, strconv.Itoa(pid), "clear_refs"), os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	_, werr := f.Write([]byte("5"))
	return errors.Join(werr, f.Close())
}
