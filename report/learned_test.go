package report

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/hlsbench/hlsbench/results"
)

// TestLearnedStatesTheLargest: the summary keeps the few largest
// significant differences, largest first, with their size in words; it
// never lists ties or untested leads as differences, and ranks capacity.
func TestLearnedStatesTheLargest(t *testing.T) {
	// passes are 8 values around v: enough for p < 0.05, tight enough to be
	// significant against another cell a few per cent away.
	passes := func(v float64) []float64 {
		return []float64{v * 0.99, v, v * 1.01, v * 0.995, v * 1.005, v, v * 0.998, v * 1.002}
	}
	var tests []Test
	for i, ratio := range []float64{1.2, 3, 1.1, 6, 2, 1.5, 4} {
		tc := handTest(handCell("a", passes(1)...), handCell("b", passes(ratio)...))
		tc.Title = fmt.Sprintf("test %d", i)
		tests = append(tests, tc)
	}
	tie := handTest(handCell("a", passes(1)...), handCell("b", passes(1)...))
	tie.Title = "tied"
	few := handTest(handCell("a", 1, 1), handCell("b", 9, 9))
	few.Title = "too few"
	hit := handTest(handCell("a", passes(90)...), handCell("b", passes(30)...))
	hit.Title, hit.Unit, hit.LowerIsBetter = "hit ratio", "%", false
	bound := handCell("builtin", 52000)
	bound.LowerBound = "the generator ran out at 54000 rps"
	ceiling := handCell("null", 60000)
	ceiling.InstrumentCeiling = true
	below := handCell("proxy", 35000)
	below.LowerBound = "the generator ran out at 36000 rps"
	cp := handTest(handCell("varnish", 33000), bound, handCell("nginx", 41000), below, ceiling, noValueCell("vinyl", "nothing passed"))
	cp.Workload, cp.Ranked, cp.Title, cp.Unit, cp.LowerIsBetter = "capacity", true, "Capacity, hit-path", "rps", false
	rep := &Report{Workloads: []Workload{
		{Name: "w", Title: "W", Tests: append(tests, tie, few, hit)},
		{Name: "capacity", Title: "Capacity", Tests: []Test{cp}},
	}}
	got := learned(rep, catalogOptions())
	text := strings.Join(got, "\n")
	for _, want := range []string{
		"Of 10 tests with a value, 8 separate the cells significantly",
		"1 is a tie; 1 has too few valid passes to test",
		"The five largest significant differences:",
		"W — test 3: a 1.00 ms against b 6.00 ms, 6.00× as long (p = 0.000155, 8 and 8 valid passes).",
		"W — hit ratio: a 90.0 % against b 30.0 %, 60.0 points lower",
		// A bound ranks above every exact figure below it (builtin carries
		// at least 52000, more than nginx's 41000); one below an exact
		// figure cannot be ordered against it, nor two bounds against each
		// other; the instrument's ceiling is never ranked.
		"Capacity, hit-path, most first: builtin ≥ 52000 rps (the generator ran out at 54000 rps), nginx 41000 rps, " +
			"proxy ≥ 35000 rps (the generator ran out at 36000 rps), not ordered against nginx, varnish 33000 rps; " +
			"the bounds cannot be ordered against each other; not ranked: null 60000 rps (the instrument's ceiling); no value: vinyl.",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("learned lacks %q:\n%s", want, text)
		}
	}
	// Largest first, five of them: 6×, 4×, 3× (test 1, then the hit
	// ratio's 3×: the first of equals stays first), 2×.
	order := []string{"test 3:", "test 6:", "test 1:", "hit ratio:", "test 4:"}
	last := -1
	for _, o := range order {
		i := strings.Index(text, o)
		if i < 0 || i < last {
			t.Errorf("%q missing or out of order:\n%s", o, text)
		}
		last = i
	}
	for _, not := range []string{"test 0:", "test 2:", "test 5:", "tied:", "too few:"} {
		if strings.Contains(text, not) {
			t.Errorf("learned states %q, not among the five largest differences:\n%s", not, text)
		}
	}
}

// The conditions name an engine's version once, however it was selected.
func TestEngineVersion(t *testing.T) {
	for _, tc := range []struct{ name, version, want string }{
		{"varnish@9.0.2", "9.0.2", "Varnish 9.0.2"},
		{"varnish", "7.1.1", "Varnish 7.1.1"},
		{"vinyl@trunk", "7.7.0-dev", "Vinyl Cache trunk (7.7.0-dev)"},
		{"nginx@1.27.0", "", "NGINX 1.27.0"},
	} {
		if got := engineVersion(tc.name, tc.version); got != tc.want {
			t.Errorf("engineVersion(%q, %q) = %q, want %q", tc.name, tc.version, got, tc.want)
		}
	}
}

