package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/hlsbench/hlsbench/origin"
)

// OriginOptions are the flags of `hlsbench origin`.
type OriginOptions struct {
	Listen          string
	Control         string
	ManifestSize    byteSize
	SegmentSize     byteSize
	SegmentDuration time.Duration
	FirstByteDelay  time.Duration
	TransferRate    byteSize
	Seed            uint64
	CacheControl    origin.CacheControl
	CPUs            string // pin the process to these CPUs, e.g. "0-1"

	// The live channels and VOD titles (origin.Live).
	Channels       int
	Titles         int
	Ladder         bitrates
	TargetDuration time.Duration
	Window         int
	TitleSegments  int

	// The low-latency channels (origin.LL).
	LLChannels      int
	PartTarget      time.Duration
	PartsPerSegment int
	LLBitrate       int64
}

func newOriginCmd(stdout, stderr io.Writer) *cobra.Command {
	o := OriginOptions{
		ManifestSize: origin.DefaultManifestSize,
		SegmentSize:  origin.DefaultSegmentSize,
		TransferRate: origin.DefaultTransferRate,
		Ladder:       bitrates(slices.Clone(origin.DefaultLadder)),
	}
	c := &cobra.Command{
		Use:   "origin",
		Short: "Serve the synthetic HLS origin, with a control API for failure modes and counters",
		Long: `Serve the synthetic HLS origin until interrupted.

Data listener (--listen):
  /stream/master.m3u8     master playlist pointing at index.m3u8
  /stream/index.m3u8      media playlist of exactly --manifest-size bytes
  /stream/segment-N.ts    segment N (any N >= 0) of exactly --segment-size bytes,
                          deterministic bytes; ranges, ETag, If-None-Match
  /live/C/master.m3u8     live channel C (0 to --channels - 1): one variant
                          R/index.m3u8 per --ladder bitrate, R = 0 the lowest
  /live/C/R/index.m3u8    the newest --window segments, moving with the wall
                          clock: segment N spans [N, N+1) x --target-duration
                          after the Unix epoch and is listed once it ends;
                          X-Hlsbench-Live-Edge is the newest N listed
  /live/C/R/N.ts          segment N once listed (404 before) and ever after,
                          of bitrate x --target-duration / 8 bytes
  /vod/T/master.m3u8      VOD title T (0 to --titles - 1), the same ladder
  /vod/T/R/index.m3u8     --title-segments segments, then EXT-X-ENDLIST
  /vod/T/R/K.ts           segment K, of bitrate x --target-duration / 8 bytes
  /health                 200 "ok", 503 while failing
Every object answer carries X-Hlsbench-Crc32c (whole object), X-Origin-Generated
(Unix ns) and X-Origin-Version (per request URI), after --first-byte-delay and
paced at --transfer-rate.

Control listener (--control): GET /healthz, GET /mode,
POST /mode?set=healthy|5xx|refuse|drop, GET /stats, POST /stats/reset.
It has no authentication: keep it on loopback.

Sizes take a unit: 2048, 4MiB, 25MiB (also KiB, GiB, kB, MB, GB).
Bitrates are bits per second, with k or M if you like: 150k,300k,600k,1.2M.`,
		Example: `  hlsbench origin
  hlsbench origin --listen 127.0.0.1:0 --control 127.0.0.1:0 --first-byte-delay 0 --transfer-rate 0
  curl -X POST 'http://127.0.0.1:8082/mode?set=5xx'`,
		Args: exactArgs(0, "no arguments"),
		RunE: func(c *cobra.Command, args []string) error {
			return RunOrigin(c.Context(), stdout, stderr, o)
		},
	}
	f := c.Flags()
	f.StringVar(&o.Listen, "listen", "127.0.0.1:8081", "data listener address (port 0 picks one)")
	f.StringVar(&o.Control, "control", "127.0.0.1:8082", "control API address (port 0 picks one)")
	f.Var(&o.ManifestSize, "manifest-size", "exact size of the media playlist")
	f.Var(&o.SegmentSize, "segment-size", "exact size of every segment")
	f.DurationVar(&o.SegmentDuration, "segment-duration", origin.DefaultSegmentDuration, "EXTINF of every segment")
	f.DurationVar(&o.FirstByteDelay, "first-byte-delay", origin.DefaultFirstByteDelay, "wait before the status line of every object answer (0: none)")
	f.Var(&o.TransferRate, "transfer-rate", "body bytes per second per answer (0: unlimited)")
	f.Uint64Var(&o.Seed, "seed", 0, "seed of the segment bytes")
	f.StringVar(&o.CacheControl.Master, "cache-control-master", origin.DefaultMasterCacheControl, "Cache-Control of the master playlist")
	f.StringVar(&o.CacheControl.Manifest, "cache-control-manifest", origin.DefaultManifestCacheControl, "Cache-Control of the media playlist")
	f.StringVar(&o.CacheControl.Segment, "cache-control-segment", origin.DefaultSegmentCacheControl, "Cache-Control of segments")
	f.StringVar(&o.CPUs, "cpus", "", "pin every thread of this process to these CPUs, e.g. 0 or 0-2 (hlsbench run passes it)")
	f.IntVar(&o.Channels, "channels", origin.DefaultChannels, "live channels under /live/")
	f.IntVar(&o.Titles, "titles", origin.DefaultTitles, "VOD titles under /vod/")
	f.Var(&o.Ladder, "ladder", "bitrate of each rendition of every channel and title, ascending")
	f.DurationVar(&o.TargetDuration, "target-duration", origin.DefaultTargetDuration, "duration of every live and VOD segment (whole milliseconds)")
	f.IntVar(&o.Window, "window", origin.DefaultWindow, "segments a live media playlist lists")
	f.IntVar(&o.TitleSegments, "title-segments", origin.DefaultTitleSegments, "segments of every VOD title")
	f.IntVar(&o.LLChannels, "ll-channels", origin.DefaultLLChannels, "low-latency channels under /ll/")
	f.DurationVar(&o.PartTarget, "part-target", origin.DefaultPartTarget, "low-latency channels: every part's duration (whole milliseconds, 100ms to 5s)")
	f.IntVar(&o.PartsPerSegment, "parts-per-segment", origin.DefaultPartsPerSegment, "low-latency channels: parts of a segment")
	f.Int64Var(&o.LLBitrate, "ll-bitrate", origin.DefaultLLBitrate, "low-latency channels: bits per second, which sizes the parts")
	return c
}

