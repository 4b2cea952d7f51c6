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
	// LL counts the answers on the low-latency paths by kind.
	LL LLStats `json:"ll"`
}

// LLStats count the requests and answers on the low-latency paths (see LL),
// so that a workload divides the requests by the parts published to learn
// how many origin requests a part cost: whether a proxy coalesced its
// viewers' blocked reloads and hinted parts. The answers generated are also
// in Fetches.
type LLStats struct {
	// Playlists counts playlists answered (200 or 304), Blocking those
	// asked with _HLS_msn, and BlockingHeld those of them held before the
	// answer.
	Playlists    int64 `json:"playlists"`
	Blocking     int64 `json:"blocking"`
	BlockingHeld int64 `json:"blocking_held"`
	// Parts counts parts answered, and PartsHeld those held until ready
	// (asked for by their preload hint).
	Parts     int64 `json:"parts"`
	PartsHeld int64 `json:"parts_held"`
	Segments  int64 `json:"segments"`
	// Rejected counts blocking reloads answered 400, TimedOut held requests
	// answered 503, NotFound parts and segments asked for too early (404),
	// and Abandoned held requests whose client left first.
	Rejected  int64 `json:"rejected"`
	TimedOut  int64 `json:"timed_out"`
	NotFound  int64 `json:"not_found"`
	Abandoned int64 `json:"abandoned"`
	// PartRequests counts every request for a part as it arrives, whatever
	// became of it: answered at once or after its hold, abandoned by its
	// client, timed out, 404 for being past the hint, failed by the mode.
	// BlockingRequests counts every playlist request with _HLS_msn alike.
	// Each cost the origin a request, so a figure of origin requests per
	// part counts these, not only the answers.
	PartRequests     int64 `json:"part_requests"`
	BlockingRequests int64 `json:"blocking_requests"`
}

// Sub is s less the counts of an earlier reading, prev: what was counted
// between the two.
func (s LLStats) Sub(prev LLStats) LLStats {
	return LLStats{Playlists: s.Playlists - prev.Playlists, Blocking: s.Blocking - prev.Blocking, BlockingHeld: s.BlockingHeld - prev.BlockingHeld,
		Parts: s.Parts - prev.Parts, PartsHeld: s.PartsHeld - prev.PartsHeld, Segments: s.Segments - prev.Segments,
		Rejected: s.Rejected - prev.Rejected, TimedOut: s.TimedOut - prev.TimedOut, NotFound: s.NotFound - prev.NotFound, Abandoned: s.Abandoned - prev.Abandoned,
		PartRequests: s.PartRequests - prev.PartRequests, BlockingRequests: s.BlockingRequests - prev.BlockingRequests}
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
	ll      LLStats
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

func (b *statsBook) countLL(f func(*LLStats)) {
	b.mu.Lock()
	defer b.mu.Unlock()
	f(&b.ll)
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
	s := Stats{Objects: make(map[string]ObjectStats), Fetches: b.fetches, Bytes: b.bytes, Failed: b.failed, Health: b.hs, LL: b.ll}
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
		b.fetches, b.bytes, b.failed, b.hs, b.ll = 0, 0, 0, HealthStats{}, LLStats{}
	}
	return s
}
