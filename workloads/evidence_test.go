package workloads

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hlsbench/hlsbench/origin"
	"github.com/hlsbench/hlsbench/workloads/loadgen"
)

// A 200 without its checksum header is still checked: every object of the
// synthetic origin is known, so its size and content are. A proxy that
// drops the header and serves the whole object right is good; a short
// body (framed as whole), an empty one, a wrong byte, or a playlist that
// is not the origin's is invalid. A 206 whose Content-Range names another
// size is too. On 9e8fb7e a short or empty segment and any playlist passed
// unchecked without the header.
func TestBodyCheckedWithoutChecksum(t *testing.T) {
	cfg := origin.Config{Seed: 11, SegmentSize: 64 << 10}
	o, err := origin.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	// serve answers as the origin does, then spoils the body as the test
	// asks, and drops the checksum header.
	// An atomic: a connection of the case before may still be served
	// while the next case sets its spoil (the race detector saw it in CI).
	var spoil atomic.Value
	spoil.Store("")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := httptest.NewRecorder()
		o.ServeHTTP(rec, r)
		body := rec.Body.Bytes()
		status := rec.Code
		switch spoil.Load().(string) {
		case "short":
			body = body[:len(body)-100]
		case "empty":
			body = nil
		case "wrong":
			body = append([]byte{}, body...)
			body[len(body)/2] ^= 1
		case "range of another size":
			w.Header().Set("Content-Range", "bytes 0-99/"+strconv.Itoa(len(body)+1))
			body, status = body[:100], http.StatusPartialContent
		}
		for k, v := range rec.Header() {
			if k != origin.ChecksumHeader && k != "Content-Length" && k != "Content-Range" {
				w.Header()[k] = v
			}
		}
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		w.WriteHeader(status)
		w.Write(body)
	}))
	defer srv.Close()
	seg := origin.SegmentPath(2) + "?run=t"
	for _, c := range []struct {
		spoil, path string
		segN        int64
		rangeReq    bool
		ok          bool
	}{
		{"", seg, 2, false, true},
		{"short", seg, 2, false, false},
		{"empty", seg, 2, false, false},
		{"wrong", seg, 2, false, false},
		{"range of another size", seg, 2, true, false},
		{"", ManifestPath + "?run=t", -1, false, true},
		{"wrong", ManifestPath + "?run=t", -1, false, false},
		{"short", origin.MasterPath, -1, false, false},
	} {
		spoil.Store(c.spoil)
		ev := newEvidenceSet(cfg.Seed)
		ev.segN = c.segN
		ev.know(cfg, c.path)
		g, err := loadgen.New(context.Background(), loadgen.Options{URL: srv.URL, Connections: 1, Timeout: 5 * time.Second,
			ChecksumHeader: origin.ChecksumHeader, BodyCheck: ev.factory})
		if err != nil {
			t.Fatal(err)
		}
		pass := loadgen.Pass{Path: c.path, Requests: 2, Duration: 10 * time.Second}
		if c.rangeReq {
			pass.Header = [][2]string{{"Range", "bytes=0-99"}}
		}
		r, err := g.Run(context.Background(), pass)
		g.Close()
		if err != nil {
			t.Fatal(err)
		}
		if good := r.OK == 2 && r.Errors == 0; good != c.ok {
			t.Errorf("%s %q: %d ok, errors %v, want good %v (%v)", c.path, c.spoil, r.OK, r.ErrorsByKind, c.ok, r.ErrorSamples)
		}
	}
}