// originFlags names the flag behind each origin.Config field.
var originFlags = map[string]string{
	"ManifestSize":          "--manifest-size",
	"SegmentSize":           "--segment-size",
	"SegmentDuration":       "--segment-duration",
	"FirstByteDelay":        "--first-byte-delay",
	"TransferRate":          "--transfer-rate",
	"CacheControl.Master":   "--cache-control-master",
	"CacheControl.Manifest": "--cache-control-manifest",
	"CacheControl.Segment":  "--cache-control-segment",
	"Live.Channels":         "--channels",
	"Live.Titles":           "--titles",
	"Live.Ladder":           "--ladder",
	"Live.TargetDuration":   "--target-duration",
	"Live.Window":           "--window",
	"Live.TitleSegments":    "--title-segments",
	"LL.Channels":           "--ll-channels",
	"LL.PartTarget":         "--part-target",
	"LL.PartsPerSegment":    "--parts-per-segment",
	"LL.Bitrate":            "--ll-bitrate",
	"LL.Window":             "--parts-per-segment",
}

// RunOrigin is `hlsbench origin`: it serves until ctx is cancelled.
func RunOrigin(ctx context.Context, stdout, stderr io.Writer, o OriginOptions) error {
	cfg, err := o.config()
	if err != nil {
		return err
	}
	orig, err := origin.New(cfg)
	if err != nil {
		var ce *origin.ConfigError
		if errors.As(err, &ce) {
			return usagef("%s: %s", originFlags[ce.Field], ce.Msg)
		}
		return err
	}
	for _, a := range []struct{ flag, addr string }{{"--listen", o.Listen}, {"--control", o.Control}} {
		if _, _, err := net.SplitHostPort(a.addr); err != nil {
			return usagef("%s %q: want host:port, e.g. 127.0.0.1:8081", a.flag, a.addr)
		}
	}
	if err := pinFlag(o.CPUs); err != nil {
		return err
	}
	if !isLoopback(o.Control) {
		fmt.Fprintf(stderr, "origin: warning: --control %s is not a loopback address; anyone who reaches it can make the origin fail\n", o.Control)
	}
	srv, err := origin.Start(orig, o.Listen, o.Control)
	if err != nil {
		return fmt.Errorf("start origin: %w", err)
	}
	defer srv.Close()
	fmt.Fprintln(stdout, origin.ReadyLine(srv.DataAddr(), srv.ControlAddr()))
	<-ctx.Done()
	return srv.Close()
}

