package cli

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hlsbench/hlsbench/engines/srcbuild"
)

// Input srcbuild refuses is a usage error that names the flag that gave
// it; a failed step points at --verbose unless it was given.
func TestBuildError(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		o    srcbuild.Options
		want string
	}{
		{srcbuild.Options{Engine: "varnish", Source: filepath.Join(dir, "nope.tar.gz")}, "--source " + filepath.Join(dir, "nope.tar.gz") + ": "},
		{srcbuild.Options{Engine: "varnish", Source: dir, VTest: "/etc/hostname"}, "--vtest /etc/hostname: "},
		{srcbuild.Options{Engine: "squid", Source: dir}, `engine "squid": `},
	} {
		tc.o.Dir = filepath.Join(dir, "cache")
		_, err := srcbuild.Make(context.Background(), tc.o)
		err = buildError(err, false)
		var ue usageError
		if !errors.As(err, &ue) || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%+v: %v; want a usage error starting %q", tc.o, err, tc.want)
		}
	}

	step := &srcbuild.StepError{Build: "varnish@9.0.2", Step: "configure", Err: errors.New("exit status 1")}
	const hint = "\n(the whole log: rerun with --verbose)"
	if err := buildError(step, false); err.Error() != "engines build: varnish@9.0.2: configure: exit status 1"+hint {
		t.Errorf("step: %v", err)
	}
	if err := buildError(step, true); strings.Contains(err.Error(), hint) {
		t.Errorf("with --verbose: %v; want no hint to rerun with it", err)
	}
}
