package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/spf13/cobra"

	"github.com/hlsbench/hlsbench/engines"
	"github.com/hlsbench/hlsbench/engines/builtin"
)

func newServeCacheCmd(stdout, stderr io.Writer) *cobra.Command {
	var listen, originURL, policy, cpus string
	c := &cobra.Command{
		Use:     "serve-cache",
		Short:   "Run the built-in caching proxy (hlsbench run starts it as a child process)",
		Args:    exactArgs(0, "no arguments"),
		Example: `  hlsbench serve-cache --listen 127.0.0.1:6081 --origin http://127.0.0.1:8081`,
		RunE: func(c *cobra.Command, args []string) error {
			if err := pinFlag(cpus); err != nil {
				return err
			}
			pol := engines.DefaultPolicy()
			if policy != "" {
				if err := json.Unmarshal([]byte(policy), &pol); err != nil {
					return usagef("--policy: not a policy JSON object: %v", err)
				}
			}
			if err := pol.Validate(); err != nil {
				return usagef("--policy: %v", err)
			}
			cache, err := builtin.New(builtin.Config{Origin: originURL, Policy: engines.BuiltinPolicy(pol)})
			if err != nil {
				return usagef("--origin: %v", err)
			}
			defer cache.Close()
			ln, err := net.Listen("tcp", listen)
			if err != nil {
				return usagef("--listen %s: %v", listen, err)
			}
			srv := &http.Server{Handler: cache, ReadHeaderTimeout: 60 * time.Second} // NGINX's client_header_timeout
			fmt.Fprintln(stdout, builtin.ReadyLine(ln.Addr().String()))
			errc := make(chan error, 1)
			go func() { errc <- srv.Serve(ln) }()
			select {
			case err := <-errc:
				return err
			case <-c.Context().Done():
			}
			sctx, cancel := contextWithTimeout(5 * time.Second)
			defer cancel()
			if err := srv.Shutdown(sctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
				srv.Close()
			}
			return nil
		},
	}
	f := c.Flags()
	f.StringVar(&listen, "listen", "127.0.0.1:6081", "address to listen on (loopback by default)")
	f.StringVar(&originURL, "origin", "http://127.0.0.1:8081", "the origin's URL")
	f.StringVar(&policy, "policy", "", "cache policy as JSON (hlsbench run passes each workload's)")
	f.StringVar(&cpus, "cpus", "", "pin every thread of this process to these CPUs, e.g. 0 or 0-2")
	return c
}

// pinFlag pins the whole process to the CPUs of a --cpus flag.
func pinFlag(list string) error {
	if list == "" {
		return nil
	}
	cpus, err := engines.ParseCPUList(list)
	if err != nil || len(cpus) == 0 {
		return usagef("--cpus %q: want a CPU list like 0 or 0-2", list)
	}
	if err := engines.PinProcess(cpus); err != nil {
		return fmt.Errorf("--cpus %s: %w", list, err)
	}
	return nil
}
