package engines

import (
	"os"
	"testing"

	"github.com/hlsbench/hlsbench/engines/srcbuild"
)

// A varnishBuild is a varnishd to test with: Debian's on PATH, or a build
// `hlsbench engines build` left in the cache.
type varnishBuild struct {
	name string // varnish, varnish@9.0.2, vinyl@trunk-27d2ce15b
	e    interface {
		Engine
		Checker
	}
	bin string
}

// varnishBuilds are the varnishd binaries on this machine: the one on
// PATH (under the Varnish adapter) and every cached build of Varnish or
// Vinyl Cache (under its own). Under CI=true, .ci/run builds Varnish 9.0.2
// and Vinyl Cache from ../shared/vendor, so both kinds of build must be
// there; elsewhere a missing one is skipped, saying so.
func varnishBuilds(t *testing.T) []varnishBuild {
	t.Helper()
	var out []varnishBuild
	if bin, err := FindBinary(Varnish{}, ""); err == nil {
		out = append(out, varnishBuild{"varnish", Varnish{}, bin})
	} else if os.Getenv("CI") == "true" {
		t.Fatalf("CI=true and %v", err)
	}
	builds, err := srcbuild.List("")
	if err != nil {
		t.Fatal(err)
	}
	have := map[string]bool{}
	for _, b := range builds {
		if have[b.Ref()] {
			continue // an older build of the same version
		}
		have[b.Ref()], have[b.Engine] = true, true
		switch b.Engine {
		case "varnish":
			out = append(out, varnishBuild{b.Ref(), Varnish{}, b.Daemon})
		case "vinyl":
			out = append(out, varnishBuild{b.Ref(), Vinyl{}, b.Daemon})
		}
	}
	for _, engine := range srcbuild.Engines {
		if have[engine] {
			continue
		}
		why := "no build of " + engine + " in " + srcbuild.Dir() + " (hlsbench engines build " + engine + " --source …)"
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true and %s", why)
		}
		t.Log(why + ": not tested")
	}
	if len(out) == 0 {
		t.Skip("no varnishd installed (apt-get install varnish) and no build (hlsbench engines build)")
	}
	return out
}
