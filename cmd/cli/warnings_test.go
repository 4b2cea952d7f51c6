package cli

import (
	"bytes"
	"strings"
	"testing"

	"github.com/hlsbench/hlsbench/results"
)

// The run's warning of busy CPUs names what it can: the busiest processes
// this host lists, and, when most of the other share was in none of them
// (a neighbour in another PID namespace), says so instead of "no single
// process stands out".
func TestWriteWarningsUnseen(t *testing.T) {
	for _, tc := range []struct {
		in   results.Interference
		want string
	}{
		{results.Interference{CPUs: "1,0", Passes: 30, BusyPasses: 8, Threshold: 0.05, MaxOtherShare: 0.22, UnseenPasses: 8},
			"(in 8 of them most of it in no process this host lists: another PID namespace's, a container or sandbox beside this one)"},
		{results.Interference{CPUs: "1", Passes: 10, BusyPasses: 2, Threshold: 0.05, MaxOtherShare: 0.3, Busiest: []string{"cc1", "go"}},
			"(busiest: cc1, go)"},
		{results.Interference{CPUs: "1", Passes: 10, BusyPasses: 2, Threshold: 0.05, MaxOtherShare: 0.3}, "(no single process stands out)"},
	} {
		var b bytes.Buffer
		in := tc.in
		writeWarnings(&b, &results.Run{Interference: &in})
		if !strings.Contains(b.String(), tc.want) {
			t.Errorf("%q lacks %q", b.String(), tc.want)
		}
	}
}
