package builtin

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

func FuzzParseRange(f *testing.F) {
	for _, s := range []string{
		"bytes=0-99", "bytes=100-", "bytes=-100", "bytes=0-1,5-6", "items=0-1", "bytes=5-1",
		"bytes= 1 - 2 ", "bytes=-0", "bytes=99999999999999999999-", "bytes=-", "bytes=", "",
	} {
		f.Add(s, int64(65536))
		f.Add(s, int64(0))
	}
	f.Fuzz(func(t *testing.T, s string, size int64) {
		if size < 0 {
			size = -size
		}
		if size < 0 {
			return // MinInt64
		}
		start, end, res := parseRange(s, size)
		switch res {
		case rangeOK:
			if start < 0 || start >= end || end > size {
				t.Fatalf("parseRange(%q, %d) = [%d, %d): outside the object", s, size, start, end)
			}
		case rangeIgnore, rangeUnsatisfiable:
		default:
			t.Fatalf("parseRange(%q, %d): result %d", s, size, res)
		}
		if !strings.Contains(s, "bytes=") && res != rangeIgnore {
			t.Fatalf("parseRange(%q, %d): honoured a header that is not a byte range", s, size)
		}
	})
}

func FuzzParseCacheControl(f *testing.F) {
	for _, s := range []string{
		"max-age=60", "public, max-age=30, s-maxage=5", `s-maxage="7"`, "no-store", "private",
		"max-age=99999999999999999999", "max-age=", "max-age=-1", "max-age=1, max-age=2", ",,,=",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		cc := parseCacheControl([]string{s})
		for _, d := range []time.Duration{cc.maxAge, cc.sMaxAge} {
			if d < -1 || d > maxAgeSeconds*time.Second {
				t.Fatalf("parseCacheControl(%q): age %v out of range", s, d)
			}
		}
		p := Policy{}
		if ttl := p.ttl("/x.ts", http.Header{"Cache-Control": {s}}); ttl < 0 {
			t.Fatalf("ttl(%q) = %v", s, ttl)
		}
	})
}
