package engines

import (
	"context"
	"strconv"
	"time"

	"github.com/hlsbench/hlsbench/engines/builtin"
	"github.com/hlsbench/hlsbench/engines/null"
)

// Null is the instrument's own ceiling and floor as an engine: `hlsbench
// serve-null`, a static server that answers prebuilt copies of the origin's
// objects from memory with its own event loops (engines/null). It has no
// cache: it measures the generator and the host, not an engine. Its TLS
// listener (crypto/tls, the run's certificate) is the ceiling of topology
// tls, and topology proxyv2 puts the run's terminator in front of its
// PROXY v2 listener.
type Null struct{}

// NullName is the null engine's name in --engine and in results.
const NullName = "null"

// Name is the engine's.
func (Null) Name() string { return NullName }

// Binary is hlsbench's: the caller passes its path (LocalSpec.Binary).
func (Null) Binary() string { return "hlsbench" }

// Render has nothing to write.
func (Null) Render(Config) (Files, error) { return Files{}, nil }

// Launch is `hlsbench serve-null` on cfg.Listen, copying cfg.Origin's
// objects at start; it pins one event loop to each of its CPUs (--cpus).
func (Null) Launch(cfg Config, binary string) LaunchSpec {
	args := []string{"serve-null", "--listen", cfg.Listen, "--origin", "http://" + cfg.Origin,
		"--threads", strconv.Itoa(max(cfg.CPUs, 1))}
	switch cfg.Topology {
	case TopologyTLS:
		args = append(args, builtin.TLSArgs(cfg.TLSListen, cfg.Certs.Cert, cfg.Certs.Key)...)
	case TopologyProxyV2:
		args = append(args, "--proxy-listen", cfg.ProxyListen)
	}
	return LaunchSpec{Binary: binary, Args: args, PinFlag: "--cpus", StopTimeout: 5 * time.Second}
}

// TLSSupport: the null engine serves TLS with crypto/tls, as the built-in
// cache does: without it an engine's TLS capacity has no ceiling to be read
// against, and a TLS figure above the same engine's plaintext one would
// pass for the engine's.
func (Null) TLSSupport(context.Context, Exec, string) error { return nil }

// ProxySupport: the null engine reads PROXY v2 in its event loop.
func (Null) ProxySupport(context.Context, Exec, string) error { return nil }

// Serve is the null engine inside hlsbench, for the in-process runtime.
func (Null) Serve(cfg Config) func() (string, func(context.Context) error, error) {
	return func() (string, func(context.Context) error, error) {
		objs, err := null.Fetch(context.Background(), "http://"+cfg.Origin, null.Paths(null.DefaultSegments))
		if err != nil {
			return "", nil, err
		}
		o := null.Options{Listen: cfg.Listen, Threads: max(cfg.CPUs, 1), Objects: objs}
		switch cfg.Topology {
		case TopologyTLS:
			o.TLSListen, o.CertFile, o.KeyFile = cfg.TLSListen, cfg.Certs.Cert, cfg.Certs.Key
		case TopologyProxyV2:
			o.ProxyListen = cfg.ProxyListen
		}
		srv, err := null.Serve(o)
		if err != nil {
			return "", nil, err
		}
		return "http://" + srv.Addr(), func(context.Context) error { return srv.Close() }, nil
	}
}

// Differences are the null engine's.
func (Null) Differences() []string { return NullDifferences() }

// NullDifferences say what the null engine is.
func NullDifferences() []string {
	return []string{
		"null is not an engine: it is the instrument's own ceiling and floor. It has no cache: it answers prebuilt copies of the origin's objects (copied once at start: the playlists and segments 0-" + strconv.Itoa(null.DefaultSegments-1) + "), from memory, with its own event loops (one thread per CPU, epoll), and sends no request to the origin while measured.",
		"null parses requests minimally (request line, Host, Range, Connection): no conditional requests, no Date header, no HTTP/1.0 keep-alive.",
		"null's TLS listener is crypto/tls with a goroutine per connection (the built-in cache's TLS settings and the run's certificate), answering from the same table as its event loops: its TLS ceiling is the generator's and the host's TLS cost, not an engine's.",
	}
}

// NullNeedsCache is the reason the null engine has no cell in a workload
// that measures a cache.
const NullNeedsCache = "null has no cache: it answers prebuilt copies of the origin's objects; it measures the instrument, not an engine"

var (
	_ Engine        = Null{}
	_ Differ        = Null{}
	_ InprocServer  = Null{}
	_ TLSServer     = Null{}
	_ ProxyListener = Null{}
)
