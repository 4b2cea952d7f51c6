package engines

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
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
	return LaunchSpec{Binary: binary, Args: builtin.ChildArgs(cfg.Listen, "http://"+cfg.Origin, string(pol)),
		PinFlag: "--cpus", StopTimeout: 5 * time.Second}
}

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
		ln, err := net.Listen("tcp", cfg.Listen)
		if err != nil {
			c.Close()
			return "", nil, fmt.Errorf("listen %s: %w", cfg.Listen, err)
		}
		srv := &http.Server{Handler: c, ReadHeaderTimeout: 60 * time.Second} // NGINX's client_header_timeout
		go srv.Serve(ln)
		stop := func(ctx context.Context) error {
			ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			defer cancel()
			if err := srv.Shutdown(ctx); err != nil {
				srv.Close()
			}
			return c.Close()
		}
		return "http://" + ln.Addr().String(), stop, nil
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
)
