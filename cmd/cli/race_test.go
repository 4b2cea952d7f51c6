//go:build race

package cli

// raceEnabled: the race detector slows the generator and an in-test proxy
// by stalls of tens of milliseconds at random; end-to-end tests whose
// verdict is a latency run once, without it.
const raceEnabled = true
