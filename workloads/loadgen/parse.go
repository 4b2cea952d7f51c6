package loadgen

import (
	"bytes"
	"errors"
	"hash/crc32"
	"math"
)

// maxHeaderBytes bounds a response's status line and headers. A larger header
// block is a protocol error, not a reason to grow a buffer per connection.
const maxHeaderBytes = 32 << 10

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// CacheClaim is what a proxy says about the answer in X-Cache and Age. It is a
// claim only: staleness is proven elsewhere, from the origin's evidence.
type CacheClaim uint8

// Cache claims, from X-Cache (first token) or, without it, from Age.
const (
	CacheUnknown CacheClaim = iota
	CacheHit
	CacheMiss
	CacheStale
)

func (c CacheClaim) String() string {
	switch c {
	case CacheHit:
		return "hit"
	case CacheMiss:
		return "miss"
	case CacheStale:
		return "stale"
	}
	return "unknown"
}

// ResponseInfo is what a body check sees of a response once its headers are in.
type ResponseInfo struct {
	Status        int
	ContentLength int64 // -1 when the response has none
	// RangeStart, RangeEnd and RangeTotal come from Content-Range on a 206
	// (RangeTotal -1 for "*"); HasRange tells whether one was parsed.
	RangeStart, RangeEnd, RangeTotal int64
	HasRange                         bool
	Cache                            CacheClaim
	// Object is the request's index in Pass.Paths (0 with one path), so
	// that a BodyCheck knows which object the body should be; Head says
	// the request was a HEAD, whose answer has no body.
	Object int
	Head   bool
	// Header holds the raw status line and header block; it is only valid
	// during the call it is passed to.
	Header []byte
}

// BodyCheck validates response bodies beyond what the generator checks itself
// (status, length, declared checksum). One is made per connection and reused
// for every response on it, so it can keep its buffers.
type BodyCheck interface {
	// Begin starts a response; offset is where the body starts in the object
	// (the range start on a 206, else 0).
	Begin(info *ResponseInfo, offset int64)
	// Write receives the body as it arrives; it must not keep p.
	Write(p []byte)
	// End reports whether the body was good.
	End() error
}

type parseState uint8

const (
	stHeader parseState = iota
	stBody
	stChunkSize
	stChunkData
	stChunkDataCRLF
	stTrailer
	stUntilClose
	stDone
)

// errKind is the class an error is counted under. The names are part of the
// JSON output (errors_by_kind).
type errKind uint8

const (
	errNone      errKind = iota
	errConnect           // the connection could not be opened
	errTimeout           // no complete answer within the timeout
	errStatus            // unexpected status code
	errShortBody         // body shorter than Content-Length or the range
	errChecksum          // body does not match the declared checksum
	errRange             // 206 whose Content-Range does not answer the request
	errProtocol          // malformed HTTP
	errIO                // connection reset or closed before an answer
	errBody              // rejected by the caller's BodyCheck
	errDropped           // never sent: every connection busy and the waiting queue full
	numErrKinds
)

var errKindNames = [numErrKinds]string{
	errNone:      "none",
	errConnect:   "connect",
	errTimeout:   "timeout",
	errStatus:    "status",
	errShortBody: "short_body",
	errChecksum:  "checksum",
	errRange:     "range",
	errProtocol:  "protocol",
	errIO:        "io",
	errBody:      "body",
	errDropped:   "dropped",
}

func (k errKind) String() string { return errKindNames[k] }

// ErrorKinds lists every error kind the generator counts, in output order.
func ErrorKinds() []string {
	return append([]string(nil), errKindNames[1:]...)
}

var errMalformed = errors.New("malformed response")

// expect is what a request expects of its answer.
type expect struct {
	status int
	head   bool
	// crcHeader names the header in which a server declares the CRC-32C
	// of the whole body (Options.ChecksumHeader); "" checks none.
	crcHeader string
	// rangeFirst and rangeLast are the requested byte range (rangeLast -1
	// for an open range); hasRange is false without a Range header.
	rangeFirst, rangeLast int64
	hasRange              bool
}

// response is an incremental HTTP/1.1 response parser. It is fed whatever the
// socket returned, never copies body bytes, and allocates nothing once its
// header buffer exists.
type response struct {
	state    parseState
	hdr      []byte // status line and headers, then a chunk-size or trailer line
	info     ResponseInfo
	chunked  bool
	close    bool
	left     int64 // bytes left in the body or the current chunk
	bodyRead int64
	// sawBytes is true once any byte of this response arrived.
	sawBytes bool

	hasCRC  bool
	wantCRC uint32
	crc     uint32

	check BodyCheck
	// bodyErr is what check.End returned for a rejected body.
	bodyErr error
	// object is the request's index in Pass.Paths, for info.Object.
	object int32
}

