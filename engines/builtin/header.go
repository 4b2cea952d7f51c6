package builtin

import (
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// ageValues are preformatted Age values for the first 1024 seconds, so the
// hit path does not format them.
var ageValues = func() [][]string {
	v := make([][]string, 1024)
	for i := range v {
		v[i] = []string{strconv.Itoa(i)}
	}
	return v
}()

func ageValue(d time.Duration) []string {
	s := int64(d / time.Second)
	if s < 0 {
		s = 0
	}
	if s < int64(len(ageValues)) {
		return ageValues[s]
	}
	return []string{strconv.FormatInt(s, 10)}
}

// hopByHop are the headers that describe one connection, not the object
// (RFC 9110 section 7.6.1), plus the ones the cache sets itself.
var hopByHop = map[string]bool{
	"Connection":          true,
	"Proxy-Connection":    true,
	"Keep-Alive":          true,
	"Proxy-Authenticate":  true,
	"Proxy-Authorization": true,
	"Te":                  true,
	"Trailer":             true,
	"Transfer-Encoding":   true,
	"Upgrade":             true,
	// Set by the cache.
	"Age":            true,
	"Content-Length": true,
	"X-Cache":        true,
}

var (
	acceptRangesValue = []string{"bytes"}
	zeroValue         = []string{"0"}
)

// answerHeader builds the headers answers are sent with from the origin's:
// everything but hop-by-hop headers (and those Connection names), each value
// slice clipped so that appending to it never writes into shared memory.
func answerHeader(origin http.Header, length int64, ok bool) http.Header {
	h := make(http.Header, len(origin)+2)
	for k, v := range origin {
		if hopByHop[k] {
			continue
		}
		h[k] = slices.Clip(v)
	}
	for _, conn := range origin["Connection"] {
		for _, name := range strings.Split(conn, ",") {
			delete(h, http.CanonicalHeaderKey(strings.TrimSpace(name)))
		}
	}
	if length >= 0 {
		h["Content-Length"] = []string{strconv.FormatInt(length, 10)}
	}
	if ok {
		h["Accept-Ranges"] = acceptRangesValue
	}
	return h
}

// ttl is the TTL of an object at path whose origin headers are h; 0 means do
// not store. See the package documentation.
func (p *Policy) ttl(path string, h http.Header) time.Duration {
	class := p.DefaultTTL
	switch {
	case strings.HasSuffix(path, ".m3u8"):
		class = p.ManifestTTL
	case strings.HasSuffix(path, ".ts"):
		class = p.SegmentTTL
	}
	if class > 0 {
		return class
	}
	cc := parseCacheControl(h["Cache-Control"])
	switch {
	case cc.noStore:
		return 0
	case cc.sMaxAge >= 0:
		return cc.sMaxAge
	case cc.maxAge >= 0:
		return cc.maxAge
	}
	return p.DefaultTTL
}

// cacheControl is what the cache reads of a Cache-Control header. Ages are -1
// when absent.
type cacheControl struct {
	noStore         bool // no-store, private or no-cache
	maxAge, sMaxAge time.Duration
}

// maxAgeSeconds caps ages so that converting them to a Duration cannot
// overflow (about 68 years, as RFC 9111 suggests 2^31 s).
const maxAgeSeconds = 1<<31 - 1

// parseCacheControl reads directives from every Cache-Control value. Unknown
// directives and malformed ages are ignored; a repeated directive keeps its
// first value.
func parseCacheControl(values []string) cacheControl {
	cc := cacheControl{maxAge: -1, sMaxAge: -1}
	for _, v := range values {
		for d := range strings.SplitSeq(v, ",") {
			name, arg, _ := strings.Cut(strings.TrimSpace(d), "=")
			name = strings.TrimSpace(name)
			arg = strings.Trim(strings.TrimSpace(arg), `"`)
			switch {
			case strings.EqualFold(name, "no-store"), strings.EqualFold(name, "private"), strings.EqualFold(name, "no-cache"):
				cc.noStore = true
			case strings.EqualFold(name, "max-age"):
				if cc.maxAge < 0 {
					cc.maxAge = parseAge(arg)
				}
			case strings.EqualFold(name, "s-maxage"):
				if cc.sMaxAge < 0 {
					cc.sMaxAge = parseAge(arg)
				}
			}
		}
	}
	return cc
}

// parseAge reads delta-seconds; -1 when malformed.
func parseAge(s string) time.Duration {
	if s == "" {
		return -1
	}
	var n int64
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return -1
		}
		if n < maxAgeSeconds {
			n = n*10 + int64(s[i]-'0')
		}
	}
	return time.Duration(min(n, maxAgeSeconds)) * time.Second
}

type rangeResult int

const (
	rangeIgnore        rangeResult = iota // no usable single byte range: send the whole object
	rangeOK                               // send [start, end)
	rangeUnsatisfiable                    // 416
)

// parseRange reads a Range header for an object of size bytes. Only a single
// byte range is honoured; anything else is ignored, as RFC 9110 allows.
// start and end are a half-open interval.
func parseRange(s string, size int64) (start, end int64, res rangeResult) {
	spec, ok := strings.CutPrefix(strings.TrimSpace(s), "bytes=")
	if !ok || strings.Contains(spec, ",") {
		return 0, 0, rangeIgnore
	}
	first, last, ok := strings.Cut(strings.TrimSpace(spec), "-")
	if !ok {
		return 0, 0, rangeIgnore
	}
	first, last = strings.TrimSpace(first), strings.TrimSpace(last)
	if first == "" {
		// Suffix range: the last n bytes.
		n, ok := parseDigits(last)
		if !ok {
			return 0, 0, rangeIgnore
		}
		if n == 0 || size == 0 {
			return 0, 0, rangeUnsatisfiable
		}
		return max(size-n, 0), size, rangeOK
	}
	a, ok := parseDigits(first)
	if !ok {
		return 0, 0, rangeIgnore
	}
	b := size - 1
	if last != "" {
		if b, ok = parseDigits(last); !ok || b < a {
			return 0, 0, rangeIgnore
		}
	}
	if a >= size {
		return 0, 0, rangeUnsatisfiable
	}
	return a, min(b, size-1) + 1, rangeOK
}

// parseDigits reads a non-negative decimal that fits in an int64.
func parseDigits(s string) (int64, bool) {
	if s == "" || len(s) > 18 {
		return 0, false
	}
	var n int64
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
		n = n*10 + int64(s[i]-'0')
	}
	return n, true
}

// rangeHeaders fills h for a 206 or 416 answer from the whole object's
// headers and returns the status.
func rangeHeaders(h, object http.Header, res rangeResult, start, end, size int64) int {
	for k, v := range object {
		if k != "Content-Length" {
			h[k] = v
		}
	}
	if res == rangeUnsatisfiable {
		h["Content-Range"] = []string{"bytes */" + strconv.FormatInt(size, 10)}
		h["Content-Length"] = zeroValue
		return http.StatusRequestedRangeNotSatisfiable
	}
	var b [80]byte
	cr := append(b[:0], "bytes "...)
	cr = strconv.AppendInt(cr, start, 10)
	cr = append(cr, '-')
	cr = strconv.AppendInt(cr, end-1, 10)
	cr = append(cr, '/')
	cr = strconv.AppendInt(cr, size, 10)
	v := []string{string(cr), strconv.FormatInt(end-start, 10)} // one backing array for both
	h["Content-Range"] = v[0:1:1]
	h["Content-Length"] = v[1:2:2]
	return http.StatusPartialContent
}
