package loadgen

import (
	"fmt"
	"io"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
)

// interval is one shard's share of one HDR log interval.
type interval struct {
	pass       int
	k          int64 // interval number within the pass
	start, end int64 // nanotime
	ttfb       *hdr.Histogram
	total      *hdr.Histogram
}

func (s *shard) newInterval(start int64) *interval {
	var iv *interval
	select {
	case iv = <-s.g.log.pool:
		iv.ttfb.Reset()
		iv.total.Reset()
	default:
		iv = &interval{ttfb: NewHistogram(), total: NewHistogram()}
	}
	iv.pass = s.g.passes
	iv.k = (start - s.sp.t0) / s.sp.ivEvery
	iv.start = s.sp.t0 + iv.k*s.sp.ivEvery
	iv.end = iv.start + s.sp.ivEvery
	return iv
}

// rotate hands a finished interval to the log writer and starts the next.
func (s *shard) rotate(now int64) {
	done := s.iv
	s.iv = s.newInterval(now)
	s.g.log.in <- done
}

// hdrLog merges the shards' intervals and writes each one once every shard
// has delivered it, as an HdrHistogram V2 interval log.
type hdrLog struct {
	w      *hdr.HistogramLogWriter
	out    io.Writer
	shards int
	in     chan *interval
	pool   chan *interval
	// wall and mono pin nanotime to wall-clock time for the log's stamps.
	wall time.Time
	mono int64

	err     error
	flushed chan error
	pending map[[2]int64]*merged
	done    chan struct{}
}

type merged struct {
	iv    *interval
	count int
}

func newHDRLog(out io.Writer, shards int) *hdrLog {
	l := &hdrLog{w: hdr.NewHistogramLogWriter(out), out: out, shards: shards,
		in: make(chan *interval, 4*shards), pool: make(chan *interval, 4*shards),
		wall: time.Now(), mono: nanotime(), pending: map[[2]int64]*merged{}, done: make(chan struct{}), flushed: make(chan error)}
	ms := l.wall.UnixMilli()
	l.w.SetBaseTime(ms)
	l.setErr(l.w.OutputLogFormatVersion())
	l.setErr(l.w.OutputComment("[Logged with hlsbench loadgen: ttfb and total, corrected, in nanoseconds]"))
	l.setErr(l.w.OutputStartTime(ms))
	l.setErr(l.w.OutputBaseTime(ms))
	l.setErr(l.w.OutputLegend())
	go l.collect()
	return l
}

func (l *hdrLog) setErr(err error) {
	if err != nil && l.err == nil {
		l.err = fmt.Errorf("hdr log: %w", err)
	}
}

func (l *hdrLog) collect() {
	defer close(l.done)
	for iv := range l.in {
		if iv.ttfb == nil { // a pass ended: write what it left incomplete
			for key, m := range l.pending {
				delete(l.pending, key)
				l.write(m.iv)
			}
			l.flushed <- l.err
			continue
		}
		key := [2]int64{int64(iv.pass), iv.k}
		m := l.pending[key]
		if m == nil {
			m = &merged{iv: iv}
			l.pending[key] = m
		} else {
			m.iv.ttfb.Merge(iv.ttfb)
			m.iv.total.Merge(iv.total)
			m.iv.end = max(m.iv.end, iv.end)
			l.recycle(iv)
		}
		if m.count++; m.count == l.shards {
			delete(l.pending, key)
			l.write(m.iv)
		}
	}
}

func (l *hdrLog) recycle(iv *interval) {
	select {
	case l.pool <- iv:
	default:
	}
}

func (l *hdrLog) stamp(mono int64) int64 {
	return l.wall.Add(time.Duration(mono - l.mono)).UnixMilli()
}

func (l *hdrLog) write(iv *interval) {
	for _, h := range []struct {
		tag string
		h   *hdr.Histogram
	}{{"ttfb", iv.ttfb}, {"total", iv.total}} {
		h.h.SetTag(h.tag)
		h.h.SetStartTimeMs(l.stamp(iv.start))
		h.h.SetEndTimeMs(l.stamp(iv.end))
		l.setErr(l.w.OutputIntervalHistogram(h.h))
	}
	l.recycle(iv)
}

// finishPass writes whatever a pass left incomplete; the shards have sent
// all their intervals before it is called.
func (l *hdrLog) finishPass() error {
	l.in <- &interval{}
	return <-l.flushed
}

func (l *hdrLog) close() error {
	close(l.in)
	<-l.done
	return l.err
}
