// Package procfs reads the few facts hlsbench needs from Linux's /proc: a
// process's group, session, start time, CPU time and peak memory.
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

// Root is where proc is mounted.
const Root = "/proc"

// TicksPerSecond is USER_HZ, the unit of CPU times in /proc/stat and
// /proc/PID/stat: 100 on every Linux architecture's user ABI.
const TicksPerSecond = 100

// Stat is the part of /proc/PID/stat (or /proc/PID/task/TID/stat) we use.
type Stat struct {
	PID   int
	Comm  string // the command name, up to 15 bytes; may hold spaces and parentheses
	State byte   // R, S, D, Z, …
	PPID  int
	PGID  int
	SID   int
	UTime uint64 // clock ticks
	STime uint64 // clock ticks
	// CUTime and CSTime are the CPU time of children it has waited for
	// (reaped), theirs and their own reaped children's, in clock ticks.
	CUTime uint64
	CSTime uint64
	// Start is when the process started, in clock ticks since boot (field
	// 22). With the boot it identifies a process: a reused PID has a later
	// Start.
	Start uint64
}

// Zombie says the process has ended and only waits to be reaped.
func (s Stat) Zombie() bool { return s.State == 'Z' || s.State == 'X' }

// ParseStat reads one stat line: "pid (comm) state ppid pgrp session … ".
// comm may hold anything, so it is taken up to the last ')'.
func ParseStat(b []byte) (Stat, error) {
	open := bytes.IndexByte(b, '(')
	end := bytes.LastIndexByte(b, ')')
	if open < 1 || end < open {
		return Stat{}, errors.New("stat: no (comm)")
	}
	var s Stat
	var err error
	if s.PID, err = strconv.Atoi(string(bytes.TrimSpace(b[:open]))); err != nil {
		return Stat{}, fmt.Errorf("stat: pid: %w", err)
	}
	s.Comm = string(b[open+1 : end])
	// Fields after comm, numbered as in proc(5): 3 is state.
	f := strings.Fields(string(b[end+1:]))
	field := func(n int) string { return f[n-3] }
	if len(f) < 22-2 {
		return Stat{}, fmt.Errorf("stat: %d fields, want 22 or more", len(f)+2)
	}
	if len(field(3)) != 1 {
		return Stat{}, fmt.Errorf("stat: state %q", field(3))
	}
	s.State = field(3)[0]
	ints := []struct {
		n   int
		dst *int
	}{{4, &s.PPID}, {5, &s.PGID}, {6, &s.SID}}
	for _, x := range ints {
		if *x.dst, err = strconv.Atoi(field(x.n)); err != nil {
			return Stat{}, fmt.Errorf("stat: field %d: %w", x.n, err)
		}
	}
	uints := []struct {
		n   int
		dst *uint64
	}{{14, &s.UTime}, {15, &s.STime}, {16, &s.CUTime}, {17, &s.CSTime}, {22, &s.Start}}
	for _, x := range uints {
		if *x.dst, err = strconv.ParseUint(field(x.n), 10, 64); err != nil {
			return Stat{}, fmt.Errorf("stat: field %d: %w", x.n, err)
		}
	}
	return s, nil
}

// ReadStat reads /proc/PID/stat.
func ReadStat(pid int) (Stat, error) {
	return readStat(filepath.Join(Root, strconv.Itoa(pid), "stat"))
}

// ReadTaskStats reads the stat of every thread of pid.
func ReadTaskStats(pid int) ([]Stat, error) {
	dir := filepath.Join(Root, strconv.Itoa(pid), "task")
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	out := make([]Stat, 0, len(ents))
	for _, e := range ents {
		if s, err := readStat(filepath.Join(dir, e.Name(), "stat")); err == nil {
			out = append(out, s)
		}
	}
	return out, nil
}

func readStat(path string) (Stat, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Stat{}, err
	}
	return ParseStat(b)
}

// All reads the stat of every process; those that end while it reads are
// left out.
func All() ([]Stat, error) {
	ents, err := os.ReadDir(Root)
	if err != nil {
		return nil, err
	}
	out := make([]Stat, 0, len(ents))
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if s, err := ReadStat(pid); err == nil {
			out = append(out, s)
		}
	}
	return out, nil
}

// BootID identifies this boot: start times from another boot mean nothing.
func BootID() string {
	b, err := os.ReadFile(filepath.Join(Root, "sys/kernel/random/boot_id"))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}
