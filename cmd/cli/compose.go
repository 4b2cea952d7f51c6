package cli

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/hlsbench/hlsbench/engines/certs"
	"github.com/hlsbench/hlsbench/engines/compose"
	"github.com/hlsbench/hlsbench/workloads"
)

func newEnginesComposeCmd(stderr io.Writer) *cobra.Command {
	var out, workload string
	c := &cobra.Command{
		Use:   "compose --out DIR",
		Short: "Write the stack hlsbench runs as a docker-compose project: origin, engines, hitch, generator",
		Long: `Write DIR/docker-compose.yml and the files its services mount (DIR/compose/):
the synthetic origin, Varnish, NGINX, the built-in cache and Vinyl Cache, each with
the configuration hlsbench renders for --workload's cache policy and the command
line a run starts it with, hitch in front of Varnish (PROXY v2), a one-shot
service that makes the test certificates and a one-shot generator (hlsbench load).
Every service uses the host's network and listens on loopback. The repository's
own docker-compose.yml is this command's output (make compose).`,
		Example: `  hlsbench engines compose --out .
  docker-compose up -d origin varnish hitch
  hlsbench load http://127.0.0.1:6081/stream/index.m3u8 --rate 200 --duration 10s
  docker-compose down -v`,
		Args: exactArgs(0, "no arguments"),
		RunE: func(c *cobra.Command, args []string) error {
			if out == "" {
				return usagef("--out: give the directory to write docker-compose.yml and compose/ into")
			}
			files, err := compose.Generate(compose.Options{Workload: workload})
			if err != nil {
				return usagef("--workload: %v", err)
			}
			written, err := compose.Write(out, files)
			if err != nil {
				return fmt.Errorf("--out %s: %w", out, err)
			}
			fmt.Fprintf(stderr, "hlsbench: wrote %s\n", strings.Join(written, ", "))
			return nil
		},
	}
	c.Flags().StringVar(&out, "out", "", "directory to write docker-compose.yml and compose/ into")
	c.Flags().StringVar(&workload, "workload", workloads.Names()[0], "whose cache policy the engines get: "+strings.Join(workloads.Names(), ", ")+" (not those that purge)")
	return c
}

func newCertsCmd(stderr io.Writer) *cobra.Command {
	var out string
	var hosts []string
	var keep bool
	c := &cobra.Command{
		Use:   "certs --out DIR",
		Short: "Write a test authority and a server certificate, as a run makes its own",
		Long: `Write a new authority (ca.pem) and a server certificate it signed for --host
(cert.pem, key.pem, and combined.pem: certificate then key, as hitch and Varnish
read it), valid for a week, into DIR: for the compose stack's terminator, or for an
engine of your own. Clients trust ca.pem (hlsbench load --ca DIR/ca.pem). With
--keep, a set already in DIR that is valid for a day more is left as it is (the
compose stack's certs service runs again with every docker-compose run).`,
		Example: `  hlsbench certs --out /tmp/certs
  hlsbench load https://127.0.0.1:6443/stream/index.m3u8 --ca /tmp/certs/ca.pem`,
		Args: exactArgs(0, "no arguments"),
		RunE: func(c *cobra.Command, args []string) error {
			if out == "" {
				return usagef("--out: give the directory to write the certificates into")
			}
			if keep {
				if until, ok := certs.Valid(out); ok && time.Until(until) > 24*time.Hour {
					fmt.Fprintf(stderr, "hlsbench: kept the certificates in %s (valid until %s)\n", out, until.UTC().Format(time.RFC3339))
					return nil
				}
			}
			set, err := certs.New(hosts)
			if err != nil {
				return usagef("--host: %v", err)
			}
			f, err := set.Write(out)
			if err != nil {
				return fmt.Errorf("--out %s: %w", out, err)
			}
			fmt.Fprintf(stderr, "hlsbench: wrote %s, %s, %s, %s (for %s)\n", f.CA, f.Cert, f.Key, f.Combined, strings.Join(hosts, ", "))
			return nil
		},
	}
	c.Flags().StringVar(&out, "out", "", "directory to write the certificates into (it must exist)")
	c.Flags().BoolVar(&keep, "keep", false, "leave a set already in DIR that is valid for a day more")
	c.Flags().StringSliceVar(&hosts, "host", []string{"127.0.0.1", "::1", "localhost"}, "addresses and names the certificate is for")
	return c
}
