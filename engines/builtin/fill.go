package builtin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// minGrow is the first buffer size when the origin sends no Content-Length.
const minGrow = 64 << 10

// userAgent identifies the cache's fetches at the origin.
const userAgent = "hlsbench-builtin"

var errFetchTimeout = errors.New("origin fetch timed out")

// fill is one origin fetch. Its readers stream from buf as it grows: the
// fetch publishes each chunk under mu and wakes them by closing wake; readers
// copy the slice header under mu and write to their clients without it.
type fill struct {
	key string
	hdr chan struct{} // closed once the fields below are set, or the fetch failed first

	// Set before hdr is closed, then read-only.
	status  int         // 0: failed before headers
	header  http.Header // prebuilt answer headers
	length  int64       // Content-Length, -1 unknown
	fetched time.Time

	mu   sync.Mutex
	buf  []byte // bytes so far; only ever appended to, so published prefixes never change
	done bool
	err  error
	wake chan struct{} // closed and replaced at each publish
}

func newFill(key string) *fill {
	return &fill{key: key, hdr: make(chan struct{}), length: -1, wake: make(chan struct{})}
}

// publish makes buf visible to readers.
func (f *fill) publish(buf []byte) {
	f.mu.Lock()
	f.buf = buf
	wake := f.wake
	f.wake = make(chan struct{})
	f.mu.Unlock()
	close(wake)
}

// end marks the fetch finished with buf as its final bytes, closing hdr if
// that had not happened.
func (f *fill) end(buf []byte, err error, hdrSent bool) {
	if !hdrSent {
		close(f.hdr)
	}
	f.mu.Lock()
	if hdrSent {
		f.buf = buf
	}
	f.done, f.err = true, err
	wake := f.wake
	f.mu.Unlock()
	close(wake)
}

// wait returns the bytes so far once there are more than off, or the fetch is
// done, or ctx ends (done and ctx.Err()).
func (f *fill) wait(ctx context.Context, off int64) (buf []byte, done bool, err error) {
	for {
		f.mu.Lock()
		buf, done, err, wake := f.buf, f.done, f.err, f.wake
		f.mu.Unlock()
		if int64(len(buf)) > off || done {
			return buf, done, err
		}
		select {
		case <-wake:
		case <-ctx.Done():
			return buf, true, ctx.Err()
		}
	}
}

func (c *Cache) runFill(it *item, f *fill) {
	defer c.wg.Done()
	res := c.fetch(f)
	// Store before readers see the end: a client that has every byte finds
	// the object stored when it asks again.
	c.finish(it, f, res.obj, res.failed)
	f.end(res.buf, res.err, res.hdrSent)
}

// fetchResult is how a fetch ended.
type fetchResult struct {
	obj     *object // to store, if any
	buf     []byte  // every body byte read
	err     error   // the fetch broke (readers are aborted)
	hdrSent bool    // f.hdr was closed
	failed  bool    // error, timeout or 5xx: counts against the origin
}

