//go:build race

package workloads

// raceEnabled: the race detector slows the in-process proxy and the
// generator alike, by stalls of tens of milliseconds at random; tests whose
// verdict is a latency against a service level cannot hold under it.
const raceEnabled = true
