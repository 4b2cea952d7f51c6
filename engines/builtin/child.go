package builtin

import "strings"

// ReadyPrefix starts the line `hlsbench serve-cache` prints on stdout once
// it listens: "cache: http://127.0.0.1:PORT".
const ReadyPrefix = "cache: "

// ReadyLine is that line, for the command that serves the cache.
func ReadyLine(addr string) string { return ReadyPrefix + "http://" + addr }

// ChildArgs are the arguments of `hlsbench serve-cache` on listen, fetching
// from originURL, under policyJSON (an engines.Policy as JSON).
func ChildArgs(listen, originURL, policyJSON string) []string {
	return []string{"serve-cache", "--listen", listen, "--origin", originURL, "--policy", policyJSON}
}

// ParseReady reads the rest of the ready line: the cache's URL.
func ParseReady(rest string) string { return strings.TrimSpace(rest) }
