package engines

import (
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"strconv"

	"github.com/hlsbench/hlsbench/engines/runstate"
)

// PrivilegeDropper is an engine that, started as root on this host, runs
// some of its processes as another user, who must reach its work and cache
// directories: varnishd's jail (varnish, vcache), NGINX's workers (nobody).
// DropGroup is that user's group, "" when this binary, started by this
// process, keeps its user.
type PrivilegeDropper interface {
	DropGroup(binary string, own *UserConfig) string
}

var (
	_ PrivilegeDropper = Varnish{}
	_ PrivilegeDropper = Vinyl{}
	_ PrivilegeDropper = NGINX{}
)

// mountedDir is the name of the directory a container mounts inside a
// private scratch directory.
const mountedDir = "d"

// scratchDir makes one of an engine's scratch directories (its work or
// cache directory) through the run: private to hlsbench's user, yet
// reachable by the engine's own processes.
//   - In a container, the directory it mounts is 0755 inside a 0700 one:
//     the container sees it at the same path under parents of its own, so
//     the users an engine drops to there reach it, and on this host no one
//     else gets past the parent.
//   - On this host, started as root by an engine that drops privileges to
//     group, it is 0750 and that group's.
//   - Otherwise it is 0700.
//
// use is the directory the engine is given; remove, the one to remove.
func scratchDir(run *runstate.Run, parent, name string, inContainer bool, group string) (use, remove string, err error) {
	dir, err := run.MkdirTemp(parent, name)
	if err != nil {
		return "", "", err
	}
	defer func() {
		if err != nil {
			run.RemoveAll(dir)
		}
	}()
	switch {
	case inContainer:
		use = filepath.Join(dir, mountedDir)
		if err := os.Mkdir(use, 0o755); err != nil {
			return "", "", err
		}
		// Mkdir's mode is under the umask.
		if err := os.Chmod(use, 0o755); err != nil {
			return "", "", err
		}
		return use, dir, nil
	case group != "":
		if err := shareWith(dir, name, group); err != nil {
			return "", "", err
		}
	}
	return dir, dir, nil
}

// shareWith makes dir 0750 and group's: the users an engine named name
// drops privileges to reach it, no one else does.
func shareWith(dir, name, group string) error {
	g, err := user.LookupGroup(group)
	if err != nil {
		return fmt.Errorf("%s drops privileges to group %s: %w", name, group, err)
	}
	gid, err := strconv.Atoi(g.Gid)
	if err != nil {
		return fmt.Errorf("group %s: gid %q", group, g.Gid)
	}
	if err := os.Chown(dir, -1, gid); err != nil {
		return err
	}
	return os.Chmod(dir, 0o750)
}

// dropGroup is the group e's processes drop to, started from binary by
// this process on this host ("" for none).
func dropGroup(e Engine, binary string, own *UserConfig) string {
	if os.Geteuid() != 0 {
		return ""
	}
	if d, ok := e.(PrivilegeDropper); ok {
		return d.DropGroup(binary, own)
	}
	return ""
}

// primaryGroup is the name of a user's primary group ("" if the user or
// the group is unknown here).
func primaryGroup(name string) string {
	u, err := user.Lookup(name)
	if err != nil {
		return ""
	}
	g, err := user.LookupGroupId(u.Gid)
	if err != nil {
		return ""
	}
	return g.Name
}
