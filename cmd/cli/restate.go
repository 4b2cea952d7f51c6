package cli

import (
	"errors"
	"fmt"
	"strings"

	"github.com/hlsbench/hlsbench/engines"
	"github.com/hlsbench/hlsbench/engines/images"
	"github.com/hlsbench/hlsbench/report"
)

// restated is a library's error as the command line says it: the same
// chain, which errors.Is and errors.As still see whole, with the library's
// words for a thing replaced by the flag or command a user gives for it.
type restated struct {
	err error
	msg string
}

func (e restated) Error() string { return e.msg }
func (e restated) Unwrap() error { return e.err }

// restate replaces lib's text in err's with says, so that what callers
// wrapped around lib on its way up stays as they wrote it. An err whose
// text does not hold lib's (a caller that rewrote it) is left as it is.
func restate(err, lib error, says string) error {
	msg := err.Error()
	if !strings.Contains(msg, lib.Error()) {
		return err
	}
	return restated{err, strings.Replace(msg, lib.Error(), says, 1)}
}

// outDirError says report.WriteDir's refusal of its directory as the flag
// that named it, --out.
func outDirError(err error) error {
	var de *report.DirError
	if !errors.As(err, &de) {
		return err
	}
	return restate(err, de, fmt.Sprintf("--out %s: %v", de.Dir, de.Err))
}

// startError says why an engine could not start in the run's terms: the
// runtime is --runtime, and an image that is missing comes with the command
// that builds it.
func startError(err error) error {
	var re *engines.RuntimeError
	if errors.As(err, &re) {
		err = restate(err, re, fmt.Sprintf("%s cannot run with --runtime %s: want --runtime %s", re.Engine, re.Runtime, strings.Join(re.Want, " or ")))
	}
	var ne *engines.NoImageError
	if errors.As(err, &ne) {
		err = restate(err, ne, fmt.Sprintf("%v (%s)", ne, imageHint(ne.Engine)))
	}
	return err
}

// imageHint is the command that builds engine's image: hlsbench's own for
// the engines it serves itself, a packaged engine's, or a build from source.
func imageHint(engine string) string {
	switch _, packaged := images.LookupEngine(engine); {
	case engine == "builtin" || engine == engines.NullName:
		return "hlsbench images build --self"
	case packaged:
		return "hlsbench images build --engine " + engine
	}
	return "hlsbench engines build " + engine + " --source … --runtime docker"
}
