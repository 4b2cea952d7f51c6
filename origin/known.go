package origin

import "strings"

// Known is an object of the synthetic origin whose size and every byte a
// client can know without asking: the playlists of the stream and its
// segments. A client that checks an answer against it needs no checksum
// header, which a proxy may drop.
type Known struct {
	Size int64
	// body is a playlist's bytes; a segment's are generated from seed
	// and n.
	body []byte
	seed uint64
	n    int64
}

// Fill writes the object's bytes [off, off+len(dst)) into dst; off and
// the length must lie within Size.
func (k Known) Fill(off int64, dst []byte) {
	if k.body != nil {
		copy(dst, k.body[off:])
		return
	}
	SegmentBytes(k.seed, k.n, off, dst)
}

// KnownObject is the object an origin of cfg serves at path (its query,
// a run's nonce, ignored), and false for a path whose bytes depend on
// more than cfg: live and VOD objects follow the origin's clock and
// ladder, low-latency ones too, and an unknown path is a 404. A bad cfg
// knows nothing.
func KnownObject(cfg Config, path string) (Known, bool) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return Known{}, false
	}
	path, _, _ = strings.Cut(path, "?")
	switch path {
	case MasterPath:
		b := masterPlaylist(cfg.SegmentSize, cfg.SegmentDuration)
		return Known{Size: int64(len(b)), body: b}, true
	case ManifestPath:
		b := mediaPlaylist(cfg.ManifestSize, cfg.SegmentDuration)
		return Known{Size: int64(len(b)), body: b}, true
	}
	if n, ok := segmentNumber(path); ok {
		return Known{Size: cfg.SegmentSize, seed: cfg.Seed, n: n}, true
	}
	return Known{}, false
}
