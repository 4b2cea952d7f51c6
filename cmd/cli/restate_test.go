package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/hlsbench/hlsbench/engines"
	"github.com/hlsbench/hlsbench/engines/images"
	"github.com/hlsbench/hlsbench/report"
)

// The libraries' errors come out in the command line's terms, with what
// callers wrapped around them, and still unwrap to the library's.
func TestRestate(t *testing.T) {
	inproc := &engines.RuntimeError{Engine: "varnish", Runtime: engines.RuntimeInproc, Want: []string{engines.RuntimeProcess, engines.RuntimeDocker}}
	for _, tc := range []struct {
		err  error
		say  func(error) error
		want string
	}{
		{&report.DirError{Dir: "site", Err: report.ErrNotDir}, outDirError, "--out site: a file, not a directory: give a new directory"},
		{&report.DirError{Dir: "site", Err: os.ErrPermission}, outDirError, "--out site: permission denied"},
		{fmt.Errorf("start: %w", inproc), startError, "start: varnish cannot run with --runtime inproc: want --runtime process or docker"},
		{fmt.Errorf("hit-path: %w", &engines.NoImageError{Engine: "hitch", Runtime: "docker"}), startError, "hit-path: hitch in docker: no image (hlsbench images build --engine hitch)"},
		{&engines.NoImageError{Engine: "builtin", Runtime: "docker"}, startError, "builtin in docker: no image (hlsbench images build --self)"},
		{&engines.NoImageError{Engine: "vinyl", Runtime: "docker"}, startError, "vinyl in docker: no image (hlsbench engines build vinyl --source … --runtime docker)"},
		{fmt.Errorf("base: %w", &images.OptionError{Option: "Update", Do: "take the mirror's current versions", Err: errors.New("apt failed")}), optionError,
			"base: apt failed (take the mirror's current versions: give --update)"},
		{&images.OptionError{Option: "Mirror", Do: "the Debian mirror to build from", Err: errors.New("no deb source")}, optionError,
			"no deb source (the Debian mirror to build from: give --mirror URL)"},
		{errors.Join(errors.New("stop: gone"), inproc), startError, "stop: gone\nvarnish cannot run with --runtime inproc: want --runtime process or docker"},
	} {
		got := tc.say(tc.err)
		if got.Error() != tc.want {
			t.Errorf("%q said as %q, want %q", tc.err, got, tc.want)
		}
		if !errors.Is(got, tc.err) {
			t.Errorf("%q: the library's error is not in the chain", got)
		}
	}
	// Errors of no such kind, and nil, pass unchanged.
	other := errors.New("varnish rejected its configuration")
	if got := startError(other); got != other {
		t.Errorf("startError(%q) = %q", other, got)
	}
	if startError(nil) != nil || outDirError(nil) != nil {
		t.Error("nil restated as an error")
	}
}

// A process engine asked to run in-process fails as it starts, and says so
// in the run's flags.
func TestRunInprocProcessEngine(t *testing.T) {
	needEngine(t, "varnish")
	code, _, errs := runCLI(t, context.Background(), "run", "--runtime", "inproc", "--engine", "varnish", "--workload", "hit-path",
		"--passes", "1", "--warmups", "0", "--pass-duration", "300ms", "--quiet", "--lock", "none", "--out", t.TempDir())
	if want := "hlsbench: varnish cannot run with --runtime inproc: want --runtime process or docker"; code != ExitFailure || !strings.Contains(errs, want) {
		t.Errorf("exit %d, stderr %q; want exit %d and %q", code, errs, ExitFailure, want)
	}
}
