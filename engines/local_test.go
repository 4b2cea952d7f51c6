package engines

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hlsbench/hlsbench/engines/launch"
	"github.com/hlsbench/hlsbench/engines/runstate"
	"github.com/hlsbench/hlsbench/origin"
)

// StartLocal makes its directories through the run and records the engine;
// Stop removes both from the record.
func TestStartLocalRecordsInRun(t *testing.T) {
	needNGINX(t)
	r, err := runstate.Begin(runstate.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	o, err := origin.New(origin.Config{})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := origin.Start(o, "127.0.0.1:0", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	ctx, cancel := context.WithTimeout(runstate.With(context.Background(), r), 60*time.Second)
	defer cancel()
	inst, err := StartLocal(ctx, NGINX{}, LocalSpec{Policy: DefaultPolicy(), OriginURL: "http://" + srv.DataAddr()})
	if err != nil {
		t.Fatal(err)
	}
	st := r.State()
	if len(st.Procs) != 1 || st.Procs[0].Name != "nginx" || len(st.Dirs) != 2 {
		t.Fatalf("state %+v", st)
	}
	work, _ := ramDir(true)
	cache, _ := ramDir(false)
	for i, parent := range []string{work, cache} {
		d := st.Dirs[i]
		if filepath.Dir(d) != parent || !strings.HasPrefix(filepath.Base(d), runstate.DirPrefix(r.ID())+"nginx-") {
			t.Errorf("scratch directory %s, want %s/%snginx-…", d, parent, runstate.DirPrefix(r.ID()))
		}
		// Started by root, NGINX's workers (nobody) reach the directories
		// through their group; no other user does.
		wantMode, wantGroup := os.FileMode(0o700), ""
		if os.Geteuid() == 0 {
			wantMode, wantGroup = 0o750, NGINX{}.DropGroup("", nil)
		}
		checkScratchMode(t, d, wantMode, wantGroup)
	}
	if err := inst.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if st := r.State(); len(st.Procs) != 0 || len(st.Dirs) != 0 {
		t.Errorf("stopped, still recorded: %+v", st)
	}
	for _, d := range st.Dirs {
		if _, err := os.Stat(d); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s: %v", d, err)
		}
	}
}

// An engine StartLocal cannot run where it is asked says so in a typed
// error, naming the engine and what it takes, before anything starts.
func TestStartLocalRefusesBeforeStart(t *testing.T) {
	ctx := context.Background()
	_, err := StartLocal(ctx, Varnish{}, LocalSpec{Policy: DefaultPolicy(), OriginURL: "http://127.0.0.1:1", Launcher: launch.Inproc{}})
	var re *RuntimeError
	if !errors.As(err, &re) || re.Engine != "varnish" || re.Runtime != RuntimeInproc || strings.Join(re.Want, ",") != "process,docker" {
		t.Errorf("varnish in-process: %v (%+v); want a RuntimeError naming inproc and process or docker", err, re)
	}
	if err != nil && strings.Contains(err.Error(), "--") {
		t.Errorf("%q names a flag", err)
	}
	_, err = StartLocal(ctx, Varnish{}, LocalSpec{Policy: DefaultPolicy(), OriginURL: "http://127.0.0.1:1", Launcher: launch.Docker{}})
	var ne *NoImageError
	if !errors.As(err, &ne) || ne.Engine != "varnish" {
		t.Errorf("varnish in docker without an image: %v; want a NoImageError naming varnish", err)
	}
}
