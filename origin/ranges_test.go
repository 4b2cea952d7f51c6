package origin

import (
	"math"
	"testing"
)

var rangeCases = []struct {
	h          string
	size       int64
	start, end int64
	res        rangeResult
}{
	{"bytes=0-0", 100, 0, 0, rangeOne},
	{"bytes=0-", 100, 0, 99, rangeOne},
	{"bytes=10-19", 100, 10, 19, rangeOne},
	{"bytes=90-200", 100, 90, 99, rangeOne},
	{"bytes=-1", 100, 99, 99, rangeOne},
	{"bytes=-100", 100, 0, 99, rangeOne},
	{"bytes=-1000", 100, 0, 99, rangeOne},
	{"bytes = 5-6", 100, 5, 6, rangeOne},
	{"Bytes=5-6", 100, 5, 6, rangeOne},
	{"bytes=5-6,", 100, 5, 6, rangeOne},
	{"bytes=99-99999999999999999999999", 100, 99, 99, rangeOne},
	{"bytes=100-", 100, 0, 0, rangeUnsatisfiable},
	{"bytes=100-200", 100, 0, 0, rangeUnsatisfiable},
	{"bytes=99999999999999999999999-", 100, 0, 0, rangeUnsatisfiable},
	{"bytes=-0", 100, 0, 0, rangeUnsatisfiable},
	{"bytes=0-1,5-6", 100, 0, 0, rangeNone},
	{"bytes=0-1, 500-600", 100, 0, 0, rangeNone},
	{"bytes=5-2", 100, 0, 0, rangeNone},
	{"bytes=", 100, 0, 0, rangeNone},
	{"bytes=-", 100, 0, 0, rangeNone},
	{"bytes=a-b", 100, 0, 0, rangeNone},
	{"bytes=+1-2", 100, 0, 0, rangeNone},
	{"bytes=1", 100, 0, 0, rangeNone},
	{"items=0-1", 100, 0, 0, rangeNone},
	{"0-1", 100, 0, 0, rangeNone},
}

func TestParseRange(t *testing.T) {
	for _, c := range rangeCases {
		s, e, res := parseRange(c.h, c.size)
		if res != c.res || (res == rangeOne && (s != c.start || e != c.end)) {
			t.Errorf("parseRange(%q, %d) = %d, %d, %d; want %d, %d, %d", c.h, c.size, s, e, res, c.start, c.end, c.res)
		}
	}
}

func FuzzParseRange(f *testing.F) {
	for _, c := range rangeCases {
		f.Add(c.h, c.size)
	}
	f.Add("bytes=0-9223372036854775807", int64(math.MaxInt64))
	f.Fuzz(func(t *testing.T, h string, size int64) {
		if size <= 0 {
			return
		}
		s, e, res := parseRange(h, size)
		if res == rangeOne && (s < 0 || s > e || e >= size) {
			t.Fatalf("parseRange(%q, %d) = %d-%d: outside the object", h, size, s, e)
		}
	})
}

func TestETagListMatch(t *testing.T) {
	for _, c := range []struct {
		list string
		want bool
	}{
		{`"a"`, true}, {`W/"a"`, true}, {`"b", "a"`, true}, {`*`, true}, {`"b"`, false}, {`a`, false}, {``, false},
	} {
		if got := etagListMatch(c.list, `"a"`); got != c.want {
			t.Errorf("etagListMatch(%q) = %v", c.list, got)
		}
	}
}
