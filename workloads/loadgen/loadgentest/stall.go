// Package loadgentest holds servers for the tests of the load generator
// and of what drives it.
package loadgentest

import (
	"net/http"
	"sync/atomic"
	"time"
)

// StallHandler answers "ok" at once, except that a request arriving in the
// window from after to after+stall, counted from the first request's
// arrival, is held until the window ends: a server that stops for stall
// once, the coordinated-omission test.
func StallHandler(after, stall time.Duration) http.Handler {
	var first atomic.Int64
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		now := time.Now().UnixNano()
		first.CompareAndSwap(0, now)
		from := first.Load() + int64(after)
		to := from + int64(stall)
		if now >= from && now < to {
			time.Sleep(time.Duration(to - now))
		}
		w.Write([]byte("ok"))
	})
}
