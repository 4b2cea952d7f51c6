package origin

import (
	"fmt"
	"strconv"
	"strings"
)

// ReadyPrefix starts the line `hlsbench origin` prints on stdout once both
// listeners are up: "origin: data http://A control http://B".
const ReadyPrefix = "origin: "

// ReadyLine is that line, for the command that serves the origin.
func ReadyLine(dataAddr, controlAddr string) string {
	return fmt.Sprintf("%sdata http://%s control http://%s", ReadyPrefix, dataAddr, controlAddr)
}

// ParseReady reads the rest of the ready line (after ReadyPrefix).
func ParseReady(rest string) (dataURL, controlURL string, err error) {
	f := strings.Fields(rest)
	if len(f) != 4 || f[0] != "data" || f[2] != "control" {
		return "", "", fmt.Errorf("origin: unexpected ready line %q", ReadyPrefix+rest)
	}
	return f[1], f[3], nil
}

// ChildArgs are the arguments of `hlsbench origin` serving cfg on listen,
// its control API on a loopback port of its own choosing.
// Zero fields keep the command's defaults, which are Config's.
func ChildArgs(cfg Config, listen string) []string {
	args := []string{"origin", "--listen", listen, "--control", "127.0.0.1:0", "--seed", fmt.Sprint(cfg.Seed)}
	for _, f := range []struct{ flag, v string }{
		{"--cache-control-master", cfg.CacheControl.Master},
		{"--cache-control-manifest", cfg.CacheControl.Manifest},
		{"--cache-control-segment", cfg.CacheControl.Segment},
	} {
		if f.v != "" {
			args = append(args, f.flag, f.v)
		}
	}
	if cfg.ManifestSize > 0 {
		args = append(args, "--manifest-size", fmt.Sprint(cfg.ManifestSize))
	}
	if cfg.SegmentSize > 0 {
		args = append(args, "--segment-size", fmt.Sprint(cfg.SegmentSize))
	}
	if cfg.SegmentDuration > 0 {
		args = append(args, "--segment-duration", cfg.SegmentDuration.String())
	}
	switch {
	case cfg.FirstByteDelay < 0:
		args = append(args, "--first-byte-delay", "0")
	case cfg.FirstByteDelay > 0:
		args = append(args, "--first-byte-delay", cfg.FirstByteDelay.String())
	}
	switch {
	case cfg.TransferRate < 0:
		args = append(args, "--transfer-rate", "0")
	case cfg.TransferRate > 0:
		args = append(args, "--transfer-rate", fmt.Sprint(cfg.TransferRate))
	}
	return append(append(args, liveArgs(cfg.Live)...), llArgs(cfg.LL)...)
}

// llArgs are the flags of the set fields of l (its window and playlist
// Cache-Control have no flag: they take their defaults).
func llArgs(l LL) []string {
	var args []string
	if l.Channels != 0 {
		args = append(args, "--ll-channels", strconv.Itoa(l.Channels))
	}
	if l.PartTarget != 0 {
		args = append(args, "--part-target", l.PartTarget.String())
	}
	if l.PartsPerSegment != 0 {
		args = append(args, "--parts-per-segment", strconv.Itoa(l.PartsPerSegment))
	}
	if l.Bitrate != 0 {
		args = append(args, "--ll-bitrate", strconv.FormatInt(l.Bitrate, 10))
	}
	return args
}

// liveArgs are the flags of the set fields of l. Out-of-range values are
// passed as they are, for the child to reject as New would.
func liveArgs(l Live) []string {
	var args []string
	for _, f := range []struct {
		flag string
		v    int
	}{
		{"--channels", l.Channels},
		{"--titles", l.Titles},
		{"--window", l.Window},
		{"--title-segments", l.TitleSegments},
	} {
		if f.v != 0 {
			args = append(args, f.flag, strconv.Itoa(f.v))
		}
	}
	if len(l.Ladder) > 0 {
		bps := make([]string, len(l.Ladder))
		for i, b := range l.Ladder {
			bps[i] = strconv.FormatInt(b, 10) // the flag takes plain numbers too
		}
		args = append(args, "--ladder", strings.Join(bps, ","))
	}
	if l.TargetDuration != 0 {
		args = append(args, "--target-duration", l.TargetDuration.String())
	}
	return args
}
