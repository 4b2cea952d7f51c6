package loadgen

import (
	"encoding/json"
	"fmt"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
)

// A Result travels between hosts (a generator agent to its controller) as
// JSON: its counts as they are, its histograms in HdrHistogram's compressed
// V2 encoding (every count, not a summary), and the checks that are not
// lateness. The verdict is not sent: the receiver takes it again on the
// histograms, as MergeShares does on the merged ones.
type wireResult struct {
	*plainResult
	Checks []string `json:"checks"`
	// Instrument are the checks that are the instrument's (absent from
	// an older agent's: then every check is the server's).
	Instrument []string          `json:"instrument,omitempty"`
	Worst      wireLoop          `json:"worst"`
	Hists      map[string]string `json:"histograms"`
}

// plainResult is Result without its methods, so its exported fields encode
// as they are; the histograms and the verdict are left out by their tags.
type plainResult Result

type wireLoop struct {
	ID     int           `json:"id"`
	CPU    int           `json:"cpu"`
	LagP99 time.Duration `json:"lag_p99_ns"`
}

// wireHists names the histograms of r as they travel.
func wireHists(r *Result) map[string]**hdr.Histogram {
	return map[string]**hdr.Histogram{"ttfb": &r.TTFB, "ttfb_uncorrected": &r.TTFBUncorrected, "total": &r.Total,
		"total_uncorrected": &r.TotalUncorrected, "ttfb_from_dispatch": &r.TTFBFromDispatch, "total_from_dispatch": &r.TotalFromDispatch,
		"schedule_lag": &r.ScheduleLag, "connection_wait": &r.ConnectionWait, "stamp_delay": &r.stampDelay, "rx_delay": &r.rxDelay,
		"arrivals": &r.arrive, "queued_at": &r.QueuedAt}
}

// MarshalWire encodes r for another host: see UnmarshalWire.
func (r *Result) MarshalWire() ([]byte, error) {
	w := wireResult{plainResult: (*plainResult)(r), Checks: r.checks, Instrument: r.instrument,
		Worst: wireLoop{ID: r.worst.id, CPU: r.worst.cpu, LagP99: r.worst.lagP99}, Hists: map[string]string{}}
	for name, h := range wireHists(r) {
		if *h == nil {
			continue
		}
		b, err := (*h).Encode(hdr.V2CompressedEncodingCookieBase)
		if err != nil {
			return nil, fmt.Errorf("encode the %s histogram: %w", name, err)
		}
		w.Hists[name] = string(b)
	}
	return json.Marshal(w)
}

// UnmarshalWire decodes a Result that MarshalWire encoded, and takes its
// verdict again on its histograms and checks.
func UnmarshalWire(b []byte) (*Result, error) {
	r := &Result{}
	w := wireResult{plainResult: (*plainResult)(r)}
	if err := json.Unmarshal(b, &w); err != nil {
		return nil, fmt.Errorf("a generator's result: %w", err)
	}
	r.checks, r.instrument = w.Checks, w.Instrument
	r.worst = loopInfo{id: w.Worst.ID, cpu: w.Worst.CPU, lagP99: w.Worst.LagP99}
	for name, h := range wireHists(r) {
		enc, ok := w.Hists[name]
		if !ok {
			return nil, fmt.Errorf("a generator's result: no %s histogram", name)
		}
		d, err := hdr.Decode([]byte(enc))
		if err != nil {
			return nil, fmt.Errorf("a generator's result: the %s histogram: %w", name, err)
		}
		*h = d
	}
	r.judge()
	return r, nil
}

// Invalidate makes the pass invalid for a reason of the instrument's found
// outside the generator (a controller's clock check, say): it joins the
// checks that are not lateness, among InstrumentChecks, and the verdict is
// taken again.
func (r *Result) Invalidate(reason string) {
	r.checks, r.instrument = append(r.checks, reason), append(r.instrument, reason)
	r.judge()
}
