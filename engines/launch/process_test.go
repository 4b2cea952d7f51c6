package launch

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/hlsbench/hlsbench/engines/runstate"
)

// A process started with a run in ctx is in its state file from the start
// until it has stopped.
func TestStartProcessRecordsInRun(t *testing.T) {
	r, err := runstate.Begin(runstate.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	ctx := runstate.With(context.Background(), r)
	p, err := StartProcess(ctx, ProcessSpec{Name: "sleeper", Path: "sleep", Args: []string{"60"}, StopTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	st := r.State()
	if len(st.Procs) != 1 || st.Procs[0].PID != p.PID() || st.Procs[0].PGID != p.PGID() || p.PGID() != p.PID() || st.Procs[0].Name != "sleeper" ||
		st.Procs[0].Start == 0 || strings.Join(st.Procs[0].Command, " ") != "sleep 60" {
		t.Errorf("state %+v", st.Procs)
	}
	if err := p.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if st := r.State(); len(st.Procs) != 0 {
		t.Errorf("stopped, still recorded: %+v", st.Procs)
	}
	// Without a run nothing is recorded, and nothing fails.
	p, err = StartProcess(context.Background(), ProcessSpec{Name: "sleeper", Path: "sleep", Args: []string{"60"}})
	if err != nil {
		t.Fatal(err)
	}
	p.Stop(context.Background())
}
