package loadgen

import (
	"runtime"
	"runtime/debug"
	"sync"
)

// passHeapRoom is how far the heap may grow in a pass before the collector
// runs anyway: the soft memory limit a pass sets when the process has none.
const passHeapRoom = 1 << 30

// gcHold counts the passes under way in this process: the first collects
// the garbage and turns the collector off, the last restores it.
var gcHold struct {
	sync.Mutex
	n       int
	percent int
	limit   int64
}

// holdGC collects garbage now and holds the collector off until release,
// within a soft memory limit (the process's own GOMEMLIMIT, else the heap
// now plus passHeapRoom). A collection's mark phase runs a worker on the
// event loops' CPU for up to 20 ms and sends due then go late: with
// GODEBUG=gctrace=1 on `hlsbench run --engine builtin --workload
// purge-stampede,repeated-bans --quick` the collector ran 28 times in 41 s,
// 20 ms marks about every 2 s inside passes, and repeated-bans' drift was
// valid in 0 of 2 passes for the generator's lateness; with GOGC=off, 2 of
// 2. What a pass allocates is small (its records and samples); the limit
// only guards a long pass of a large audience.
func holdGC() (release func()) {
	gcHold.Lock()
	defer gcHold.Unlock()
	if gcHold.n == 0 {
		runtime.GC()
		gcHold.percent = debug.SetGCPercent(-1)
		gcHold.limit = debug.SetMemoryLimit(-1)
		if gcHold.limit == unlimited {
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			debug.SetMemoryLimit(int64(ms.Sys) + passHeapRoom)
		}
	}
	gcHold.n++
	var once sync.Once
	return func() {
		once.Do(func() {
			gcHold.Lock()
			defer gcHold.Unlock()
			gcHold.n--
			if gcHold.n == 0 {
				debug.SetGCPercent(gcHold.percent)
				debug.SetMemoryLimit(gcHold.limit)
			}
		})
	}
}

// unlimited is the memory limit of a process that set none (math.MaxInt64).
const unlimited = 1<<63 - 1
