package workloads

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/hlsbench/hlsbench/results"
)

// WriteTable prints one workload's results as a table, one row per engine,
// one column per test, like the reference page's sections.
func WriteTable(w io.Writer, spec Spec, all []*results.Result) {
	var tests []string
	rows := map[string]map[string]*results.Result{}
	var engines []string
	for _, r := range all {
		if r.Workload != spec.Name {
			continue
		}
		key := r.Engine + " (" + r.Runtime + ", " + r.Topology + ")"
		if rows[key] == nil {
			rows[key] = map[string]*results.Result{}
			engines = append(engines, key)
		}
		if !contains(tests, r.Test) {
			tests = append(tests, r.Test)
		}
		rows[key][r.Test] = r
	}
	if len(engines) == 0 {
		return
	}
	fmt.Fprintf(w, "\n%s — %s\n", spec.Title, spec.Description)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	head := []string{"engine"}
	for _, t := range tests {
		head = append(head, titleOf(rows, engines, t))
	}
	head = append(head, "passes", "valid")
	fmt.Fprintln(tw, strings.Join(head, "\t"))
	var notes []string
	for _, e := range engines {
		cells := []string{e}
		valid := true
		n := 0
		for _, t := range tests {
			r := rows[e][t]
			if r == nil {
				cells = append(cells, "-")
				continue
			}
			cells = append(cells, formatValue(r))
			n = max(n, r.Spread.N)
			if !r.Valid {
				valid = false
				for _, why := range r.InvalidReasons {
					note := fmt.Sprintf("  %s %s: %s", e, r.Test, why)
					if len(notes) < 6 && !contains(notes, note) {
						notes = append(notes, note)
					}
				}
			}
		}
		cells = append(cells, fmt.Sprint(n), map[bool]string{true: "yes", false: "NO"}[valid])
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
	}
	tw.Flush()
	for _, n := range notes {
		fmt.Fprintln(w, n)
	}
}

func titleOf(rows map[string]map[string]*results.Result, engines []string, test string) string {
	for _, e := range engines {
		if r := rows[e][test]; r != nil {
			return r.Title
		}
	}
	return test
}

func formatValue(r *results.Result) string {
	s := ""
	switch r.Unit {
	case "ms":
		if r.Value >= 1000 {
			s = fmt.Sprintf("%.3f s", r.Value/1000)
		} else {
			s = fmt.Sprintf("%.3f ms", r.Value)
		}
	case "%":
		s = fmt.Sprintf("%.1f %%", r.Value)
	case "x":
		s = fmt.Sprintf("%.1f x", r.Value)
	default:
		s = fmt.Sprintf("%g %s", r.Value, r.Unit)
	}
	if r.Spread.N > 1 {
		s += fmt.Sprintf(" [%s–%s]", short(r.Spread.Min, r.Unit), short(r.Spread.Max, r.Unit))
	}
	return s
}

func short(v float64, unit string) string {
	if unit == "ms" && v >= 1000 {
		return fmt.Sprintf("%.2fs", v/1000)
	}
	return fmt.Sprintf("%.3g", v)
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
