package origin

import (
	"fmt"
	"strings"
)

// ReadyPrefix starts the line `hlsbench origin` prints on stdout once both
// listeners are up: "origin: data http://A control http://B".
const ReadyPrefix = "origin: "

// ReadyLine is that line, for the command that serves the origin.
func ReadyLine(dataAddr, controlAddr string) string {
	return fmt.Sprintf("%sdata http://%s control http://%s", ReadyPrefix, dataAddr, controlAddr)
}

// ParseReady reads the rest of the ready line (after ReadyPrefix).
func ParseReady(rest string) (dataURL, controlURL string, err error) {
	f := strings.Fields(rest)
	if len(f) != 4 || f[0] != "data" || f[2] != "control" {
		return "", "", fmt.Errorf("origin: unexpected ready line %q", ReadyPrefix+rest)
	}
	return f[1], f[3], nil
}

// ChildArgs are the arguments of `hlsbench origin` serving cfg on listen,
// its control API on a loopback port of its own choosing.
func ChildArgs(cfg Config, listen string) []string {
	return []string{"origin", "--listen", listen, "--control", "127.0.0.1:0",
		"--cache-control-manifest", cfg.CacheControl.Manifest, "--cache-control-segment", cfg.CacheControl.Segment,
		"--seed", fmt.Sprint(cfg.Seed)}
}