func newResponse(check BodyCheck) response {
	return response{hdr: make([]byte, 0, 4096), check: check}
}

func (r *response) reset() {
	r.state = stHeader
	r.hdr = r.hdr[:0]
	r.info = ResponseInfo{}
	r.chunked, r.close = false, false
	r.left, r.bodyRead = 0, 0
	r.sawBytes = false
	r.hasCRC, r.wantCRC, r.crc = false, 0, 0
	r.bodyErr = nil
}

// feed parses p. It returns how many bytes belong to this response and
// whether the response is complete; bytes past the end are the caller's to
// judge (we never pipeline, so they are a protocol error there).
func (r *response) feed(p []byte, ex *expect) (int, bool, error) {
	if len(p) > 0 {
		r.sawBytes = true
	}
	used := 0
	for used < len(p) || r.state == stDone {
		switch r.state {
		case stDone:
			return used, true, nil
		case stHeader:
			n, complete, err := r.feedHeader(p[used:], ex)
			used += n
			if err != nil {
				return used, false, err
			}
			if !complete {
				return used, false, nil
			}
			// A complete block: the real answer's, or an interim one whose
			// successor may follow in the same read.
		case stBody, stChunkData:
			n := int64(len(p) - used)
			if n > r.left {
				n = r.left
			}
			r.body(p[used : used+int(n)])
			used += int(n)
			r.left -= n
			if r.left == 0 {
				if r.state == stBody {
					r.state = stDone
				} else {
					r.state = stChunkDataCRLF
					r.hdr = r.hdr[:0]
				}
			}
		case stUntilClose:
			r.body(p[used:])
			used = len(p)
		case stChunkSize, stChunkDataCRLF, stTrailer:
			line, n, ok, err := r.line(p[used:])
			used += n
			if err != nil {
				return used, false, err
			}
			if !ok {
				return used, false, nil
			}
			if err := r.onLine(line); err != nil {
				return used, false, err
			}
		}
	}
	return used, r.state == stDone, nil
}

// line collects one CRLF-terminated line, across reads if needed.
func (r *response) line(p []byte) (line []byte, used int, ok bool, err error) {
	i := bytes.IndexByte(p, '\n')
	if i < 0 {
		if len(r.hdr)+len(p) > maxHeaderBytes {
			return nil, len(p), false, errMalformed
		}
		r.hdr = append(r.hdr, p...)
		return nil, len(p), false, nil
	}
	if len(r.hdr)+i > maxHeaderBytes {
		return nil, i + 1, false, errMalformed
	}
	if len(r.hdr) == 0 {
		line = p[:i]
	} else {
		r.hdr = append(r.hdr, p[:i]...)
		line = r.hdr
	}
	r.hdr = r.hdr[:0]
	return bytes.TrimSuffix(line, []byte{'\r'}), i + 1, true, nil
}

func (r *response) onLine(line []byte) error {
	switch r.state {
	case stChunkDataCRLF:
		if len(line) != 0 {
			return errMalformed
		}
		r.state = stChunkSize
	case stChunkSize:
		if i := bytes.IndexByte(line, ';'); i >= 0 {
			line = line[:i]
		}
		size, ok := parseHex(bytes.TrimSpace(line))
		if !ok {
			return errMalformed
		}
		if size == 0 {
			r.state = stTrailer
			return nil
		}
		r.left = size
		r.state = stChunkData
	case stTrailer:
		if len(line) == 0 {
			r.state = stDone
		}
	}
	return nil
}

func (r *response) body(p []byte) {
	if len(p) == 0 {
		return
	}
	r.bodyRead += int64(len(p))
	if r.hasCRC {
		r.crc = crc32.Update(r.crc, castagnoli, p)
	}
	if r.check != nil {
		r.check.Write(p)
	}
}

func (r *response) feedHeader(p []byte, ex *expect) (int, bool, error) {
	// Find the blank line that ends the header block; it may straddle reads.
	old := len(r.hdr)
	start := old - 3
	if start < 0 {
		start = 0
	}
	take := len(p)
	if old+take > maxHeaderBytes {
		take = maxHeaderBytes - old
	}
	r.hdr = append(r.hdr, p[:take]...)
	i := bytes.Index(r.hdr[start:], []byte("\r\n\r\n"))
	if i < 0 {
		if len(r.hdr) >= maxHeaderBytes {
			return take, false, errMalformed
		}
		return take, false, nil
	}
	end := start + i + 4
	used := end - old
	err := r.parseHeader(r.hdr[:end], ex)
	r.hdr = r.hdr[:0]
	return used, err == nil, err
}

