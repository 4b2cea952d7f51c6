package agent

import (
	"strings"

	"github.com/hlsbench/hlsbench/workloads/loadgen"
)

// Record is one request an agent sent, as a pass with PassSpec.Records
// returns it: loadgen.Record, its times on the agent's clock, and the
// integer values of the headers GeneratorSpec.Capture names (0 where an
// answer had none).
type Record struct {
	Shard     int     `json:"s"` // the agent's event loop
	Intended  int64   `json:"i"` // unix ns on the agent's clock
	Lag       int64   `json:"l"` // ns
	TTFB      int64   `json:"f"` // ns from Intended; 0 without an answer
	Total     int64   `json:"t"`
	Status    int     `json:"c,omitempty"`
	Err       string  `json:"e,omitempty"`
	Cache     uint8   `json:"h,omitempty"`
	Object    int     `json:"o,omitempty"`
	Tag       int64   `json:"g,omitempty"`
	BodyBytes int64   `json:"b,omitempty"`
	Captured  []int64 `json:"x,omitempty"`
}

// recordLog keeps a generator's records while a pass that asks for them
// runs: a slice per event loop, each written by its loop's thread alone
// (OnRecord's contract) and read once the pass is over.
type recordLog struct {
	on     bool // set between passes
	shards [][]Record
	next   func(int, *loadgen.Record, loadgen.BodyCheck) // a test's own OnRecord
}

func (l *recordLog) add(shard int, rec *loadgen.Record, check loadgen.BodyCheck) {
	if l.next != nil {
		l.next(shard, rec, check)
	}
	if !l.on {
		return
	}
	r := Record{Shard: shard, Intended: rec.Intended.UnixNano(), Lag: int64(rec.Lag), TTFB: int64(rec.TTFB), Total: int64(rec.Total),
		Status: rec.Status, Err: rec.Err, Cache: uint8(rec.Cache), Object: rec.Object, Tag: rec.Tag, BodyBytes: rec.BodyBytes}
	if c, ok := check.(*captureCheck); ok && len(c.vals) > 0 {
		r.Captured = append([]int64(nil), c.vals...)
	}
	l.shards[shard] = append(l.shards[shard], r)
}

// take ends the collection and returns the records, loop after loop.
func (l *recordLog) take() []Record {
	l.on = false
	var out []Record
	for i, s := range l.shards {
		out = append(out, s...)
		l.shards[i] = s[:0]
	}
	return out
}

// captureCheck is the body check that reads the captured headers of each
// answer (the origin's stamps): it checks no byte.
type captureCheck struct {
	keys [][]byte // "Name:"
	vals []int64
}

func newCapture(names []string) func() loadgen.BodyCheck {
	keys := make([][]byte, len(names))
	for i, n := range names {
		keys[i] = []byte(strings.TrimSuffix(n, ":") + ":")
	}
	return func() loadgen.BodyCheck { return &captureCheck{keys: keys, vals: make([]int64, len(keys))} }
}

func (c *captureCheck) Begin(info *loadgen.ResponseInfo, _ int64) {
	for i, k := range c.keys {
		c.vals[i] = loadgen.HeaderInt(info.Header, k)
	}
}

func (c *captureCheck) Write([]byte) {}

func (c *captureCheck) End() error { return nil }
