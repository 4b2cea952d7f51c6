package cli

import (
	"os"
	"testing"
)

// An A/B in one run that must find a regression: two external proxies side
// by side, the same cache (the built-in one, in this process) in front of
// an origin of its own each, one of them holding every answer 0.2 ms more.
// hit-path's p50 TTFB is a regression of a→b (exit 1), decided by
// hlsbench run --decide with its default bound (3× --passes); the proxies'
// figures are otherwise the same. It is what the nightly's verdict is for:
// a change of 0.2 ms on a path of tens of microseconds.
func TestCompareExternalDelayIsRegression(t *testing.T) {
	if raceEnabled {
		t.Skip("an end-to-end latency verdict: run without -race")
	}
	if testing.Short() {
		t.Skip("runs hit-path on two proxies for about 20 s, and up to a minute")
	}
	code, out, errs := decideDelay(t, "external@a", "external@b", false,
		"--rate", "500", "--passes", "8", "--warmups", "1", "--pass-duration", "1s")
	if os.Getenv("HLSBENCH_SHOW") != "" {
		t.Log(out)
	}
	checkDelayDecision(t, "external@a→external@b", code, out, errs)
}