func (o OriginOptions) config() (origin.Config, error) {
	cfg := origin.Config{
		SegmentSize:     int64(o.SegmentSize),
		SegmentDuration: o.SegmentDuration,
		FirstByteDelay:  o.FirstByteDelay,
		TransferRate:    int64(o.TransferRate),
		CacheControl:    o.CacheControl,
		Seed:            o.Seed,
		Live: origin.Live{
			Channels:       o.Channels,
			Titles:         o.Titles,
			Ladder:         slices.Clone(o.Ladder),
			TargetDuration: o.TargetDuration,
			Window:         o.Window,
			TitleSegments:  o.TitleSegments,
		},
		LL: origin.LL{Channels: o.LLChannels, PartTarget: o.PartTarget, PartsPerSegment: o.PartsPerSegment, Bitrate: o.LLBitrate},
	}
	if o.ManifestSize <= 0 || o.ManifestSize > origin.MaxManifestSize {
		return cfg, usagef("--manifest-size %d: want 1 to %d bytes", o.ManifestSize, origin.MaxManifestSize)
	}
	cfg.ManifestSize = int(o.ManifestSize)
	if o.SegmentSize <= 0 {
		return cfg, usagef("--segment-size %d: want 1 byte or more", o.SegmentSize)
	}
	if o.SegmentDuration <= 0 {
		return cfg, usagef("--segment-duration %v: want a positive duration", o.SegmentDuration)
	}
	// On the command line 0 means none; in origin.Config it means the default.
	switch {
	case o.FirstByteDelay < 0:
		return cfg, usagef("--first-byte-delay %v: want 0 (none) or more", o.FirstByteDelay)
	case o.FirstByteDelay == 0:
		cfg.FirstByteDelay = origin.NoDelay
	}
	if o.TransferRate == 0 {
		cfg.TransferRate = origin.Unlimited
	}
	for _, f := range []struct{ flag, v string }{
		{"--cache-control-master", o.CacheControl.Master},
		{"--cache-control-manifest", o.CacheControl.Manifest},
		{"--cache-control-segment", o.CacheControl.Segment},
	} {
		if strings.TrimSpace(f.v) == "" {
			return cfg, usagef("%s: want a Cache-Control value, e.g. \"public, max-age=60\"", f.flag)
		}
	}
	// In origin.Live 0 means the default; on the command line it is a
	// mistake. Upper bounds are origin.New's, named by originFlags.
	for _, f := range []struct {
		flag string
		v    int
	}{{"--channels", o.Channels}, {"--titles", o.Titles}, {"--window", o.Window}, {"--title-segments", o.TitleSegments},
		{"--ll-channels", o.LLChannels}, {"--parts-per-segment", o.PartsPerSegment}, {"--ll-bitrate", int(min(o.LLBitrate, 1<<30))}} {
		if f.v < 1 {
			return cfg, usagef("%s %d: want 1 or more", f.flag, f.v)
		}
	}
	if o.PartTarget <= 0 {
		return cfg, usagef("--part-target %v: want a positive duration, e.g. 500ms", o.PartTarget)
	}
	if o.TargetDuration <= 0 {
		return cfg, usagef("--target-duration %v: want a positive duration, e.g. 2s", o.TargetDuration)
	}
	if len(o.Ladder) == 0 {
		return cfg, usagef("--ladder: want at least one bitrate, e.g. %s", defaultLadder())
	}
	return cfg, nil
}

func defaultLadder() string { return origin.FormatLadder(origin.DefaultLadder) }

func isLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// byteSize is a flag holding a number of bytes, written with or without a
// unit: 2048, 64KiB, 4MiB, 25MB.
type byteSize int64

func (b *byteSize) String() string { return origin.FormatBytes(int64(*b)) }

func (b *byteSize) Set(s string) error {
	v, err := origin.ParseBytes(s)
	if err != nil {
		return err
	}
	*b = byteSize(v)
	return nil
}

func (b *byteSize) Type() string { return "size" }

// bitrates is a flag holding an ABR ladder in bits per second, each written
// plain or with k (1e3) or M (1e6): 150k,300k,600k,1.2M.
type bitrates []int64

func (b *bitrates) String() string { return origin.FormatLadder(*b) }

func (b *bitrates) Set(s string) error {
	v, err := origin.ParseLadder(s)
	if err != nil {
		return err
	}
	*b = v
	return nil
}

func (b *bitrates) Type() string { return "bitrates" }

// byteSizes is a flag holding a comma list of sizes, as byteSize reads
// each: 32MiB,128MiB.
type byteSizes []int64

func (b *byteSizes) String() string { return origin.FormatByteList(*b) }

func (b *byteSizes) Set(s string) error {
	v, err := origin.ParseByteList(s)
	if err != nil {
		return err
	}
	*b = v
	return nil
}

func (b *byteSizes) Type() string { return "sizes" }
