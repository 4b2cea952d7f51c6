package builtin

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

// TLSArgs are the arguments that add a TLS listener on tlsListen with the
// certificate and key files.
func TLSArgs(tlsListen, certFile, keyFile string) []string {
	return []string{"--tls-listen", tlsListen, "--tls-cert", certFile, "--tls-key", keyFile}
}

// ProxyArgs are the arguments that add a PROXY v2 listener on addr.
func ProxyArgs(addr string) []string { return []string{"--proxy-listen", addr} }