func (r *response) parseHeader(h []byte, ex *expect) error {
	r.info = ResponseInfo{ContentLength: -1, RangeTotal: -1, Header: h, Object: int(r.object), Head: ex.head}
	r.chunked, r.close, r.hasCRC = false, false, false
	age := int64(-1)
	xcache := false

	eol := bytes.IndexByte(h, '\n')
	status := bytes.TrimSuffix(h[:eol], []byte{'\r'})
	if len(status) < 12 || !bytes.HasPrefix(status, []byte("HTTP/1.")) || status[8] != ' ' {
		return errMalformed
	}
	code, ok := parseDec(status[9:12])
	if !ok || (len(status) > 12 && status[12] != ' ') {
		return errMalformed
	}
	r.info.Status = int(code)
	if status[7] == '0' {
		r.close = true // HTTP/1.0 closes unless it says keep-alive
	}

	rest := h[eol+1:]
	for len(rest) > 0 {
		i := bytes.IndexByte(rest, '\n')
		if i < 0 {
			return errMalformed
		}
		line := bytes.TrimSuffix(rest[:i], []byte{'\r'})
		rest = rest[i+1:]
		if len(line) == 0 {
			break
		}
		c := bytes.IndexByte(line, ':')
		if c <= 0 {
			return errMalformed
		}
		name, val := line[:c], bytes.TrimSpace(line[c+1:])
		switch {
		case equalFold(name, "content-length"):
			n, ok := parseDec(val)
			if !ok || (r.info.ContentLength >= 0 && r.info.ContentLength != n) {
				return errMalformed
			}
			r.info.ContentLength = n
		case equalFold(name, "transfer-encoding"):
			r.chunked = hasSuffixFold(val, "chunked")
		case equalFold(name, "connection"):
			if containsFold(val, "close") {
				r.close = true
			} else if containsFold(val, "keep-alive") {
				r.close = false
			}
		case equalFold(name, "content-range"):
			// "bytes */1000" on a 416 is well formed but names no range; a
			// 206 without a usable one fails the verdict as errRange.
			if s, e, t, ok := parseContentRange(val); ok {
				r.info.RangeStart, r.info.RangeEnd, r.info.RangeTotal, r.info.HasRange = s, e, t, true
			}
		case equalFold(name, "x-cache"):
			xcache = true
			r.info.Cache = parseXCache(val)
		case equalFold(name, "age"):
			if n, ok := parseDec(val); ok {
				age = n
			}
		case ex.crcHeader != "" && equalFold(name, ex.crcHeader):
			if v, ok := parseHex(val); ok && len(val) == 8 {
				r.hasCRC, r.wantCRC = true, uint32(v)
			}
		}
	}
	if !xcache && age >= 0 {
		// Without X-Cache, a positive Age says the answer came from a cache.
		if age > 0 {
			r.info.Cache = CacheHit
		} else {
			r.info.Cache = CacheMiss
		}
	}
	// Only a whole object can be checked against the whole object's checksum.
	if r.info.Status != 200 || ex.head {
		r.hasCRC = false
	}

	switch {
	case r.info.Status >= 100 && r.info.Status < 200 && r.info.Status != 101:
		r.state = stHeader
		return nil
	case ex.head || r.info.Status == 204 || r.info.Status == 304:
		r.state = stDone
	case r.chunked:
		r.state = stChunkSize
	case r.info.ContentLength >= 0:
		r.left = r.info.ContentLength
		r.state = stBody
		if r.left == 0 {
			r.state = stDone
		}
	default:
		r.state = stUntilClose
		r.close = true
	}
	if r.check != nil {
		off := int64(0)
		if r.info.HasRange {
			off = r.info.RangeStart
		}
		r.check.Begin(&r.info, off)
	}
	return nil
}

// verdict judges a complete response against what the request expected.
func (r *response) verdict(ex *expect) errKind {
	if r.info.Status != ex.status {
		return errStatus
	}
	if r.info.ContentLength >= 0 && !ex.head && r.info.Status != 304 && r.info.Status != 204 && r.bodyRead != r.info.ContentLength {
		return errShortBody
	}
	if r.info.Status == 206 {
		if !r.info.HasRange {
			return errRange
		}
		if !ex.head && r.bodyRead != r.info.RangeEnd-r.info.RangeStart+1 {
			return errShortBody
		}
		if ex.hasRange && !rangeAnswers(ex, &r.info) {
			return errRange
		}
	}
	if r.hasCRC && r.crc != r.wantCRC {
		return errChecksum
	}
	if r.check != nil {
		if r.bodyErr = r.check.End(); r.bodyErr != nil {
			return errBody
		}
	}
	return errNone
}

