package loadgen

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// The generator notes when each request that waited for a connection was
// dispatched: a server slower than the rate on one connection makes
// requests wait all through the pass, each counted in one of its
// quarters, and the instants travel with the result to another host. The waits'
// effect on TTFB is what separates the figure from the dispatch from the
// figure from the write.
func TestWaitsByQuarter(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(30 * time.Millisecond)
		w.Write([]byte("ok"))
	}))
	defer srv.Close()
	g, err := New(context.Background(), Options{URL: srv.URL, Connections: 1, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	r, err := g.Run(context.Background(), Pass{Rate: 50, Duration: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	q := r.WaitsByQuarter()
	var sum int64
	for _, n := range q {
		sum += n
	}
	t.Logf("queued %d, by quarter %v", r.Queued, q)
	if len(q) != 4 || sum != r.Queued || r.Queued < 10 || q[3] == 0 {
		t.Fatalf("waits by quarter %v, %d queued: want every wait in a quarter, some in the last", q, r.Queued)
	}
	b, err := r.MarshalWire()
	if err != nil {
		t.Fatal(err)
	}
	w, err := UnmarshalWire(b)
	if err != nil {
		t.Fatal(err)
	}
	if got := w.WaitsByQuarter(); len(got) != 4 || got[0] != q[0] || got[3] != q[3] {
		t.Errorf("after the wire: %v, want %v", got, q)
	}
	var moved bool
	for _, e := range r.WaitEffects(50, 99) {
		moved = moved || (e.Figure == "ttfb" && e.Quantile == 99 && e.Exceeded())
	}
	if !moved {
		t.Errorf("the waits moved no TTFB p99: %+v", r.WaitEffects(50, 99))
	}
	if m := Merge([]*Result{r, r}); m.WaitsByQuarter() != nil {
		t.Errorf("passes merged one after another: waits by quarter %v, want unknown", m.WaitsByQuarter())
	}
}
