package freeport

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"sync"
)

var (
	portsMu     sync.Mutex
	portsHanded = map[int]bool{}
)

// Addr returns a loopback address (127.0.0.1:PORT) that nothing
// listens on now, for a listener that starts later: engines are given a
// real port because not all of them can report one they picked.
//
// The port is below the kernel's ephemeral range and never returned
// before in this process. A port from a listener on :0, closed and handed
// on, is an ephemeral one: until the engine binds it, any outgoing
// connection on the host may take it as its local port, and the engine
// fails with "address already in use" (a test's origin did, in CI).
// Below the range, only those who ask for a port by number get it.
func Addr() (string, error) {
	low := ephemeralLow()
	portsMu.Lock()
	defer portsMu.Unlock()
	var last error
	for range 200 {
		port := 10000 + rand.IntN(low-10000)
		if portsHanded[port] {
			continue
		}
		addr := fmt.Sprintf("127.0.0.1:%d", port)
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			last = err
			continue
		}
		ln.Close()
		portsHanded[port] = true
		return addr, nil
	}
	return "", fmt.Errorf("no free loopback port between 10000 and %d after 200 tries: %v", low, last)
}

// ephemeralLow is the first port of the kernel's ephemeral range, 32768
// (Linux's default) where it cannot be read or leaves no room below it.
func ephemeralLow() int {
	low, high := 32768, 0
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		fmt.Sscan(string(b), &low, &high)
	}
	if low < 11000 {
		return 32768
	}
	return low
}