// Cells are compared within a topology, never across: a fast plaintext
// cell does not make a TLS cell "behind", and capacity is ranked per
// topology.
func TestFindingsWithinTopology(t *testing.T) {
	passes := func(v float64) []float64 {
		return []float64{v * 0.99, v, v * 1.01, v * 0.995, v * 1.005, v, v * 0.998, v * 1.002}
	}
	in := func(c Cell, topology string) Cell {
		c.Topology = topology
		c.Label += " (" + topologyName(topology) + ")"
		return c
	}
	tc := handTest(in(handCell("a", passes(1)...), "plaintext"), in(handCell("b", passes(2)...), "plaintext"),
		in(handCell("a", passes(10)...), "tls"), in(handCell("b", passes(10)...), "tls"))
	tc.Title = "p50"
	f := finding(tc, catalogOptions())
	for _, want := range []string{"In plaintext: a (plaintext) is lowest at 1.00 ms.", "In TLS: A tie: a (TLS) and b (TLS) are each at"} {
		if !strings.Contains(f, want) {
			t.Errorf("finding %q lacks %q", f, want)
		}
	}
	if strings.Contains(f, "(TLS) is") && strings.Contains(f, "higher") {
		t.Errorf("finding compares across topologies: %q", f)
	}
	// Separated in both topologies: the summary lists the test once, by
	// its larger gap.
	both := handTest(in(handCell("a", passes(1)...), "plaintext"), in(handCell("b", passes(2)...), "plaintext"),
		in(handCell("a", passes(10)...), "tls"), in(handCell("b", passes(40)...), "tls"))
	both.Title = "p99"
	two := strings.Join(learned(&Report{Workloads: []Workload{{Name: "w", Title: "W", Tests: []Test{both}}}}, catalogOptions()), "\n")
	if strings.Count(two, "W — p99:") != 1 || !strings.Contains(two, "W — p99: a (TLS) 10.0 ms against b (TLS) 40.0 ms") {
		t.Errorf("a test separated in two topologies, want it once by its larger gap:\n%s", two)
	}
	cp := handTest(in(handCell("a", 100), "plaintext"), in(handCell("b", 50), "plaintext"), in(handCell("a", 10), "tls"))
	cp.Workload, cp.Ranked, cp.Title, cp.Unit, cp.LowerIsBetter = "capacity", true, "Capacity", "rps", false
	rep := &Report{Workloads: []Workload{{Name: "w", Title: "W", Tests: []Test{tc}}, {Name: "capacity", Title: "Capacity", Tests: []Test{cp}}}}
	text := strings.Join(learned(rep, catalogOptions()), "\n")
	for _, want := range []string{
		"Of 2 tests counted per topology (cells are compared within a topology, never across) with a value, 1 separates the cells significantly",
		"W — p50: a (plaintext) 1.00 ms against b (plaintext) 2.00 ms",
		"Capacity, plaintext, most first: a (plaintext) 100 rps, b (plaintext) 50.0 rps.",
		"Capacity, TLS, most first: a (TLS) 10.0 rps.",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("learned lacks %q:\n%s", want, text)
		}
	}
}

// An engine that ran a configuration of the user's own says so under
// "What this does not prove", once, with its digest and caveats.
func TestCaveatsOwnConfig(t *testing.T) {
	own := &results.ConfigFile{Path: "/etc/varnish/prod.vcl", SHA256: "0123456789abcdef0123", Caveats: []string{"its TTLs are its own"}}
	run := &results.Run{Engines: []results.Engine{{Name: "prod", Kind: "varnish", Config: own}, {Name: "varnish"}}}
	in := &Input{Sources: []Source{{Name: "a.json", Run: run}, {Name: "b.json", Run: run}}}
	text := strings.Join(caveats(in, &Report{Sources: in.Sources}), "\n")
	want := "prod ran a configuration of its own, /etc/varnish/prod.vcl (sha256 0123456789ab), as given: its TTLs are its own."
	if strings.Count(text, want) != 1 {
		t.Errorf("caveats, want %q once:\n%s", want, text)
	}
}

// TestPageArithmetic: the summary's counts add up to its total (a test with
// one ranked cell is counted as such, not left out), and one gap has one
// size on the page: the finding and "What did we learn?" both give the
// miss-storm gap from the values shown (52.4 and 510 ms: 9.73×), not one
// from the passes' medians and another from the values.
func TestPageArithmetic(t *testing.T) {
	spread := func(v float64) []float64 {
		return []float64{v * 0.99, v, v * 1.01, v * 0.995, v * 1.005, v, v * 0.998, v * 1.002}
	}
	lead, behind := handCell("a", spread(50)...), handCell("b", spread(500)...)
	lead.Value, behind.Value = f64(52.4), f64(510) // merged histograms' percentiles
	storm := handTest(lead, behind)
	storm.Title = "p50 TTFB"
	alone := handTest(handCell("a", spread(3)...), noValueCell("b", "nothing measured"))
	alone.Title = "alone"
	tie := handTest(handCell("a", spread(1)...), handCell("b", spread(1)...))
	tie.Title = "tied"
	o := catalogOptions()
	storm.Finding = finding(storm, o)
	rep := &Report{Workloads: []Workload{{Name: "w", Title: "Miss-storm coalescing", Tests: []Test{storm, alone, tie}}}}
	text := strings.Join(learned(rep, o), "\n")
	var total, sum int
	m := regexp.MustCompile(`Of (\d+) tests with a value, (\d+) separates?[^;]*; (\d+) (?:is|are) a tie; (\d+) (?:has|have) one ranked cell`).FindStringSubmatch(text)
	if m == nil {
		t.Fatalf("no counts in:\n%s", text)
	}
	total, _ = strconv.Atoi(m[1])
	for _, s := range m[2:] {
		n, _ := strconv.Atoi(s)
		sum += n
	}
	if total != 3 || sum != total {
		t.Errorf("counts %v add up to %d of %d:\n%s", m[1:], sum, total, text)
	}
	for what, s := range map[string]string{"finding": storm.Finding, "learned": text} {
		if !strings.Contains(s, "9.73× as long") || strings.Contains(s, "% higher") {
			t.Errorf("%s: want the gap as 9.73× as long, as the values shown give it:\n%s", what, s)
		}
	}
}
