package report

import (
	"fmt"
	"strings"
	"time"

	"github.com/hlsbench/hlsbench/results"
)

// Part is one part of the page as it was measured: a suite of a page
// measured in parts (its merged manifest's parts), or, without parts, one
// run. The test conditions show a row each, so that a reader knows how
// long each took, on what host and with which build.
type Part struct {
	Name      string
	Workloads []string
	// Duration is from the part's start to its last write; 0 when the
	// runs did not record it.
	Duration time.Duration
	// Hosts and Builds are its runs' own, each once.
	Hosts, Builds []string
}

// DurationText is the part's duration to the minute, or "unknown".
func (p Part) DurationText() string {
	if p.Duration <= 0 {
		return "unknown"
	}
	d := p.Duration.Round(time.Minute)
	if d == 0 {
		return p.Duration.Round(time.Second).String()
	}
	h, m := int(d.Hours()), int(d.Minutes())%60
	switch {
	case h == 0:
		return fmt.Sprintf("%d min", m)
	case m == 0:
		return fmt.Sprintf("%d h", h)
	}
	return fmt.Sprintf("%d h %d min", h, m)
}

// hostText is a run's host as the parts table shows it.
func hostText(h results.Host) string {
	s := fmt.Sprintf("%s, %d cores", orUnknown(h.CPUModel), h.Cores)
	if h.Hostname != "" {
		s = h.Hostname + " (" + s + ")"
	}
	return s
}

// parts are the page's parts: a merged manifest's, each with the runs
// that started within it; else one per run.
func parts(in *Input) []Part {
	var out []Part
	if m := in.Manifest; m != nil && len(m.Parts) > 0 {
		for _, mp := range m.Parts {
			p := Part{Name: mp.Name, Workloads: mp.Workloads}
			if !mp.CreatedAt.IsZero() && mp.UpdatedAt.After(mp.CreatedAt) {
				p.Duration = mp.UpdatedAt.Sub(mp.CreatedAt)
			}
			for _, s := range in.Sources {
				r := s.Run
				// A part's runs are those it started: a resumed suite's
				// start in its window too.
				if r.StartedAt.Before(mp.CreatedAt) || r.StartedAt.After(mp.UpdatedAt) || !ranAny(r, mp.Workloads) {
					continue
				}
				p.Hosts = appendNew(p.Hosts, hostText(r.Host))
				p.Builds = appendNew(p.Builds, buildOf(r))
			}
			out = append(out, p)
		}
		return out
	}
	for _, s := range in.Sources {
		r := s.Run
		p := Part{Name: r.ID, Hosts: []string{hostText(r.Host)}, Builds: []string{buildOf(r)}}
		for _, w := range r.Workloads {
			p.Workloads = append(p.Workloads, w.Name)
		}
		if len(p.Workloads) == 0 {
			for _, x := range r.Results {
				p.Workloads = appendNew(p.Workloads, x.Workload)
			}
		}
		if !r.FinishedAt.IsZero() && r.FinishedAt.After(r.StartedAt) {
			p.Duration = r.FinishedAt.Sub(r.StartedAt)
		}
		out = append(out, p)
	}
	return out
}

// ranAny says the run ran one of the workloads.
func ranAny(r *results.Run, workloads []string) bool {
	for _, w := range r.Workloads {
		for _, x := range workloads {
			if w.Name == x {
				return true
			}
		}
	}
	for _, x := range r.Results {
		for _, w := range workloads {
			if x.Workload == w {
				return true
			}
		}
	}
	return false
}

// partsTotal is the parts' summed duration, as text: what the page cost
// to measure.
func partsTotal(ps []Part) string {
	var d time.Duration
	for _, p := range ps {
		if p.Duration <= 0 {
			return ""
		}
		d += p.Duration
	}
	return Part{Duration: d}.DurationText()
}

func joinOr(l []string, none string) string {
	if len(l) == 0 {
		return none
	}
	return strings.Join(l, ", ")
}
