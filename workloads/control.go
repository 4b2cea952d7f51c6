package workloads

import (
	"context"
	"net/http"
	"sync/atomic"
)

// controlCost is what purge-stampede's and repeated-bans' conditions say
// of their control requests and the engine's cost.
const controlCost = "the engine's CPU per 1000 answers divides its CPU over the pass by the generator's answers (errors with a status included) plus hlsbench's own control requests the engine answered in the pass (purge-stampede's PURGE requests or ban call, repeated-bans' invalidations and the check GET after each): their CPU is in the engine's and cannot be taken out, so they are counted apart (evidence cost.control_requests) and added to the denominator"

// controlCount is how many control requests the engine answered in a pass.
type controlCount = atomic.Int64

// countAnswers is a transport that counts the requests the engine
// answered: hlsbench's own control requests (purge-stampede's and
// repeated-bans' purges and checks), whose CPU the cost meter charges to
// the engine with the generator's (see costOf).
type countAnswers struct {
	rt http.RoundTripper
	n  *controlCount
}

func (c countAnswers) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := c.rt.RoundTrip(req)
	if err == nil {
		c.n.Add(1)
	}
	return resp, err
}

// ban bans prefix on the engine; a ban that returned is a control request
// it answered.
func (ps *purgeSession) ban(ctx context.Context, prefix string) error {
	err := ps.tgt.Ban(ctx, prefix)
	if err == nil {
		ps.log.control.Add(1)
	}
	return err
}
