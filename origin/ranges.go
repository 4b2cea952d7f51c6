package origin

import (
	"math"
	"strings"
)

type rangeResult uint8

const (
	rangeNone          rangeResult = iota // serve the whole object
	rangeOne                              // serve start..end
	rangeUnsatisfiable                    // 416
)

// parseRange reads a Range header for an object of size bytes (size > 0).
// One satisfiable range gives start and end, inclusive and within the
// object. A header that is not bytes=…, is malformed, or asks for several
// ranges is ignored (the whole object is sent), as RFC 9110 §14.2 allows.
func parseRange(h string, size int64) (start, end int64, res rangeResult) {
	unit, set, ok := strings.Cut(h, "=")
	if !ok || !strings.EqualFold(strings.TrimSpace(unit), "bytes") {
		return 0, 0, rangeNone
	}
	var spec string
	specs := 0
	for s := range strings.SplitSeq(set, ",") {
		if s = strings.Trim(s, " \t"); s != "" { // empty list elements are allowed
			spec = s
			specs++
		}
	}
	if specs != 1 {
		return 0, 0, rangeNone
	}
	first, last, ok := strings.Cut(spec, "-")
	if !ok {
		return 0, 0, rangeNone
	}
	if first == "" { // suffix: the last n bytes
		n, ok := digits(last)
		switch {
		case !ok:
			return 0, 0, rangeNone
		case n == 0:
			return 0, 0, rangeUnsatisfiable
		}
		return max(0, size-n), size - 1, rangeOne
	}
	a, ok := digits(first)
	if !ok {
		return 0, 0, rangeNone
	}
	b := int64(math.MaxInt64)
	if last != "" {
		if b, ok = digits(last); !ok || b < a {
			return 0, 0, rangeNone
		}
	}
	if a >= size {
		return 0, 0, rangeUnsatisfiable
	}
	return a, min(b, size-1), rangeOne
}

// digits parses a non-empty run of ASCII digits, saturating at MaxInt64.
func digits(s string) (int64, bool) {
	if s == "" {
		return 0, false
	}
	var n int64
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		if n > (math.MaxInt64-int64(c-'0'))/10 {
			n = math.MaxInt64
			continue
		}
		n = n*10 + int64(c-'0')
	}
	return n, true
}

// etagListMatch reports whether an If-None-Match list names etag, with the
// weak comparison RFC 9110 §13.1.2 asks for.
func etagListMatch(list, etag string) bool {
	etag = strings.TrimPrefix(etag, "W/")
	for t := range strings.SplitSeq(list, ",") {
		t = strings.Trim(t, " \t")
		if t == "*" || strings.TrimPrefix(t, "W/") == etag {
			return true
		}
	}
	return false
}

// ParseRange applies a Range header to an object of size bytes exactly as
// the origin does, for servers that answer the origin's objects themselves
// (the null engine): 206 with start and end inclusive, 416 when no byte of
// the one range is in the object, or 200 for the whole object (no Range, a
// malformed one, or several ranges).
func ParseRange(h string, size int64) (start, end int64, status int) {
	if h == "" || size <= 0 {
		return 0, 0, 200
	}
	start, end, res := parseRange(h, size)
	switch res {
	case rangeOne:
		return start, end, 206
	case rangeUnsatisfiable:
		return 0, 0, 416
	}
	return 0, 0, 200
}
