package workloads

import (
	"bytes"
	"errors"
	"fmt"
	"sync"

	"github.com/hlsbench/hlsbench/origin"
	"github.com/hlsbench/hlsbench/workloads/loadgen"
)

// evidence is the per-connection BodyCheck of every workload. It reads the
// origin's stamp from each answer (when the copy was generated, its version)
// and checks every body byte against the origin's deterministic content, so
// a 206 is as checkable as a 200, and a 200 without its checksum header
// (a proxy may drop it) as checkable as one with it: every object of the
// synthetic origin is known, so a short, empty or wrong body is invalid.
type evidence struct {
	set *evidenceSet

	stamp   int64 // origin's X-Origin-Generated, unix ns; 0 when absent
	version int64
	edge    int64 // a live media playlist's origin.LiveEdgeHeader; -1 when absent
	off     int64 // offset in the object of the next body byte
	bad     bool
	compare bool
	// obj is the object the answer should be, when known; whole is set
	// for a 200 without its checksum header, which must end at the
	// object's end.
	obj     *origin.Known
	whole   bool
	scratch []byte
}

// evidenceSet makes and configures the checks of one generator. Fields are
// set between passes, when no event loop runs.
type evidenceSet struct {
	mu   sync.Mutex
	seed uint64
	segN int64 // segment number being requested; -1 for a playlist
	// objects are the pass's objects by their index in its paths, when
	// known (see know); nil, only segN's bytes are checked, not its size.
	objects []*origin.Known
	checks  []*evidence
}

// know sets the objects of the passes to come, one per path in the
// order of Pass.Paths (or the one Pass.Path), from the origin's config:
// a path whose bytes the config does not fix is not checked beyond its
// checksum header.
func (s *evidenceSet) know(cfg origin.Config, paths ...string) {
	cfg.Seed = s.seed
	s.objects = make([]*origin.Known, len(paths))
	for i, p := range paths {
		if k, ok := origin.KnownObject(cfg, p); ok {
			s.objects[i] = &k
		}
	}
}

func newEvidenceSet(seed uint64) *evidenceSet { return &evidenceSet{seed: seed, segN: -1} }

func (s *evidenceSet) factory() loadgen.BodyCheck {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := &evidence{set: s}
	s.checks = append(s.checks, e)
	return e
}

var (
	generatedKey = []byte(origin.GeneratedHeader + ":")
	versionKey   = []byte(origin.VersionHeader + ":")
	checksumKey  = []byte(origin.ChecksumHeader + ":")
	edgeKey      = []byte(origin.LiveEdgeHeader + ":")
	errBytes     = errors.New("body bytes differ from the origin's")
	errShort     = errors.New("body shorter than the origin's object")
)

func (e *evidence) Begin(info *loadgen.ResponseInfo, offset int64) {
	e.stamp = loadgen.HeaderInt(info.Header, generatedKey)
	e.version = loadgen.HeaderInt(info.Header, versionKey)
	e.edge = -1
	if v := loadgen.HeaderValue(info.Header, edgeKey); v != nil {
		if n := loadgen.HeaderInt(info.Header, edgeKey); n > 0 || string(v) == "0" {
			e.edge = n
		}
	}
	e.off = offset
	e.bad = false
	e.obj, e.whole = nil, false
	if o := info.Object; o >= 0 && o < len(e.set.objects) {
		e.obj = e.set.objects[o]
	}
	// A whole 200 body is already checked against the declared CRC-32C by
	// the generator; comparing every byte too would only cost CPU.
	e.compare = !(info.Status == 200 && len(loadgen.HeaderValue(info.Header, checksumKey)) == 8)
	if e.obj != nil && e.compare && !info.Head {
		switch info.Status {
		case 200:
			e.whole = true
		case 206:
			// The range is checked against Content-Range by the generator,
			// and the object's size here.
			e.bad = info.HasRange && info.RangeTotal >= 0 && info.RangeTotal != e.obj.Size
		default:
			// Any other answer is judged by its status alone.
			e.compare = false
		}
	}
}

func (e *evidence) Write(p []byte) {
	if e.bad || !e.compare || (e.obj == nil && e.set.segN < 0) {
		return
	}
	if e.obj != nil && e.off+int64(len(p)) > e.obj.Size {
		e.bad = true // longer than the object
		return
	}
	if cap(e.scratch) < len(p) {
		e.scratch = make([]byte, len(p))
	}
	want := e.scratch[:len(p)]
	if e.obj != nil {
		e.obj.Fill(e.off, want)
	} else {
		origin.SegmentBytes(e.set.seed, e.set.segN, e.off, want)
	}
	if !bytes.Equal(p, want) {
		e.bad = true
	}
	e.off += int64(len(p))
}

func (e *evidence) End() error {
	switch {
	case e.bad:
		return errBytes
	case e.whole && e.off != e.obj.Size:
		return fmt.Errorf("%w: a 200 without %s of %d bytes, %d expected", errShort, origin.ChecksumHeader, e.off, e.obj.Size)
	}
	return nil
}
