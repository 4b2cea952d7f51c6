package loadgen

import (
	"net/http"
	"net/http/httptest"
	rtmetrics "runtime/metrics"
	"sync"
	"testing"
	"time"
)

// gcSettings reads GOGC and the memory limit without changing them; GOGC
// off reads as -1.
func gcSettings() (percent int64, limit int64) {
	s := []rtmetrics.Sample{{Name: "/gc/gogc:percent"}, {Name: "/gc/gomemlimit:bytes"}}
	rtmetrics.Read(s)
	return int64(s[0].Value.Uint64()), int64(s[1].Value.Uint64())
}

// During a pass the collector is off, within a memory limit; after it, the
// settings are the process's own again. Two holds at once (two generators'
// passes) restore them only when both end.
func TestPassHoldsTheCollector(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok")) }))
	defer srv.Close()
	percent0, limit0 := gcSettings()
	var mu sync.Mutex
	var during [][2]int64
	g := newGen(t, Options{URL: srv.URL, Connections: 2, OnRecord: func(int, *Record, BodyCheck) {
		p, l := gcSettings()
		mu.Lock()
		during = append(during, [2]int64{p, l})
		mu.Unlock()
	}})
	run(t, g, Pass{Rate: 200, Duration: 200 * time.Millisecond})
	if len(during) == 0 {
		t.Fatal("no request answered")
	}
	for _, d := range during {
		if d[0] != -1 {
			t.Fatalf("GOGC %d during the pass, want off (-1)", d[0])
		}
		if d[1] >= unlimited || (limit0 < unlimited && d[1] != limit0) {
			t.Fatalf("memory limit %d during the pass (%d before it): want a limit, the process's own if it had one", d[1], limit0)
		}
	}
	if p, l := gcSettings(); p != percent0 || l != limit0 {
		t.Errorf("after the pass GOGC %d and limit %d, want %d and %d as before", p, l, percent0, limit0)
	}

	r1, r2 := holdGC(), holdGC()
	r1()
	r1() // a second call changes nothing
	if p, _ := gcSettings(); p != -1 {
		t.Errorf("GOGC %d with one hold left, want off", p)
	}
	r2()
	if p, l := gcSettings(); p != percent0 || l != limit0 {
		t.Errorf("after both holds GOGC %d and limit %d, want %d and %d", p, l, percent0, limit0)
	}
}
