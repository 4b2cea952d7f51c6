package origin

import "sync"

// Stats are the origin's counters since the last reset.
type Stats struct {
	// Objects holds the objects asked for since the last reset, keyed by
	// request URI (path and query) as received.
	Objects map[string]ObjectStats `json:"objects"`
	// Fetches counts object answers generated (200, 206, 304); health
	// requests are not objects.
	Fetches int64 `json:"fetches"`
	// Bytes sums the body bytes those answers set out to send: their
	// Content-Length, 0 for a 304 or a HEAD. A body cut short still counts
	// whole, as the origin's cost was committed when it answered.
	Bytes int64 `json:"bytes"`
	// Failed counts object requests answered 5xx, or dropped or cut short,
	// because of a failure mode.
	Failed int64       `json:"failed"`
	Health HealthStats `json:"health"`
	// Mode is the failure mode when the counters were read, and ModeSince
	// the instant it took effect (the origin's clock, Unix ns), taken as
	// the mode changed, before a Server cut the connections it had (which
	// may take up to 2 s): when the origin started or stopped failing.
	// Resets leave both alone; setting the mode it has changes neither. An
	// origin older than these fields sends neither: ModeSince is then 0.
	Mode      Mode  `json:"mode"`
	ModeSince int64 `json:"mode_since_unix_nano"`
}

// ObjectStats are one request URI's counters.
type ObjectStats struct {
	Fetches int64 `json:"fetches"`
	// Bytes is as Stats.Bytes, for this request URI.
	Bytes  int64 `json:"bytes"`
	Failed int64 `json:"failed"`
	// LastGenerated is the GeneratedHeader of the last copy, 0 if none
	// since the reset.
	LastGenerated int64 `json:"last_generated_unix_nano"`
	// Version is the VersionHeader of the last copy. Versions survive
	// resets, so copies before and after one are never confused.
	Version int64 `json:"version"`
}

// HealthStats count answers on HealthPath.
type HealthStats struct {
	OK     int64 `json:"ok"`
	Failed int64 `json:"failed"`
}

// Stats returns a copy of the counters, and the mode since when.
func (o *Origin) Stats() Stats { return o.snapshot(false) }

// ResetStats zeroes the counters. Versions keep counting.
func (o *Origin) ResetStats() { o.snapshot(true) }

func (o *Origin) snapshot(reset bool) Stats {
	s := o.stats.snapshot(reset)
	c := o.changed.Load()
	s.Mode, s.ModeSince = c.mode, c.at
	return s
}

type objectEntry struct {
	ObjectStats
	touched bool // since the last reset
}

type statsBook struct {
	mu      sync.Mutex
	objects map[string]*objectEntry // never shrinks: it carries the versions
	fetches int64
	bytes   int64
	failed  int64
	hs      HealthStats
}

func (b *statsBook) entry(key string) *objectEntry {
	e := b.objects[key]
	if e == nil {
		e = &objectEntry{}
		b.objects[key] = e
	}
	e.touched = true
	return e
}

// generated counts a copy of key made at unixNano, of size body bytes, and
// returns its version.
func (b *statsBook) generated(key string, unixNano, size int64) int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	e := b.entry(key)
	e.Fetches++
	e.Bytes += size
	e.Version++
	e.LastGenerated = unixNano
	b.fetches++
	b.bytes += size
	return e.Version
}

func (b *statsBook) fail(key string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.entry(key).Failed++
	b.failed++
}

func (b *statsBook) health(ok bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if ok {
		b.hs.OK++
	} else {
		b.hs.Failed++
	}
}

// snapshot copies the counters and, if reset, zeroes them in the same step,
// so no answer falls between a read and a reset.
func (b *statsBook) snapshot(reset bool) Stats {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := Stats{Objects: make(map[string]ObjectStats), Fetches: b.fetches, Bytes: b.bytes, Failed: b.failed, Health: b.hs}
	for k, e := range b.objects {
		if !e.touched {
			continue
		}
		s.Objects[k] = e.ObjectStats
		if reset {
			e.ObjectStats = ObjectStats{Version: e.Version}
			e.touched = false
		}
	}
	if reset {
		b.fetches, b.bytes, b.failed, b.hs = 0, 0, 0, HealthStats{}
	}
	return s
}
