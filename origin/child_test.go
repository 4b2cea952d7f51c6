package origin

import (
	"strings"
	"testing"
	"time"
)

func TestReadyLineRoundTrip(t *testing.T) {
	line := ReadyLine("127.0.0.1:8081", "127.0.0.1:9091")
	if line != "origin: data http://127.0.0.1:8081 control http://127.0.0.1:9091" {
		t.Fatalf("ReadyLine = %q", line)
	}
	data, control, err := ParseReady(line[len(ReadyPrefix):])
	if err != nil || data != "http://127.0.0.1:8081" || control != "http://127.0.0.1:9091" {
		t.Errorf("ParseReady = %q, %q, %v", data, control, err)
	}
	if _, _, err := ParseReady("data http://x"); err == nil {
		t.Error("ParseReady accepted a short line")
	}
}

// ChildArgs passes the Live fields that are set, and only those, so the
// child's defaults stay the origin's.
func TestChildArgsLive(t *testing.T) {
	flags := func(args []string) map[string]string {
		m := map[string]string{}
		for i := 0; i+1 < len(args); i++ {
			if strings.HasPrefix(args[i], "--") {
				m[args[i]] = args[i+1]
			}
		}
		return m
	}
	live := []string{"--channels", "--titles", "--ladder", "--target-duration", "--window", "--title-segments"}
	got := flags(ChildArgs(Config{}, "127.0.0.1:0"))
	for _, f := range live {
		if v, ok := got[f]; ok {
			t.Errorf("zero Live passes %s %s", f, v)
		}
	}
	cfg := Config{Live: Live{Channels: 2, Titles: 9, Ladder: []int64{100_000, 1_250_000}, TargetDuration: 1500 * time.Millisecond, Window: 3, TitleSegments: 7}}
	got = flags(ChildArgs(cfg, "127.0.0.1:0"))
	want := map[string]string{"--channels": "2", "--titles": "9", "--ladder": "100000,1250000", "--target-duration": "1.5s", "--window": "3", "--title-segments": "7"}
	for f, v := range want {
		if got[f] != v {
			t.Errorf("%s %q, want %q", f, got[f], v)
		}
	}
	got = flags(ChildArgs(Config{Live: Live{Window: 4}}, "127.0.0.1:0"))
	if got["--window"] != "4" || got["--channels"] != "" || got["--ladder"] != "" {
		t.Errorf("only Window set: %v", got)
	}
}

// ChildArgs passes the LL fields that are set, and only those.
func TestChildArgsLL(t *testing.T) {
	has := func(args []string, flag, v string) bool {
		for i := 0; i+1 < len(args); i++ {
			if args[i] == flag {
				return args[i+1] == v
			}
		}
		return v == ""
	}
	args := ChildArgs(Config{}, "127.0.0.1:0")
	for _, f := range []string{"--ll-channels", "--part-target", "--parts-per-segment", "--ll-bitrate"} {
		if !has(args, f, "") {
			t.Errorf("zero LL passes %s: %v", f, args)
		}
	}
	args = ChildArgs(Config{LL: LL{Channels: 3, PartTarget: 250 * time.Millisecond, PartsPerSegment: 8, Bitrate: 800_000}}, "127.0.0.1:0")
	for f, v := range map[string]string{"--ll-channels": "3", "--part-target": "250ms", "--parts-per-segment": "8", "--ll-bitrate": "800000"} {
		if !has(args, f, v) {
			t.Errorf("%s: want %s in %v", f, v, args)
		}
	}
}
