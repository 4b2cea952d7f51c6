package workloads

import (
	"bytes"
	"errors"
	"sync"

	"github.com/hlsbench/hlsbench/origin"
	"github.com/hlsbench/hlsbench/workloads/loadgen"
)

// evidence is the per-connection BodyCheck of every workload. It reads the
// origin's stamp from each answer (when the copy was generated, its version)
// and, for segments, checks every body byte against the origin's
// deterministic content, so a 206 is as checkable as a 200.
type evidence struct {
	set *evidenceSet

	stamp   int64 // origin's X-Origin-Generated, unix ns; 0 when absent
	version int64
	edge    int64 // a live media playlist's origin.LiveEdgeHeader; -1 when absent
	off     int64 // offset in the object of the next body byte
	bad     bool
	compare bool
	scratch []byte
}

// evidenceSet makes and configures the checks of one generator. Fields are
// set between passes, when no event loop runs.
type evidenceSet struct {
	mu     sync.Mutex
	seed   uint64
	segN   int64 // segment number being requested; -1 for a playlist
	checks []*evidence
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
	// A whole 200 body is already checked against the declared CRC-32C by
	// the generator; comparing every byte too would only cost CPU.
	e.compare = !(info.Status == 200 && len(loadgen.HeaderValue(info.Header, checksumKey)) == 8)
}

func (e *evidence) Write(p []byte) {
	n := e.set.segN
	if n < 0 || e.bad || !e.compare {
		return
	}
	if cap(e.scratch) < len(p) {
		e.scratch = make([]byte, len(p))
	}
	want := e.scratch[:len(p)]
	origin.SegmentBytes(e.set.seed, n, e.off, want)
	if !bytes.Equal(p, want) {
		e.bad = true
	}
	e.off += int64(len(p))
}

func (e *evidence) End() error {
	if e.bad {
		return errBytes
	}
	return nil
}
