package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/hlsbench/hlsbench/engines"
	"github.com/hlsbench/hlsbench/engines/builtin"
	"github.com/hlsbench/hlsbench/engines/null"
)

func newServeCacheCmd(stdout, stderr io.Writer) *cobra.Command {
	var listen, originURL, policy, cpus, tlsListen, tlsCert, tlsKey, proxyListen string
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
			o := builtin.ServeOptions{Listen: listen, TLSListen: tlsListen, CertFile: tlsCert, KeyFile: tlsKey, ProxyListen: proxyListen}
			if (tlsListen == "") != (tlsCert == "") || (tlsCert == "") != (tlsKey == "") {
				return usagef("--tls-listen, --tls-cert and --tls-key go together")
			}
			srv, err := builtin.Serve(cache, o)
			if err != nil {
				return usagef("--listen %s / --tls-listen %s: %v", listen, tlsListen, err)
			}
			fmt.Fprintln(stdout, builtin.ReadyLine(srv.Addr()))
			select {
			case err := <-srv.Err():
				return err
			case <-c.Context().Done():
			}
			sctx, cancel := contextWithTimeout(5 * time.Second)
			defer cancel()
			srv.Shutdown(sctx)
			return nil
		},
	}
	f := c.Flags()
	f.StringVar(&listen, "listen", "127.0.0.1:6081", "address to listen on (loopback by default)")
	f.StringVar(&originURL, "origin", "http://127.0.0.1:8081", "the origin's URL")
	f.StringVar(&policy, "policy", "", "cache policy as JSON (hlsbench run passes each workload's)")
	f.StringVar(&cpus, "cpus", "", "pin every thread of this process to these CPUs, e.g. 0 or 0-2")
	f.StringVar(&tlsListen, "tls-listen", "", "also serve TLS on this address (with --tls-cert and --tls-key)")
	f.StringVar(&tlsCert, "tls-cert", "", "the TLS listener's certificate (PEM)")
	f.StringVar(&tlsKey, "tls-key", "", "the TLS listener's private key (PEM)")
	f.StringVar(&proxyListen, "proxy-listen", "", "also listen here for connections from a TLS terminator that begin with a PROXY v2 header")
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

// nullReadyPrefix starts the line `hlsbench serve-null` prints once it
// listens.
const nullReadyPrefix = "null: "

func newServeNullCmd(stdout, stderr io.Writer) *cobra.Command {
	var listen, originURL, cpus, proxyListen, tlsListen, tlsCert, tlsKey string
	var threads, segments int
	c := &cobra.Command{
		Use:    "serve-null",
		Short:  "Run the null engine: prebuilt copies of the origin's objects, no cache (hlsbench run starts it as a child process)",
		Hidden: true,
		Args:   exactArgs(0, "no arguments"),
		RunE: func(c *cobra.Command, args []string) error {
			if err := pinFlag(cpus); err != nil {
				return err
			}
			var pinned []int
			if cpus != "" {
				pinned, _ = engines.ParseCPUList(cpus) // checked by pinFlag
			}
			if threads < 1 {
				return usagef("--threads %d: want 1 or more", threads)
			}
			if segments < 1 {
				return usagef("--segments %d: want 1 or more", segments)
			}
			objs, err := null.Fetch(c.Context(), originURL, null.Paths(segments))
			if err != nil {
				return fmt.Errorf("--origin %s: %w", originURL, err)
			}
			if tlsListen != "" && (tlsCert == "" || tlsKey == "") {
				return usagef("--tls-listen %s: want --tls-cert and --tls-key too", tlsListen)
			}
			srv, err := null.Serve(null.Options{Listen: listen, ProxyListen: proxyListen, TLSListen: tlsListen, CertFile: tlsCert, KeyFile: tlsKey,
				Threads: threads, CPUs: pinned, Objects: objs})
			if err != nil {
				return usagef("--listen %s / --proxy-listen %s / --tls-listen %s: %v", listen, proxyListen, tlsListen, err)
			}
			defer srv.Close()
			fmt.Fprintln(stdout, nullReadyPrefix+"http://"+srv.Addr())
			<-c.Context().Done()
			return nil
		},
	}
	f := c.Flags()
	f.StringVar(&listen, "listen", "127.0.0.1:6081", "address to listen on (loopback by default)")
	f.StringVar(&originURL, "origin", "http://127.0.0.1:8081", "the origin whose objects are copied once at start")
	f.StringVar(&cpus, "cpus", "", "pin every thread of this process to these CPUs, e.g. 0 or 0-2; event loop i runs on the i-th")
	f.IntVar(&threads, "threads", 1, "event loops, one OS thread each")
	f.IntVar(&segments, "segments", null.DefaultSegments, "segments copied, from 0")
	f.StringVar(&proxyListen, "proxy-listen", "", "also listen here for connections that begin with a PROXY v2 header")
	f.StringVar(&tlsListen, "tls-listen", "", "also listen here for TLS (crypto/tls, with --tls-cert and --tls-key)")
	f.StringVar(&tlsCert, "tls-cert", "", "the TLS listener's certificate (PEM)")
	f.StringVar(&tlsKey, "tls-key", "", "the TLS listener's key (PEM)")
	return c
}
