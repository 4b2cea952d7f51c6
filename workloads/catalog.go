package workloads

import (
	"slices"

	"github.com/hlsbench/hlsbench/results"
)

// Catalog is what the workloads declare of themselves for a results page
// (report.Catalog): the order of their sections, the lines of their own
// conditions, what their tests' units count and which tests are
// capacities. Every answer comes from the workload's own file.
func Catalog() catalog { return catalog{} }

type catalog struct{}

// pageFirst is a workload whose section opens the page.
type pageFirst interface{ pageFirst() }

// factsOf is a workload whose own conditions make lines on the page:
// load facts follow the rate, the others the object's size.
type factsOf interface {
	conditionFacts(c results.Conditions) (load, rest []results.Fact)
}

// ranked is a workload whose tests are capacities: rates ranked on a line
// of their own, their tables with the MiB/s and engine CPU carried at each,
// and the null engine's its instrument ceiling.
type ranked interface{ ranked() }

// Ranked says the workload's tests are capacities (ranked).
func (s Spec) Ranked() bool {
	_, ok := s.w.(ranked)
	return ok
}

// Rank is the page's order: a workload that opens the page first, then
// the run's order; a workload this hlsbench does not know, last.
func (catalog) Rank(name string) int {
	w, ok := lookup(name)
	if !ok {
		return len(all) + 1
	}
	if _, first := w.(pageFirst); first {
		return 0
	}
	return 1 + slices.Index(Names(), name)
}

func (catalog) ConditionFacts(name string, c results.Conditions) (load, rest []results.Fact) {
	if w, ok := lookup(name); ok {
		if f, ok := w.(factsOf); ok {
			return f.conditionFacts(c)
		}
	}
	return nil, nil
}

func (catalog) UnitName(name, test string) string {
	if _, ok := lookup(name); !ok {
		return ""
	}
	for _, d := range specOf(name).tests() {
		if d.id == test {
			return d.axis
		}
	}
	return ""
}

func (catalog) Ranked(name string) bool {
	w, ok := lookup(name)
	if ok {
		_, ok = w.(ranked)
	}
	return ok
}