// fetch runs f until its last byte, publishing all but the last chunk of a
// body of known length; runFill publishes the end.
func (c *Cache) fetch(f *fill) fetchResult {
	ctx, cancel := context.WithCancel(c.ctx)
	defer cancel()
	var expired atomic.Bool
	timer := time.AfterFunc(c.p.FetchTimeout, func() { expired.Store(true); cancel() })
	defer timer.Stop()
	var buf []byte
	fail := func(err error, hdrSent bool) fetchResult {
		if expired.Load() {
			err = errFetchTimeout
		}
		c.st.originErrors.Add(1)
		return fetchResult{buf: buf, err: err, hdrSent: hdrSent, failed: true}
	}

	c.st.originFetches.Add(1)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.origin+f.key, nil)
	if err != nil {
		return fail(fmt.Errorf("origin request for %q: %w", f.key, err), false)
	}
	req.Header["User-Agent"] = []string{userAgent}
	resp, err := c.tr.RoundTrip(req)
	if err != nil {
		return fail(err, false)
	}
	defer resp.Body.Close()
	timer.Reset(c.p.FetchTimeout) // from here, the longest gap between body reads

	f.status = resp.StatusCode
	f.fetched = c.now()
	f.length = resp.ContentLength
	f.header = answerHeader(resp.Header, f.length, resp.StatusCode == http.StatusOK)
	if f.length >= 0 && f.length <= c.p.MaxBytes {
		buf = make([]byte, 0, f.length)
	}
	f.buf = buf
	close(f.hdr)

	for {
		if f.length >= 0 && int64(len(buf)) == f.length {
			// All promised bytes are in; one more read sees EOF so the
			// connection goes back to the pool.
			var one [1]byte
			if _, err := resp.Body.Read(one[:]); err != nil && err != io.EOF {
				return fail(err, true)
			}
			break
		}
		if len(buf) == cap(buf) {
			grown := make([]byte, len(buf), max(2*cap(buf), minGrow))
			copy(grown, buf)
			buf = grown
		}
		n, err := resp.Body.Read(buf[len(buf):cap(buf)])
		if n > 0 {
			buf = buf[:len(buf)+n]
			c.st.bytesFromOrigin.Add(int64(n))
			if f.length < 0 || int64(len(buf)) < f.length {
				f.publish(buf)
			}
			timer.Reset(c.p.FetchTimeout)
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return fail(err, true)
		}
	}

	res := fetchResult{buf: buf, hdrSent: true}
	switch {
	case resp.StatusCode >= 500:
		c.st.originErrors.Add(1)
		res.failed = true
		return res
	case resp.StatusCode != http.StatusOK:
		return res
	}
	path, _, _ := strings.Cut(f.key, "?")
	ttl := c.p.ttl(path, resp.Header)
	if ttl <= 0 {
		return res
	}
	h := f.header
	if f.length < 0 {
		h = h.Clone()
		h["Content-Length"] = []string{strconv.Itoa(len(buf))}
	}
	res.obj = &object{status: http.StatusOK, header: h, body: buf, fetched: f.fetched, ttl: ttl}
	return res
}

// serveFill answers r from fetch f, streaming its body as it arrives.
func (c *Cache) serveFill(w http.ResponseWriter, r *http.Request, f *fill) {
	ctx := r.Context()
	select {
	case <-f.hdr:
	case <-ctx.Done():
		return
	}
	buf, done, err := f.wait(ctx, -1)
	if f.status == 0 || (done && err != nil) {
		unavailable(w)
		return
	}
	age := c.now().Sub(f.fetched)
	h := w.Header()
	status, start, end := f.status, int64(0), f.length // end exclusive; -1 unknown
	rangeDone := false
	if rv := r.Header["Range"]; len(rv) == 1 && f.status == http.StatusOK {
		size := f.length
		if size < 0 {
			// Content-Range needs the size: wait for the whole object.
			for !done {
				buf, done, err = f.wait(ctx, int64(len(buf)))
			}
			if err != nil {
				if ctx.Err() == nil {
					unavailable(w)
				}
				return
			}
			size = int64(len(buf))
		}
		s, e, res := parseRange(rv[0], size)
		if res != rangeIgnore {
			status = rangeHeaders(h, f.header, res, s, e, size)
			start, end, rangeDone = s, e, true
			if res == rangeUnsatisfiable {
				start, end = 0, 0
			}
		}
	}
	if !rangeDone {
		for k, v := range f.header {
			h[k] = v
		}
	}
	h["X-Cache"] = missValue
	h["Age"] = ageValue(age)
	w.WriteHeader(status)
	rc := http.NewResponseController(w)
	if r.Method == http.MethodHead || (end >= 0 && start >= end) {
		return
	}
	rc.Flush() // headers go now, not with the first body chunk

	off := start
	for end < 0 || off < end {
		buf, done, err := f.wait(ctx, off)
		if ctx.Err() != nil {
			return
		}
		if int64(len(buf)) > off {
			hi := int64(len(buf))
			if end >= 0 && hi > end {
				hi = end
			}
			n, werr := w.Write(buf[off:hi])
			c.st.bytesServed.Add(int64(n))
			if werr != nil {
				return
			}
			off = hi
			if !done {
				rc.Flush()
			}
			continue
		}
		if err != nil {
			// The origin failed midway: the client must see a short body.
			panic(http.ErrAbortHandler)
		}
		return // done, unknown length
	}
}