// rangeAnswers tells whether a Content-Range is the one the request asked for.
func rangeAnswers(ex *expect, ri *ResponseInfo) bool {
	first, last := ex.rangeFirst, ex.rangeLast
	total := ri.RangeTotal
	if first < 0 { // suffix range: the last n bytes
		if total < 0 {
			return true
		}
		first, last = max(total-ex.rangeLast, 0), total-1
	}
	if total >= 0 && (last < 0 || last >= total) {
		last = total - 1
	}
	return ri.RangeStart == first && (last < 0 || ri.RangeEnd == last)
}

// eof judges a response whose connection closed before feed said it was done.
func (r *response) eof(ex *expect) errKind {
	switch {
	case r.state == stUntilClose:
		r.state = stDone
		return r.verdict(ex)
	case !r.sawBytes:
		return errIO
	case r.state == stHeader:
		return errProtocol
	}
	if r.info.Status != ex.status {
		return errStatus
	}
	return errShortBody
}

func parseXCache(v []byte) CacheClaim {
	// First token only: "HIT, MISS" is a shield hit seen through an edge miss
	// the other way round; the nearest cache speaks first.
	if i := bytes.IndexAny(v, ", "); i >= 0 {
		v = v[:i]
	}
	switch {
	case containsFold(v, "stale"), containsFold(v, "updating"), containsFold(v, "grace"):
		return CacheStale
	case containsFold(v, "hit"), equalFold(v, "revalidated"):
		return CacheHit
	case containsFold(v, "miss"), equalFold(v, "expired"), equalFold(v, "bypass"), containsFold(v, "pass"):
		return CacheMiss
	}
	return CacheUnknown
}

// parseContentRange reads "bytes a-b/total" or "bytes a-b/*".
func parseContentRange(v []byte) (start, end, total int64, ok bool) {
	if len(v) < 6 || !equalFold(v[:6], "bytes ") {
		return 0, 0, 0, false
	}
	v = bytes.TrimSpace(v[6:])
	dash := bytes.IndexByte(v, '-')
	slash := bytes.IndexByte(v, '/')
	if dash <= 0 || slash < dash+2 {
		return 0, 0, 0, false
	}
	if start, ok = parseDec(v[:dash]); !ok {
		return 0, 0, 0, false
	}
	if end, ok = parseDec(v[dash+1 : slash]); !ok || end < start {
		return 0, 0, 0, false
	}
	if t := v[slash+1:]; len(t) == 1 && t[0] == '*' {
		total = -1
	} else if total, ok = parseDec(t); !ok || end >= total {
		return 0, 0, 0, false
	}
	return start, end, total, true
}

// parseRangeHeader reads a single "bytes=a-b", "bytes=a-" or "bytes=-n" range
// from a request; first is -1 for a suffix range (then last holds n).
func parseRangeHeader(v string) (first, last int64, ok bool) {
	const p = "bytes="
	if len(v) <= len(p) || !equalFold([]byte(v[:len(p)]), p) {
		return 0, 0, false
	}
	v = v[len(p):]
	dash := -1
	for i := 0; i < len(v); i++ {
		if v[i] == ',' {
			return 0, 0, false // several ranges: multipart answers are not checked
		}
		if v[i] == '-' && dash < 0 {
			dash = i
		}
	}
	if dash < 0 {
		return 0, 0, false
	}
	a, b := []byte(v[:dash]), []byte(v[dash+1:])
	x, okA := parseDec(a)
	y, okB := parseDec(b)
	switch {
	case len(a) == 0 && okB:
		return -1, y, true
	case okA && len(b) == 0:
		return x, -1, true
	case okA && okB:
		return x, y, y >= x
	}
	return 0, 0, false
}

func parseDec(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 19 {
		return 0, false
	}
	var n int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		d := int64(c - '0')
		if n > (math.MaxInt64-d)/10 {
			return 0, false
		}
		n = n*10 + d
	}
	return n, true
}

func parseHex(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 15 {
		return 0, false
	}
	var n int64
	for _, c := range b {
		switch {
		case c >= '0' && c <= '9':
			n = n<<4 | int64(c-'0')
		case c >= 'a' && c <= 'f':
			n = n<<4 | int64(c-'a'+10)
		case c >= 'A' && c <= 'F':
			n = n<<4 | int64(c-'A'+10)
		default:
			return 0, false
		}
	}
	return n, true
}

func lower(c byte) byte {
	if c >= 'A' && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// equalFold compares ASCII case-insensitively without allocating.
func equalFold(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := range b {
		if lower(b[i]) != lower(s[i]) {
			return false
		}
	}
	return true
}

func containsFold(b []byte, s string) bool {
	for i := 0; i+len(s) <= len(b); i++ {
		if equalFold(b[i:i+len(s)], s) {
			return true
		}
	}
	return false
}

func hasSuffixFold(b []byte, s string) bool {
	return len(b) >= len(s) && equalFold(b[len(b)-len(s):], s)
}
