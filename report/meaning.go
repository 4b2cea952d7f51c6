package report

import (
	"fmt"
	"slices"
	"time"

	"github.com/hlsbench/hlsbench/results"
)

// staleAudience is the part of live-audience's pass evidence that
// staleMeaning reads: the worst live-edge staleness of the pass.
type staleAudience struct {
	StalenessMaxS *float64 `json:"staleness_max_s"`
}

// staleOutlier is how many times its p99 a cell's worst live-edge
// staleness must be before the page explains it: below, the worst answer
// is the tail the p99 already describes.
const staleOutlier = 10

// staleMeaning explains a live-audience cell whose worst live playlist was
// far staler than its p99 says, when the cell's own passes explain it: the
// copy was older than half the time between the starts of its passes, so
// it was cached in an earlier pass and kept while the engine sat idle (in
// a suite, the other cells run their passes in between). An engine that
// serves an expired object of any age while one background update runs
// (NGINX's proxy_cache_use_stale updating) hands that copy to the first
// request of the next pass; an engine with a grace limit refuses it and
// fetches. The p99 holds these answers only as a few among thousands, so
// without this sentence a reader sees neither the worst copy nor why;
// without the pass interval they would read the idle gap, which the
// workload makes, as a property of the engine. "" when there is nothing to
// explain.
func staleMeaning(label, engine string, r *results.Result) string {
	if r.Workload != "live-audience" || r.Test != "live-edge-staleness" || r.Value == nil || *r.Value <= 0 {
		return ""
	}
	worst := 0.0
	var starts []time.Time
	for _, p := range r.Passes {
		if !p.StartedAt.IsZero() {
			starts = append(starts, p.StartedAt)
		}
		if p.Warmup || !p.Valid {
			continue
		}
		if a := results.Part[staleAudience](p.Evidence, "audience"); a != nil && a.StalenessMaxS != nil {
			worst = max(worst, *a.StalenessMaxS)
		}
	}
	if worst < staleOutlier**r.Value || len(starts) < 2 {
		return ""
	}
	slices.SortFunc(starts, func(a, b time.Time) int { return a.Compare(b) })
	gaps := make([]float64, 0, len(starts)-1)
	for i := 1; i < len(starts); i++ {
		gaps = append(gaps, starts[i].Sub(starts[i-1]).Seconds())
	}
	slices.Sort(gaps)
	every := gaps[len(gaps)/2]
	if worst < every/2 {
		return ""
	}
	s := fmt.Sprintf("%s served a live playlist up to %s stale, %s× its p99: its passes started every %s and the engine sat idle between them "+
		"(in a suite, while the other cells ran theirs), so the first request of a pass for a playlist last fetched in the pass before was answered with that old copy.",
		label, valueText(worst, "s"), results.Sig3(worst / *r.Value), valueText(every, "s"))
	if baseEngine(engine) == "nginx" {
		s += " Serving it is NGINX's behaviour under the same policy: proxy_cache_use_stale updating serves an expired object of any age " +
			"while one background update runs, where Varnish's and Vinyl Cache's grace refuses an object past its TTL plus grace and fetches anew, " +
			"so in service a rendition nobody watched for a while gives its first viewer the copy from when it was last watched; the age, set by the idle time, is the workload's."
	}
	return s
}
