package engines

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/hlsbench/hlsbench/engines/builtin"
)

// Builtin is hlsbench's own cache as an engine like the others: the
// command `hlsbench serve-cache`, run as a local process (the binary is
// hlsbench itself) or from hlsbench's image in a container. In-process it
// is StartBuiltin's.
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

// Version is what the binary says: "hlsbench version dev" is "dev".
func (Builtin) Version(ctx context.Context, run Exec, binary string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	out, err := run(ctx, binary, "--version")
	if err != nil {
		return "", fmt.Errorf("%s --version: %w: %s", binary, err, out.Text())
	}
	v, ok := strings.CutPrefix(out.Text(), "hlsbench version ")
	if !ok || v == "" {
		return "", fmt.Errorf("%s --version: no version in %q", binary, out.Text())
	}
	return v, nil
}

// ReadCounters asks the cache for its own (builtin.StatsPath).
func (Builtin) ReadCounters(ctx context.Context, _ Exec, cfg Config, _ string) (map[string]float64, error) {
	return fetchCounters(ctx, "http://"+cfg.Listen+builtin.StatsPath)
}

// UpstreamCounter is the cache's count of its origin requests.
func (Builtin) UpstreamCounter() string { return builtinUpstream }

// Differences are the built-in cache's.
func (Builtin) Differences() []string { return BuiltinDifferences() }

var (
	_ Engine          = Builtin{}
	_ Versioner       = Builtin{}
	_ CounterReader   = Builtin{}
	_ UpstreamCounter = Builtin{}
	_ Differ          = Builtin{}
)
