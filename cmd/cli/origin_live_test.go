package cli

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hlsbench/hlsbench/origin"
)

func TestBitratesFlag(t *testing.T) {
	for _, c := range []struct {
		in, out string
		want    []int64
	}{
		{"150k,300k,600k,1.2M", "150k,300k,600k,1.2M", []int64{150_000, 300_000, 600_000, 1_200_000}},
		{"150000, 1200000", "150k,1.2M", []int64{150_000, 1_200_000}},
		{"0.5M,1.25M,2M,12.345M", "500k,1.25M,2M,12.345M", []int64{500_000, 1_250_000, 2_000_000, 12_345_000}},
		{"1.5k,999,1000500,2.0M", "1500,999,1000500,2M", []int64{1500, 999, 1_000_500, 2_000_000}},
	} {
		var b bitrates
		if err := b.Set(c.in); err != nil || !slices.Equal(b, c.want) || b.String() != c.out {
			t.Errorf("Set(%q) = %v, %v; String %q, want %v and %q", c.in, []int64(b), err, b.String(), c.want, c.out)
		}
	}
	for _, in := range []string{"", "150k,", "1.2", "1.2345k", "150K", "1e6", "-150k", "150 k", "1..2M", ".5M", "5.M", "99999999999999999999"} {
		var b bitrates
		if err := b.Set(in); err == nil || !strings.Contains(err.Error(), "want bitrates") {
			t.Errorf("Set(%q) = %v, %v; want an error saying what it takes", in, []int64(b), err)
		}
	}
}

// Bad live flags are usage errors naming the flag, whether the command or
// origin.New finds them.
func TestOriginLiveFlagErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		flag string
	}{
		{[]string{"--channels", "0"}, "--channels"},
		{[]string{"--channels", "70000"}, "--channels"},
		{[]string{"--titles", "-1"}, "--titles"},
		{[]string{"--ladder", "300k,150k"}, "--ladder"},
		{[]string{"--ladder", "fast"}, "--ladder"},
		{[]string{"--target-duration", "1500us"}, "--target-duration"},
		{[]string{"--target-duration", "2m"}, "--target-duration"},
		{[]string{"--window", "1001"}, "--window"},
		{[]string{"--title-segments", "0"}, "--title-segments"},
	} {
		var stderr bytes.Buffer
		args := append([]string{"origin", "--listen", "127.0.0.1:0", "--control", "127.0.0.1:0"}, c.args...)
		if code := Run(context.Background(), args, io.Discard, &stderr); code != ExitUsage || !strings.Contains(stderr.String(), c.flag) {
			t.Errorf("%q: exit %d, %q; want %d naming %s", c.args, code, stderr.String(), ExitUsage, c.flag)
		}
	}
}

// A child origin started from origin.ChildArgs serves the live namespace of
// its Config.
func TestOriginChildArgsLive(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	live := origin.Live{Channels: 2, Titles: 3, Ladder: []int64{100_000, 250_000}, TargetDuration: 1500 * time.Millisecond, Window: 3, TitleSegments: 7}
	cfg := origin.Config{FirstByteDelay: origin.NoDelay, TransferRate: origin.Unlimited, Live: live}
	data, done := serveChildArgs(t, ctx, cfg)
	get := func(path string) (*http.Response, string) {
		t.Helper()
		resp, err := http.Get(data + path)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp, string(b)
	}
	if resp, body := get(origin.LiveMasterPath(1)); resp.StatusCode != 200 || strings.Count(body, "#EXT-X-STREAM-INF:") != 2 || !strings.Contains(body, "BANDWIDTH=250000,") {
		t.Errorf("%s: %s\n%s", origin.LiveMasterPath(1), resp.Status, body)
	}
	if resp, _ := get(origin.LiveMasterPath(2)); resp.StatusCode != 404 {
		t.Errorf("channel 2 of 2: %s", resp.Status)
	}
	resp, body := get(origin.LiveMediaPath(1, 1))
	if resp.StatusCode != 200 || strings.Count(body, "#EXTINF:1.500,") != 3 || !strings.Contains(body, "#EXT-X-TARGETDURATION:2\n") {
		t.Errorf("%s: %s\n%s", origin.LiveMediaPath(1, 1), resp.Status, body)
	}
	if resp, body := get(origin.VODMediaPath(2, 0)); resp.StatusCode != 200 || strings.Count(body, "#EXTINF:") != 7 {
		t.Errorf("%s: %s\n%s", origin.VODMediaPath(2, 0), resp.Status, body)
	}
	if resp, body := get(origin.VODSegmentPath(2, 1, 6)); resp.StatusCode != 200 || int64(len(body)) != live.SegmentSize(1) || live.SegmentSize(1) != 46_875 {
		t.Errorf("%s: %s, %d bytes, want %d", origin.VODSegmentPath(2, 1, 6), resp.Status, len(body), live.SegmentSize(1))
	}
	cancel()
	if code := <-done; code != 0 {
		t.Errorf("exit %d", code)
	}
}
