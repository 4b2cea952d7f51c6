// Command hlsbench benchmarks HTTP caching proxies for HLS delivery.
package main

import (
	"os"

	"github.com/hlsbench/hlsbench/cmd/cli"
)

func main() {
	os.Exit(cli.Main(os.Args[1:], os.Stdout, os.Stderr))
}
