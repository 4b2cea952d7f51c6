package workloads

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/hlsbench/hlsbench/results"
)

// The page's order, units and condition lines come from the workloads'
// files, and read the same from a results file as from this process.
func TestCatalog(t *testing.T) {
	cat := Catalog()
	names := Names()
	slices.SortStableFunc(names, func(a, b string) int { return cat.Rank(a) - cat.Rank(b) })
	if names[0] != Capacity || names[1] != HitPath || cat.Rank("no-such") <= cat.Rank(LiveAudience) {
		t.Errorf("page order %v", names)
	}
	if !cat.Ranked(Capacity) || cat.Ranked(HitPath) {
		t.Error("only capacity's tests are ranked rates")
	}
	if got := cat.UnitName(MissStorm, "coalescing"); got != "Clients per origin fetch (200 x is perfect coalescing)" {
		t.Errorf("coalescing's unit: %q", got)
	}
	if cat.UnitName(HitPath, "p99-ttfb") != "" || cat.UnitName("no-such", "x") != "" {
		t.Error("a test whose unit says it all has no unit name")
	}
	cfg := Quick()
	for _, tc := range []struct {
		name       string
		load, rest []string
	}{
		{MissStorm, []string{"Burst: 200 clients released at once"}, nil},
		{OriginFlap, nil, []string{"Origin failure: 3 cycles: 3s healthy, then 6s failing (5xx)"}},
		{PurgeStampede, nil, []string{"Objects: 502, Zipf popularity (exponent 1.00)",
			"Purge: the whole stream, 1s after the pass starts, then 3s of load: each engine's own way: a ban of the stream's prefix where it has one, else a request per object (per-object method PURGE)"}},
		{RepeatedBans, nil, []string{"Objects: 502, Zipf popularity (exponent 1.00)",
			"Bans: one object every 1s, the least popular first, from 1s after the pass starts for 5s: each engine's own way: a ban of the object's URL where it has one, else a request per object (per-object method PURGE)"}},
	} {
		s := specOf(tc.name)
		c := s.w.Conditions(s, cfg.withDefaults())
		b, err := json.MarshalIndent(c, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		var read results.Conditions
		if err := json.Unmarshal(b, &read); err != nil {
			t.Fatal(err)
		}
		if ok, diff := c.Comparable(read); !ok {
			t.Errorf("%s: conditions read back differ: %v", tc.name, diff)
		}
		for _, from := range []results.Conditions{c, read} {
			load, rest := cat.ConditionFacts(tc.name, from)
			if got := lines(load); !slices.Equal(got, tc.load) {
				t.Errorf("%s load facts %q, want %q", tc.name, got, tc.load)
			}
			if got := lines(rest); !slices.Equal(got, tc.rest) {
				t.Errorf("%s facts %q, want %q", tc.name, got, tc.rest)
			}
		}
	}
}

func lines(fs []results.Fact) []string {
	var out []string
	for _, f := range fs {
		out = append(out, f.Label+": "+f.Value)
	}
	return out
}
