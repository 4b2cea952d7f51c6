package origin

import (
	"fmt"
	"strconv"
	"strings"
)

var byteUnits = []struct {
	suffix string
	n      int64
}{
	{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30},
	{"kB", 1e3}, {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9},
	{"B", 1},
}

// FormatBytes writes n bytes with the largest binary unit that divides it
// (64KiB, 4MiB), or plain.
func FormatBytes(n int64) string {
	for _, u := range []struct {
		suffix string
		n      int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n != 0 && n%u.n == 0 {
			return strconv.FormatInt(n/u.n, 10) + u.suffix
		}
	}
	return strconv.FormatInt(n, 10)
}

// ParseBytes reads a number of bytes, with or without a unit: 2048, 64KiB,
// 4MiB, 25MB (and 25MiB/s, for a rate).
func ParseBytes(s string) (int64, error) {
	num, mult := strings.TrimSpace(s), int64(1)
	num = strings.TrimSuffix(num, "/s")
	for _, u := range byteUnits {
		if rest, ok := strings.CutSuffix(num, u.suffix); ok {
			num, mult = strings.TrimSpace(rest), u.n
			break
		}
	}
	v, err := strconv.ParseInt(num, 10, 64)
	if err != nil || v < 0 || v > (1<<62)/mult {
		return 0, fmt.Errorf("%q: want a number of bytes, optionally with a unit (KiB, MiB, GiB, kB, MB, GB)", s)
	}
	return v * mult, nil
}

// FormatByteList writes sizes as ParseByteList reads them; an empty,
// non-nil list is "none".
func FormatByteList(b []int64) string {
	if b != nil && len(b) == 0 {
		return "none"
	}
	parts := make([]string, len(b))
	for i, v := range b {
		parts[i] = FormatBytes(v)
	}
	return strings.Join(parts, ",")
}

// ParseByteList reads a comma list of sizes (32MiB,128MiB), or none.
func ParseByteList(s string) ([]int64, error) {
	if strings.TrimSpace(s) == "none" {
		return []int64{}, nil
	}
	var out []int64
	for _, part := range strings.Split(s, ",") {
		v, err := ParseBytes(part)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

// FormatLadder writes an ABR ladder as ParseLadder reads it.
func FormatLadder(b []int64) string {
	parts := make([]string, len(b))
	for i, v := range b {
		parts[i] = FormatBitrate(v)
	}
	return strings.Join(parts, ",")
}

// ParseLadder reads an ABR ladder in bits per second, each written plain
// or with k (1e3) or M (1e6): 150k,300k,600k,1.2M.
func ParseLadder(s string) ([]int64, error) {
	var v []int64
	for part := range strings.SplitSeq(s, ",") {
		bps, ok := ParseBitrate(strings.TrimSpace(part))
		if !ok {
			return nil, fmt.Errorf("%q: want bitrates in bits per second separated by commas, each plain or with k or M, e.g. %s", s, FormatLadder(DefaultLadder))
		}
		v = append(v, bps)
	}
	return v, nil
}

// FormatBitrate writes v the way a person would type it, exactly: k or M
// only when no digits are lost.
func FormatBitrate(v int64) string {
	switch {
	case v >= 1e6 && v%1e3 == 0:
		s := strconv.FormatInt(v/1e6, 10)
		if frac := v % 1e6 / 1e3; frac != 0 {
			s += strings.TrimRight(fmt.Sprintf(".%03d", frac), "0")
		}
		return s + "M"
	case v >= 1e3 && v%1e3 == 0:
		return strconv.FormatInt(v/1e3, 10) + "k"
	}
	return strconv.FormatInt(v, 10)
}

// ParseBitrate reads 600000, 600k or 0.6M; a fraction must come to whole
// bits per second.
func ParseBitrate(s string) (int64, bool) {
	num, mult := s, int64(1)
	if rest, ok := strings.CutSuffix(s, "k"); ok {
		num, mult = rest, 1e3
	} else if rest, ok := strings.CutSuffix(s, "M"); ok {
		num, mult = rest, 1e6
	}
	whole, frac, dotted := strings.Cut(num, ".")
	if !allDigits(whole) || dotted && !allDigits(frac) {
		return 0, false
	}
	frac = strings.TrimRight(frac, "0")
	scale := mult // divided by 10 per digit of frac: then the worth of its last
	for range frac {
		if scale /= 10; scale == 0 {
			return 0, false // finer than a bit per second
		}
	}
	w, err := strconv.ParseInt(whole, 10, 64)
	if err != nil || w > (1<<62)/mult {
		return 0, false
	}
	var f int64
	if frac != "" {
		if f, err = strconv.ParseInt(frac, 10, 64); err != nil {
			return 0, false
		}
	}
	return w*mult + f*scale, true
}

func allDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
