package freeport

import (
	"net"
	"strconv"
	"testing"
)

// Every address is free, below the ephemeral range and handed out once.
func TestAddrBelowEphemeralRangeAndUnique(t *testing.T) {
	low := ephemeralLow()
	seen := map[string]bool{}
	for range 50 {
		a, err := Addr()
		if err != nil {
			t.Fatal(err)
		}
		if seen[a] {
			t.Fatalf("%s handed out twice", a)
		}
		seen[a] = true
		_, p, err := net.SplitHostPort(a)
		if err != nil {
			t.Fatal(err)
		}
		if port, _ := strconv.Atoi(p); port < 10000 || port >= low {
			t.Fatalf("%s: want a port in [10000, %d)", a, low)
		}
		ln, err := net.Listen("tcp", a)
		if err != nil {
			t.Fatalf("%s is not free: %v", a, err)
		}
		ln.Close()
	}
}
