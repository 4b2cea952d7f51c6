// Package null is the null engine: a static HTTP/1.1 server built for
// speed that answers prebuilt copies of the origin's objects from memory,
// with no cache logic and no origin traffic while it serves. It measures
// the instrument, not an engine: its capacity is the most the generator
// and the host can carry, and its latency is the host's floor.
//
// It runs its own event loops (one locked OS thread per CPU it is given,
// epoll, non-blocking sockets) and parses requests minimally: the request
// line, Host, Range, Connection, and enough of the rest to refuse a body.
package null

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hlsbench/hlsbench/origin"
)

// Object is one of the origin's objects as the origin answered a whole GET
// for it: what the null engine serves for Path.
type Object struct {
	Path   string
	Header http.Header
	Body   []byte
}

// DefaultSegments is how many segments (0 up) Fetch copies by default: the
// workloads that measure an engine's hit path ask for segment 0.
const DefaultSegments = 4

// Paths are the objects the null engine serves: the master and media
// playlists and segments 0 to segments-1.
func Paths(segments int) []string {
	p := []string{origin.MasterPath, origin.ManifestPath}
	for n := range segments {
		p = append(p, origin.SegmentPath(int64(n)))
	}
	return p
}

// Fetch copies each path from the origin at originURL once, concurrently:
// the answers a cache would have stored after one miss each, headers and
// stamps included, under whatever configuration the origin runs. Copying
// rather than generating them keeps them the running origin's answers
// byte for byte, with no origin.Config to pass to the engine, and happens
// before the engine reports ready, outside any pass.
func Fetch(ctx context.Context, originURL string, paths []string) ([]Object, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	objs := make([]Object, len(paths))
	errs := make([]error, len(paths))
	var wg sync.WaitGroup
	for i, p := range paths {
		wg.Go(func() { objs[i], errs[i] = fetchOne(ctx, strings.TrimRight(originURL, "/")+p, p) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return objs, nil
}

func fetchOne(ctx context.Context, url, path string) (Object, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return Object{}, fmt.Errorf("copy %s from the origin: %w", path, err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return Object{}, fmt.Errorf("copy %s from the origin: %w", path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return Object{}, fmt.Errorf("copy %s from the origin: %w", path, err)
	}
	if resp.StatusCode != http.StatusOK {
		return Object{}, fmt.Errorf("copy %s from the origin: %s, want 200 OK", path, resp.Status)
	}
	if resp.ContentLength >= 0 && int64(len(body)) != resp.ContentLength {
		return Object{}, fmt.Errorf("copy %s from the origin: %d body bytes of %d", path, len(body), resp.ContentLength)
	}
	return Object{Path: path, Header: resp.Header.Clone(), Body: body}, nil
}

// entry is an object's prebuilt answers.
type entry struct {
	size int64
	// full is the whole 200 answer, head and body, in one slice: a plain
	// keep-alive GET is one write from it.
	full []byte
	// head200 is the 200 answer's status line and headers without the
	// blank line, body is full's body: the pieces other answers (HEAD, a
	// client header, Connection: close) are assembled from.
	head200 []byte
	body    []byte
	// common are the header lines every answer about the object carries
	// (all but the status line and Content-Length); for 206 heads.
	common []byte
	// head416 is the 416 answer whole (HEAD: without msg416).
	head416 []byte
}

// dropped are headers the null engine never replays: its own framing, and
// a Date that would be the copy's, not the answer's.
var dropped = map[string]bool{"Date": true, "Content-Length": true, "Connection": true, "Keep-Alive": true, "Transfer-Encoding": true}

func headerLines(h http.Header, skip func(string) bool) []byte {
	keys := make([]string, 0, len(h))
	for k := range h {
		if !dropped[k] && (skip == nil || !skip(k)) {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	var b []byte
	for _, k := range keys {
		for _, v := range h[k] {
			b = append(b, k...)
			b = append(b, ": "...)
			b = append(b, v...)
			b = append(b, "\r\n"...)
		}
	}
	return b
}

func newEntry(o Object) *entry {
	e := &entry{size: int64(len(o.Body)), common: headerLines(o.Header, nil)}
	e.head200 = append([]byte("HTTP/1.1 200 OK\r\n"), e.common...)
	e.head200 = append(e.head200, "Content-Length: "+strconv.Itoa(len(o.Body))+"\r\n"...)
	e.full = append(append(slices.Clip(slices.Clone(e.head200)), "\r\n"...), o.Body...)
	e.body = e.full[len(e.full)-len(o.Body):]
	// The origin's 416 (origin.ServeHTTP): http.Error's text with the
	// object's validators, no-store and no Accept-Ranges, and no stamp.
	h := o.Header.Clone()
	for _, k := range []string{"Accept-Ranges", origin.GeneratedHeader, origin.VersionHeader} {
		h.Del(k)
	}
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Range", "bytes */"+strconv.Itoa(len(o.Body)))
	e.head416 = append([]byte("HTTP/1.1 416 Requested Range Not Satisfiable\r\n"), headerLines(h, nil)...)
	e.head416 = append(e.head416, "Content-Length: "+strconv.Itoa(len(msg416))+"\r\n\r\n"+msg416...)
	return e
}

// msg416 is the 416 answer's body, http.Error's.
const msg416 = "range not satisfiable\n"

// ReadyPath answers 200 when the engine serves (launch's readiness probe).
const ReadyPath = "/_hlsbench/ready"

// fixed answers, whole.
var (
	answer404   = []byte("HTTP/1.1 404 Not Found\r\nCache-Control: no-store\r\nContent-Type: text/plain; charset=utf-8\r\nX-Content-Type-Options: nosniff\r\nContent-Length: 19\r\n\r\n404 page not found\n")
	answer405   = []byte("HTTP/1.1 405 Method Not Allowed\r\nAllow: GET, HEAD\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: 19\r\n\r\nmethod not allowed\n")
	answer400   = []byte("HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\nContent-Length: 12\r\n\r\nbad request\n")
	answer431   = []byte("HTTP/1.1 431 Request Header Fields Too Large\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\nContent-Length: 26\r\n\r\nrequest header too large.\n")
	answerReady = []byte("HTTP/1.1 200 OK\r\nCache-Control: no-store\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: 3\r\n\r\nok\n")
)
