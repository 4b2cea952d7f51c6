//go:build race

package loadgen

// raceEnabled relaxes timing margins: the race detector slows every
// goroutine, the in-test servers' as much as the generator's.
const raceEnabled = true
