package loadgen

// TEMPORARY: stand-ins for the API of the loadgen-fixes branch, so the
// workloads can be built against it before the merge. Deleted at the merge.

import (
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
)

func NewHistogram() *hdr.Histogram { return hdr.New(1, int64(MaxLatency), 3) }

type ErrorSample struct {
	Kind, Message string
	Count         int64
}

type LagEffect struct {
	Figure                  string
	Quantile                float64
	Corrected, FromDispatch time.Duration
	Exceeded                bool
}

func (r *Result) Verdict(quantiles ...float64) (bool, []string) {
	reasons := append([]string{}, r.InvalidReasons...)
	if r.OK == 0 && r.Requests > 0 {
		reasons = append(reasons, "no successful request")
	}
	return len(reasons) == 0, reasons
}
