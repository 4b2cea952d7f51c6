package workloads

import (
	"context"
	"io"
	"strings"
	"testing"

	"github.com/hlsbench/hlsbench/engines"
	"github.com/hlsbench/hlsbench/engines/launch"
	"github.com/hlsbench/hlsbench/results"
)

// A placement that cannot start fails the run, and the file it saved at
// its start says so rather than "running".
func TestPlacedStartFailureIsInTheFile(t *testing.T) {
	spec := RunSpec{Engines: []string{"builtin"}, Workloads: mustSpecs(t, "hit-path"), Runtime: engines.RuntimeInproc, OutDir: t.TempDir(),
		Config: Quick(), Placed: &Placed{Placement: launch.Placement{
			Generators: []launch.Host{{Endpoint: "unix:///a.sock", Addr: "198.18.0.2"}},
			Engine:     launch.Host{Endpoint: "unix:///e.sock", Addr: "198.18.0.4"},
			Origin:     launch.Host{Endpoint: "unix:///o.sock", Addr: "198.18.0.5"}}}}
	run, rc, err := Execute(context.Background(), spec, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "not open") {
		t.Fatalf("err %v, want the placement's", err)
	}
	saved, lerr := results.Load(rc.Path())
	if lerr != nil {
		t.Fatal(lerr)
	}
	if run.Status != results.StatusFailed || saved.Status != results.StatusFailed || !strings.Contains(saved.Error, "not open") || len(saved.Placement) != 3 {
		t.Errorf("saved: status %q error %q placement %v", saved.Status, saved.Error, saved.Placement)
	}
}
