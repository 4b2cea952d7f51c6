package origin

import (
	"bufio"
	"bytes"
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestSegmentBytesAnyWindow(t *testing.T) {
	const seed, n, size = 7, 3, 1_000_003
	full := make([]byte, size)
	SegmentBytes(seed, n, 0, full)
	rng := rand.New(rand.NewPCG(1, 2))
	for range 200 {
		off := rng.Int64N(size)
		l := rng.Int64N(min(size-off, 200_000) + 1)
		got := make([]byte, l)
		SegmentBytes(seed, n, off, got)
		if !bytes.Equal(got, full[off:off+l]) {
			t.Fatalf("SegmentBytes(off=%d, len=%d) differs from the whole segment's bytes", off, l)
		}
	}
	if c := crc32.Checksum(full, castagnoli); SegmentCRC(seed, n, size) != c {
		t.Fatalf("SegmentCRC = %08x, want %08x", SegmentCRC(seed, n, size), c)
	}
}

func TestSegmentBytesShape(t *testing.T) {
	const size = 1 << 20
	a, b, c := make([]byte, size), make([]byte, size), make([]byte, size)
	SegmentBytes(1, 0, 0, a)
	SegmentBytes(1, 1, 0, b)
	SegmentBytes(2, 0, 0, c)
	if bytes.Equal(a, b) || bytes.Equal(a, c) {
		t.Fatal("segments of different numbers or seeds are equal")
	}
	for i := 0; i < size; i += tsPacket {
		if a[i] != tsSync {
			t.Fatalf("byte %d = %#x, want the sync byte 0x47", i, a[i])
		}
	}
	// No window repeats inside a segment: a proxy serving the wrong part
	// must be caught.
	seen := map[string]int{}
	for j := 0; j < size/patternSize; j++ {
		k := string(a[j*patternSize+1 : j*patternSize+65])
		if prev, ok := seen[k]; ok {
			t.Fatalf("blocks %d and %d start alike", prev, j)
		}
		seen[k] = j
	}
	// A longer segment extends a shorter one.
	short := make([]byte, 1000)
	SegmentBytes(1, 0, 0, short)
	if !bytes.Equal(short, a[:1000]) {
		t.Fatal("segment bytes depend on the length asked for")
	}
	// Zeros would mean equal windows.
	if bytes.Count(a, []byte{0}) > size/128 {
		t.Fatal("too many zero bytes")
	}
}

// playlist is what parsePlaylist understood.
type playlist struct {
	version, target, sequence int
	uris                      []string
	durations                 []float64
	streams                   []string
	streamInfs                []string    // the attributes of each EXT-X-STREAM-INF
	dates                     []time.Time // EXT-X-PROGRAM-DATE-TIME, in order
	playlistType              string
	endlist                   bool
}

// parsePlaylist checks the rules of RFC 8216 that the origin's playlists touch.
func parsePlaylist(body []byte) (playlist, error) {
	var p playlist
	if len(body) == 0 || body[len(body)-1] != '\n' {
		return p, fmt.Errorf("does not end with a newline")
	}
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(nil, len(body)+1)
	var pendingInf, pendingStream bool
	for i := 0; sc.Scan(); i++ {
		line := sc.Text()
		if i == 0 {
			if line != "#EXTM3U" {
				return p, fmt.Errorf("first line %q, want #EXTM3U", line)
			}
			continue
		}
		tag, val, _ := strings.Cut(line, ":")
		atoi := func() (int, error) {
			v, err := strconv.Atoi(val)
			if err != nil {
				return 0, fmt.Errorf("line %d %q: %v", i+1, line, err)
			}
			return v, nil
		}
		if p.endlist {
			return p, fmt.Errorf("line %d %q after EXT-X-ENDLIST", i+1, line)
		}
		var err error
		switch {
		case line == "":
			return p, fmt.Errorf("line %d is empty", i+1)
		case tag == "#EXT-X-VERSION":
			p.version, err = atoi()
		case tag == "#EXT-X-TARGETDURATION":
			p.target, err = atoi()
		case tag == "#EXT-X-MEDIA-SEQUENCE":
			p.sequence, err = atoi()
		case tag == "#EXT-X-INDEPENDENT-SEGMENTS":
		case tag == "#EXT-X-STREAM-INF":
			if !strings.Contains(val, "BANDWIDTH=") {
				return p, fmt.Errorf("line %d: EXT-X-STREAM-INF without BANDWIDTH", i+1)
			}
			p.streamInfs = append(p.streamInfs, val)
			pendingStream = true
		case tag == "#EXT-X-PROGRAM-DATE-TIME":
			d, perr := time.Parse(time.RFC3339Nano, val)
			if perr != nil {
				return p, fmt.Errorf("line %d %q: %v", i+1, line, perr)
			}
			p.dates = append(p.dates, d)
		case tag == "#EXT-X-PLAYLIST-TYPE":
			if val != "VOD" && val != "EVENT" {
				return p, fmt.Errorf("line %d: playlist type %q", i+1, val)
			}
			p.playlistType = val
		case line == "#EXT-X-ENDLIST":
			p.endlist = true
		case tag == "#EXTINF":
			d, _, ok := strings.Cut(val, ",")
			f, perr := strconv.ParseFloat(d, 64)
			if !ok || perr != nil || f <= 0 {
				return p, fmt.Errorf("line %d %q: bad EXTINF", i+1, line)
			}
			p.durations = append(p.durations, f)
			pendingInf = true
		case strings.HasPrefix(line, "#EXT"):
			return p, fmt.Errorf("line %d: unexpected tag %q", i+1, line)
		case strings.HasPrefix(line, "#"): // a comment
		default:
			switch {
			case pendingInf:
				p.uris = append(p.uris, line)
			case pendingStream:
				p.streams = append(p.streams, line)
			default:
				return p, fmt.Errorf("line %d: URI %q without EXTINF or EXT-X-STREAM-INF", i+1, line)
			}
			pendingInf, pendingStream = false, false
		}
		if err != nil {
			return p, err
		}
	}
	if pendingInf || pendingStream {
		return p, fmt.Errorf("tag without its URI at the end")
	}
	if p.version < 3 {
		return p, fmt.Errorf("EXT-X-VERSION %d: decimal EXTINF needs 3", p.version)
	}
	for i, d := range p.durations {
		if int(d+0.5) > p.target {
			return p, fmt.Errorf("segment %d lasts %.3fs, above EXT-X-TARGETDURATION %d", i, d, p.target)
		}
	}
	return p, sc.Err()
}

func TestMediaPlaylistExactSize(t *testing.T) {
	for _, d := range []time.Duration{4 * time.Second, 2500 * time.Millisecond, time.Millisecond, 20 * time.Second} {
		lo := minMediaSize(d)
		sizes := []int{DefaultManifestSize, 5900, 65536}
		for s := lo; s < lo+40; s++ { // every padding remainder
			sizes = append(sizes, s)
		}
		for _, size := range sizes {
			body := mediaPlaylist(size, d)
			if len(body) != size {
				t.Fatalf("duration %v: size %d gave %d bytes", d, size, len(body))
			}
			p, err := parsePlaylist(body)
			if err != nil {
				t.Fatalf("duration %v size %d: %v\n%s", d, size, err, body)
			}
			if len(p.uris) == 0 || p.target < 1 || len(p.streams) > 0 {
				t.Fatalf("duration %v size %d: %+v", d, size, p)
			}
			for i, u := range p.uris {
				if u != fmt.Sprintf("segment-%d.ts", i) {
					t.Fatalf("URI %d is %q", i, u)
				}
			}
		}
	}
}

func TestMasterPlaylist(t *testing.T) {
	p, err := parsePlaylist(masterPlaylist(DefaultSegmentSize, DefaultSegmentDuration))
	if err != nil {
		t.Fatal(err)
	}
	if len(p.streams) != 1 || len(p.uris) != 0 {
		t.Fatalf("want one variant stream: %+v", p)
	}
	base, _ := url.Parse(MasterPath)
	ref, err := url.Parse(p.streams[0])
	if err != nil {
		t.Fatal(err)
	}
	if got := base.ResolveReference(ref).Path; got != ManifestPath {
		t.Fatalf("master playlist points at %s, want %s", got, ManifestPath)
	}
}

var sink byte

func BenchmarkSegmentBytes(b *testing.B) {
	buf := make([]byte, chunkSize)
	const size = DefaultSegmentSize
	b.SetBytes(size)
	for i := 0; b.Loop(); i++ {
		for off := int64(0); off < size; off += chunkSize {
			SegmentBytes(1, int64(i), off, buf)
		}
		sink += buf[1]
	}
}

func BenchmarkSegmentCRC(b *testing.B) {
	b.SetBytes(DefaultSegmentSize)
	for i := 0; b.Loop(); i++ {
		sink += byte(SegmentCRC(1, int64(i), DefaultSegmentSize))
	}
}

// KnownObject is what the origin serves: the playlists' and a segment's
// size and every byte, the query ignored; a live path is not known.
func TestKnownObject(t *testing.T) {
	cfg := Config{Seed: 7, SegmentSize: 10000}
	o, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{MasterPath, ManifestPath + "?run=x", SegmentPath(3)} {
		k, ok := KnownObject(cfg, path)
		rec := httptest.NewRecorder()
		o.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
		body := rec.Body.Bytes()
		got := make([]byte, k.Size)
		k.Fill(0, got)
		if !ok || rec.Code != 200 || k.Size != int64(len(body)) || !bytes.Equal(got, body) {
			t.Errorf("%s: known %v, size %d; served %d, %d bytes, equal %v", path, ok, k.Size, rec.Code, len(body), bytes.Equal(got, body))
		}
	}
	if _, ok := KnownObject(cfg, LiveMasterPath(0)); ok {
		t.Error("a live path is known")
	}
}
