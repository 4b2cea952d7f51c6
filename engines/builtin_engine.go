package engines

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/hlsbench/hlsbench/engines/builtin"
)

// Builtin is hlsbench's own cache as an engine like the others: the
// command `hlsbench serve-cache`, run as a local process (the binary is
// hlsbench itself), from hlsbench's image in a container, or in-process
// (Serve).
type Builtin struct{}

// Name is the engine's.
func (Builtin) Name() string { return "builtin" }

// Binary is hlsbench's: the caller passes its path (LocalSpec.Binary).
func (Builtin) Binary() string { return "hlsbench" }

// Render has nothing to write: the policy goes on the command line.
func (Builtin) Render(Config) (Files, error) { return Files{}, nil }

// Launch is `hlsbench serve-cache` on cfg.Listen under cfg's policy; it
// pins its own threads (--cpus).
func (Builtin) Launch(cfg Config, binary string) LaunchSpec {
	pol, _ := json.Marshal(cfg.Policy) // a Policy always marshals
	args := builtin.ChildArgs(cfg.Listen, "http://"+cfg.Origin, string(pol))
	switch cfg.Topology {
	case TopologyTLS:
		args = append(args, builtin.TLSArgs(cfg.TLSListen, cfg.Certs.Cert, cfg.Certs.Key)...)
	case TopologyProxyV2:
		args = append(args, builtin.ProxyArgs(cfg.ProxyListen)...)
	}
	return LaunchSpec{Binary: binary, Args: args, PinFlag: "--cpus", StopTimeout: 5 * time.Second}
}

// ProxySupport: the built-in cache reads PROXY v2 itself (builtin.ProxyListener).
func (Builtin) ProxySupport(context.Context, Exec, string) error { return nil }

// TLSSupport: the built-in cache serves TLS with crypto/tls.
func (Builtin) TLSSupport(context.Context, Exec, string) error { return nil }

// ReadCounters asks the cache for its own (builtin.StatsPath).
func (Builtin) ReadCounters(ctx context.Context, _ Exec, cfg Config, _ string) (map[string]float64, error) {
	return fetchCounters(ctx, "http://"+cfg.Listen+builtin.StatsPath)
}

// Serve is the cache inside hlsbench, for the in-process runtime: it
// listens on cfg.Listen and answers what `hlsbench serve-cache` would.
func (Builtin) Serve(cfg Config) func() (string, func(context.Context) error, error) {
	return func() (string, func(context.Context) error, error) {
		c, err := builtin.New(builtin.Config{Origin: "http://" + cfg.Origin, Policy: BuiltinPolicy(cfg.Policy)})
		if err != nil {
			return "", nil, err
		}
		o := builtin.ServeOptions{Listen: cfg.Listen}
		switch cfg.Topology {
		case TopologyTLS:
			o.TLSListen, o.CertFile, o.KeyFile = cfg.TLSListen, cfg.Certs.Cert, cfg.Certs.Key
		case TopologyProxyV2:
			o.ProxyListen = cfg.ProxyListen
		}
		srv, err := builtin.Serve(c, o)
		if err != nil {
			c.Close()
			return "", nil, err
		}
		stop := func(ctx context.Context) error {
			ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			defer cancel()
			return errors.Join(srv.Shutdown(ctx), c.Close())
		}
		return "http://" + srv.Addr(), stop, nil
	}
}

// UpstreamCounter is the cache's count of its origin requests.
func (Builtin) UpstreamCounter() string { return builtinUpstream }

// Differences are the built-in cache's.
func (Builtin) Differences() []string { return BuiltinDifferences() }

var (
	_ Engine          = Builtin{}
	_ CounterReader   = Builtin{}
	_ UpstreamCounter = Builtin{}
	_ Differ          = Builtin{}
	_ InprocServer    = Builtin{}
	_ TLSServer       = Builtin{}
	_ ProxyListener   = Builtin{}
)
