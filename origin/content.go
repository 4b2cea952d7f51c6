package origin

import (
	"crypto/subtle"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Segment bytes are cut from one random block per seed. Block j (patternSize
// bytes) of segment n is the XOR of two windows of the block at offsets
// chosen by hashing (seed, n, j): the content never repeats inside a segment,
// so a proxy that serves the wrong part of an object is caught, yet making it
// costs one vectorised XOR per byte. Byte i is 0x47 when i%188 == 0, like the
// sync byte of an MPEG-TS packet.
const (
	patternSize = 64 << 10
	tsPacket    = 188
	tsSync      = 0x47
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// pattern is the random block of one seed, stored twice back to back so that
// any window of up to patternSize bytes is contiguous.
type pattern struct {
	seed uint64
	r    [2 * patternSize]byte
}

func newPattern(seed uint64) *pattern {
	p := &pattern{seed: seed}
	rng := rand.NewPCG(seed, 0x6a09e667f3bcc909)
	for i := 0; i < patternSize; i += 8 {
		binary.LittleEndian.PutUint64(p.r[i:], rng.Uint64())
	}
	copy(p.r[patternSize:], p.r[:patternSize])
	return p
}

// lastPattern caches the block of the last seed asked for: callers use one
// seed at a time, and a block costs ~20µs to rebuild.
var lastPattern atomic.Pointer[pattern]

func patternFor(seed uint64) *pattern {
	if p := lastPattern.Load(); p != nil && p.seed == seed {
		return p
	}
	p := newPattern(seed)
	lastPattern.Store(p)
	return p
}

// mix is the splitmix64 finaliser.
func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	return x ^ x>>31
}

// windows returns the offsets of the two windows block j of segment n is made of.
func (p *pattern) windows(n, j int64) (a, b int) {
	h := mix(mix(p.seed^mix(uint64(n))) + uint64(j)*0x9e3779b97f4a7c15)
	a = int(h & (patternSize - 1))
	b = int(h >> 32 & (patternSize - 1))
	if a == b {
		b ^= 1 // equal windows would XOR to zeros
	}
	return a, b
}

func (p *pattern) fill(n, off int64, dst []byte) {
	if off < 0 || n < 0 {
		panic("origin: negative segment number or offset")
	}
	for rest, pos := dst, off; len(rest) > 0; {
		j, in := pos/patternSize, int(pos%patternSize)
		k := min(len(rest), patternSize-in)
		a, b := p.windows(n, j)
		subtle.XORBytes(rest[:k], p.r[a+in:a+in+k], p.r[b+in:b+in+k])
		rest, pos = rest[k:], pos+int64(k)
	}
	end := off + int64(len(dst))
	for i := (off + tsPacket - 1) / tsPacket * tsPacket; i < end; i += tsPacket {
		dst[i-off] = tsSync
	}
}

// crc is the checksum of bytes [off, off+size) of content n: a whole
// segment from 0, a low-latency part from where it starts in its segment.
func (p *pattern) crc(n, off, size int64) uint32 {
	buf := getChunk()
	defer putChunk(buf)
	var c uint32
	for done := int64(0); done < size; {
		k := min(int64(len(buf)), size-done)
		p.fill(n, off+done, buf[:k])
		c = crc32.Update(c, castagnoli, buf[:k])
		done += k
	}
	return c
}

// SegmentBytes fills p with the bytes of segment n starting at offset off, as
// every origin with this seed serves them. n and off must not be negative.
// The content does not depend on the segment size: a longer segment extends
// a shorter one.
func SegmentBytes(seed uint64, n, off int64, p []byte) {
	patternFor(seed).fill(n, off, p)
}

// SegmentCRC is the CRC-32C (Castagnoli) of segment n of the given size: the
// value of the checksum header.
func SegmentCRC(seed uint64, n, size int64) uint32 {
	return patternFor(seed).crc(n, 0, size)
}

// chunkSize is the largest body write, and the buffer size segments are
// generated into.
const chunkSize = 64 << 10

var chunks = sync.Pool{New: func() any { return new([chunkSize]byte) }}

func getChunk() *[chunkSize]byte  { return chunks.Get().(*[chunkSize]byte) }
func putChunk(b *[chunkSize]byte) { chunks.Put(b) }

// The playlists. The media playlist is a live window that never moves: every
// copy of it is byte-identical, so a checksum and an ETag hold, and freshness
// is proven by GeneratedHeader and VersionHeader rather than by content.

func targetDuration(d time.Duration) int64 {
	return max(1, int64(math.Ceil(d.Seconds())))
}

func masterPlaylist(segmentSize int64, segmentDuration time.Duration) []byte {
	bw := int64(math.Ceil(float64(segmentSize) * 8 / segmentDuration.Seconds()))
	return fmt.Appendf(nil, "#EXTM3U\n#EXT-X-VERSION:3\n#EXT-X-INDEPENDENT-SEGMENTS\n"+
		"#EXT-X-STREAM-INF:BANDWIDTH=%d,AVERAGE-BANDWIDTH=%d,CODECS=\"avc1.64001f,mp4a.40.2\",RESOLUTION=1280x720\n"+
		"index.m3u8\n", bw, bw)
}

func mediaHeader(segmentDuration time.Duration) []byte {
	return fmt.Appendf(nil, "#EXTM3U\n#EXT-X-VERSION:3\n#EXT-X-TARGETDURATION:%d\n#EXT-X-MEDIA-SEQUENCE:0\n",
		targetDuration(segmentDuration))
}

func appendMediaEntry(b []byte, extinf string, n int) []byte {
	b = append(b, "#EXTINF:"...)
	b = append(b, extinf...)
	b = append(b, ",\nsegment-"...)
	b = strconv.AppendInt(b, int64(n), 10)
	return append(b, ".ts\n"...)
}

// minPadding is the shortest padding line, "#\n".
const minPadding = 2

// minMediaSize is the smallest media playlist: its header, one segment and
// the padding line.
func minMediaSize(segmentDuration time.Duration) int {
	extinf := strconv.FormatFloat(segmentDuration.Seconds(), 'f', 3, 64)
	return len(appendMediaEntry(mediaHeader(segmentDuration), extinf, 0)) + minPadding
}

// mediaPlaylist lists segments 0, 1, … while they fit and ends with one
// comment line that pads it to exactly size bytes. size must be at least
// minMediaSize.
func mediaPlaylist(size int, segmentDuration time.Duration) []byte {
	extinf := strconv.FormatFloat(segmentDuration.Seconds(), 'f', 3, 64)
	b := make([]byte, 0, size)
	b = append(b, mediaHeader(segmentDuration)...)
	var entry []byte
	for n := 0; ; n++ {
		entry = appendMediaEntry(entry[:0], extinf, n)
		if len(b)+len(entry)+minPadding > size {
			break
		}
		b = append(b, entry...)
	}
	pad := size - len(b)
	line := "# hlsbench padding"
	if len(line)+1 > pad {
		line = "#"
	}
	b = append(b, line...)
	for len(b) < size-1 {
		b = append(b, '.')
	}
	return append(b, '\n')
}
