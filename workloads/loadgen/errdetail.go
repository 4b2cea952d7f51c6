package loadgen

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// maxSamples is how many distinct error messages a pass keeps (per event
// loop, then the most frequent of all loops).
const maxSamples = 5

// errDetail says what went wrong with one request. It is built without
// allocating, on the event loop; its message is formatted after the pass.
type errDetail struct {
	kind errKind
	// what is a fixed phrase, or a format of a and b with explicit indexes
	// (%[1]d, %[2]d; %[1]v when durations is set).
	what      string
	errno     unix.Errno
	err       error
	a, b      int64
	durations bool // a and b are nanoseconds
	// backoff marks a request failed at once, without a socket, because
	// the last connections died the same way.
	backoff bool
}

func (d *errDetail) same(o *errDetail) bool {
	if d.kind != o.kind || d.what != o.what || d.errno != o.errno || d.a != o.a || d.b != o.b || d.backoff != o.backoff {
		return false
	}
	if d.err == nil || o.err == nil {
		return d.err == o.err
	}
	return d.err == o.err || d.err.Error() == o.err.Error()
}

func (d *errDetail) message() string {
	s := d.what
	if strings.Contains(s, "%") {
		if d.durations {
			s = fmt.Sprintf(s, time.Duration(d.a), time.Duration(d.b))
		} else {
			s = fmt.Sprintf(s, d.a, d.b)
		}
	}
	if d.errno != 0 {
		s += ": " + d.errno.Error()
	}
	if d.err != nil {
		s += ": " + d.err.Error()
	}
	if d.backoff {
		s += " (not sent: the last connections failed the same way; one is retried at a time, with backoff)"
	}
	return s
}

type sample struct {
	d errDetail
	n int64
}

// connectDetail describes a failed connect or handshake.
func connectDetail(what string, err error) errDetail {
	d := errDetail{kind: errConnect, what: what}
	var errno unix.Errno
	if errors.As(err, &errno) {
		d.errno = errno
	} else {
		d.err = err
	}
	return d
}

// detail describes a failed answer from what the response parser saw.
func (s *shard) detail(c *conn, kind errKind) errDetail {
	r := &c.resp
	ri := &r.info
	d := errDetail{kind: kind}
	switch kind {
	case errStatus:
		d.what, d.a, d.b = "status %[1]d (want %[2]d)", int64(ri.Status), int64(s.sp.ex.status)
	case errShortBody:
		switch {
		case ri.ContentLength >= 0:
			d.what, d.a, d.b = "short body: %[1]d of %[2]d bytes", r.bodyRead, ri.ContentLength
		case ri.Status == 206 && ri.HasRange:
			d.what, d.a, d.b = "short body: %[1]d of the range's %[2]d bytes", r.bodyRead, ri.RangeEnd-ri.RangeStart+1
		default:
			d.what, d.a = "short body: connection closed %[1]d bytes into a chunked body", r.bodyRead
		}
	case errChecksum:
		d.what = "checksum mismatch"
	case errRange:
		if ri.HasRange {
			d.what, d.a, d.b = "range: Content-Range bytes %[1]d-%[2]d does not answer the request", ri.RangeStart, ri.RangeEnd
		} else {
			d.what = "range: 206 without a usable Content-Range"
		}
	case errProtocol:
		if r.state == stHeader {
			d.what = "malformed response header"
		} else {
			d.what = "malformed body framing"
		}
	case errIO:
		d.what = "connection closed before any byte of the answer"
	case errBody:
		d.what, d.err = "body check", r.bodyErr
	}
	return d
}
