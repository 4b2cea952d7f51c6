// Package engines describes the caching engines hlsbench measures and starts
// them. An engine is asked what a workload's Policy says, the same for all;
// a runtime (in-process, local process, container) runs it.
package engines

import (
	"fmt"
	"time"
)

// Policy is one workload's cache policy. Every engine gets the same one,
// rendered into its own configuration.
type Policy struct {
	// TTLs per object class: media and master playlists (.m3u8) and
	// segments (.ts). They override the origin's Cache-Control.
	ManifestTTL time.Duration `json:"manifest_ttl"`
	SegmentTTL  time.Duration `json:"segment_ttl"`
	// Grace is how long past its TTL a stale object may be served while a
	// fresh one is fetched or while the origin fails.
	Grace time.Duration `json:"grace"`
	// HealthyGrace caps grace while the origin is healthy (Varnish's
	// req.grace): past it a request waits for a fresh copy instead.
	HealthyGrace time.Duration `json:"healthy_grace"`
	// The origin health probe.
	ProbePath      string        `json:"probe_path"`
	ProbeInterval  time.Duration `json:"probe_interval"`
	ProbeTimeout   time.Duration `json:"probe_timeout"`
	ProbeWindow    int           `json:"probe_window"`
	ProbeThreshold int           `json:"probe_threshold"`
	// Origin fetch timeouts: to connect, to the first byte, between bytes.
	ConnectTimeout      time.Duration `json:"connect_timeout"`
	FirstByteTimeout    time.Duration `json:"first_byte_timeout"`
	BetweenBytesTimeout time.Duration `json:"between_bytes_timeout"`
	// Coalesce: concurrent misses for one object make one origin fetch.
	// LockTimeout bounds how long a waiter waits for that fetch (NGINX's
	// proxy_cache_lock_timeout); it must outlast a slow whole-object fetch.
	Coalesce    bool          `json:"coalesce"`
	LockTimeout time.Duration `json:"lock_timeout"`
	// StoreBytes is the RAM store's size.
	StoreBytes int64 `json:"store_bytes"`
	// Purge is how the workload invalidates objects (PurgeBan or
	// PurgeObject), "" when it does not: an engine renders what the mode
	// needs (NGINX loads its purge module; Varnish stores each object's URL
	// for lurker-friendly bans), and one that cannot is not applicable.
	Purge string `json:"purge,omitempty"`
}

// DefaultPolicy is the base every workload adjusts.
func DefaultPolicy() Policy {
	return Policy{
		ManifestTTL:         2 * time.Second,
		SegmentTTL:          time.Hour,
		Grace:               30 * time.Second,
		HealthyGrace:        10 * time.Second,
		ProbePath:           "/health",
		ProbeInterval:       time.Second,
		ProbeTimeout:        time.Second,
		ProbeWindow:         3,
		ProbeThreshold:      2,
		ConnectTimeout:      time.Second,
		FirstByteTimeout:    5 * time.Second,
		BetweenBytesTimeout: 5 * time.Second,
		Coalesce:            true,
		LockTimeout:         30 * time.Second,
		StoreBytes:          512 << 20,
	}
}

// Validate reports the first field that no engine could honour.
func (p Policy) Validate() error {
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"manifest_ttl", p.ManifestTTL}, {"segment_ttl", p.SegmentTTL}, {"grace", p.Grace},
		{"healthy_grace", p.HealthyGrace}, {"probe_interval", p.ProbeInterval}, {"probe_timeout", p.ProbeTimeout},
		{"connect_timeout", p.ConnectTimeout}, {"first_byte_timeout", p.FirstByteTimeout},
		{"between_bytes_timeout", p.BetweenBytesTimeout}, {"lock_timeout", p.LockTimeout}} {
		if d.v < 0 {
			return fmt.Errorf("policy %s: %v is negative", d.name, d.v)
		}
	}
	if p.ManifestTTL < time.Second || p.SegmentTTL < time.Second {
		return fmt.Errorf("policy TTLs must be at least 1s (engines count TTLs in seconds)")
	}
	if p.ProbePath != "" && (p.ProbeInterval <= 0 || p.ProbeTimeout <= 0 || p.ProbeWindow < 1 ||
		p.ProbeThreshold < 1 || p.ProbeThreshold > p.ProbeWindow) {
		return fmt.Errorf("policy probe: want interval and timeout > 0 and 1 ≤ threshold ≤ window")
	}
	if err := checkPurgeMode(p.Purge); err != nil {
		return err
	}
	if p.StoreBytes < 1<<20 {
		return fmt.Errorf("policy store_bytes %d: want at least 1 MiB", p.StoreBytes)
	}
	return nil
}

// MaxAge is the Cache-Control the origin sends for a TTL, so that a proxy
// that follows the origin (an external one) gets the same TTL.
func MaxAge(ttl time.Duration) string {
	return fmt.Sprintf("public, max-age=%d", int64(ttl/time.Second))
}
