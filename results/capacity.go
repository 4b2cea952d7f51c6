package results

// InstrumentEngine is the engine whose capacity is the instrument's own
// ceiling: a static server with no cache logic (--engine null).
const InstrumentEngine = "null"

// InstrumentMargin is how close to the instrument's ceiling an engine's
// capacity may come before the run cannot tell the two apart: within 10 %
// the figure may be the generator's and the host's, not the engine's.
const InstrumentMargin = 0.10

// AtInstrumentLimit is the LowerBound of a capacity at the instrument's
// limit.
const AtInstrumentLimit = "at the instrument's limit"

// MarkInstrumentLimit marks, among the results of one workload of one
// run, each capacity within InstrumentMargin of the null engine's in the
// same topology and test (or above it) as a lower bound at the
// instrument's limit, and null's own as the ceiling. It needs every cell
// of the workload finished, and it is idempotent. A value already a lower
// bound for another reason (the generator ran out) keeps that reason: it
// is no less a lower bound. Results of other workloads, and tests without
// a null figure beside them, are left alone.
func MarkInstrumentLimit(rs []*Result, workload string) {
	type key struct{ test, topology string }
	ceiling := map[key]*Result{}
	for _, r := range rs {
		if r.Workload == workload && r.Engine == InstrumentEngine && r.Value != nil {
			r.InstrumentCeiling = true
			ceiling[key{r.Test, r.Topology}] = r
		}
	}
	for _, r := range rs {
		if r.Workload != workload || r.Engine == InstrumentEngine || r.Value == nil {
			continue
		}
		c, ok := ceiling[key{r.Test, r.Topology}]
		if !ok {
			continue
		}
		if *r.Value >= (1-InstrumentMargin)*(*c.Value) && (r.LowerBound == "" || r.LowerBound == AtInstrumentLimit) {
			r.LowerBound = AtInstrumentLimit
		}
	}
}
