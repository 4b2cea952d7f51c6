package launch

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/client"
	"github.com/docker/docker/pkg/stdcopy"

	"github.com/hlsbench/hlsbench/engines/internal/procfs"
	"github.com/hlsbench/hlsbench/engines/internal/procgroup"
	"github.com/hlsbench/hlsbench/engines/runstate"
)

// Labels on every container hlsbench creates: LabelOwner marks it ours,
// LabelRun names the run that made it (so the next start can remove what a
// killed run left), LabelName says what it is.
const (
	LabelOwner = "org.hlsbench"
	LabelRun   = "org.hlsbench.run"
	LabelName  = "org.hlsbench.name"
	// The process that created the container (the run's hlsbench): its
	// pid, start time (clock ticks since boot) and the boot it ran in. A
	// container whose creator is gone is an orphan, whatever state files
	// say (they may have been removed, or a reboot cleared them).
	LabelPID   = "org.hlsbench.pid"
	LabelStart = "org.hlsbench.start"
	LabelBoot  = "org.hlsbench.boot"
)

// Docker runs instances as containers through the Engine API, with host
// networking (every listener stays on loopback: no bridge, no traffic off
// the machine), the spec's CPUs as the container's cpuset, and the spec's
// directory bind-mounted at the same path, so rendered configurations that
// name their own paths work unchanged.
type Docker struct {
	Client *client.Client
	// RunID is the run's id, written as LabelRun on every container.
	RunID string
	// Memory limits each container, in bytes (0: no limit); CPUs is each
	// one's CPU quota, as docker run --cpus (0: none), besides its cpuset.
	Memory int64
	CPUs   float64
	// Binds are extra host:container mounts for every container (a cache
	// directory outside Dir).
	Binds []string
	// Remote is set when the daemon runs on another host (launch.Host):
	// nothing of this host's is mounted — the directories a spec would
	// mount (Dir, with its Files written, and Binds) are copied into its
	// container at the same paths through the API, and what it writes
	// there stays in the container — and its processes are not this
	// host's to measure.
	Remote bool
}

// StartHint says how to start a daemon the way hlsbench wants it: no bridge
// network, no firewall rules (containers use the host's network).
const StartHint = "start dockerd: dockerd --bridge=none --iptables=false --ip6tables=false &, or set DOCKER_HOST"

// ErrNoDaemon is wrapped by Connect's error when no Docker daemon answers.
var ErrNoDaemon = errors.New("no Docker daemon")

// NoDaemonError is Connect's error when no daemon answers at Host.
type NoDaemonError struct {
	Host string // unix:///var/run/docker.sock, or DOCKER_HOST
	Err  error
}

func (e *NoDaemonError) Error() string {
	if e.Denied() {
		return fmt.Sprintf("the Docker daemon at %s refused this user: %v (run as root, or add the user to the docker group: usermod -aG docker USER, then log in again)", e.Host, e.Err)
	}
	return fmt.Sprintf("no Docker daemon at %s (%s): %v", e.Host, StartHint, e.Err)
}

// Denied says a daemon is there but its socket refused this user: no
// daemon to start, a permission to get.
func (e *NoDaemonError) Denied() bool {
	return errors.Is(e.Err, os.ErrPermission) || strings.Contains(strings.ToLower(fmt.Sprint(e.Err)), "permission denied")
}

func (e *NoDaemonError) Unwrap() []error { return []error{ErrNoDaemon, e.Err} }

// Connect returns a client of the daemon at DOCKER_HOST (by default the
// local socket), with the API version negotiated (bookworm's docker.io
// speaks 1.41; no version is pinned), once the daemon has answered a ping
// within limit. Close the client when done.
func Connect(ctx context.Context, limit time.Duration) (*client.Client, error) {
	cli, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		return nil, fmt.Errorf("docker client (check DOCKER_HOST, DOCKER_API_VERSION, DOCKER_CERT_PATH): %w", err)
	}
	return pinged(ctx, cli, cli.DaemonHost(), limit)
}

// pinged is cli once its daemon (at host, for the error) answered a ping
// within limit; else cli is closed and the error says no daemon answered.
func pinged(ctx context.Context, cli *client.Client, host string, limit time.Duration) (*client.Client, error) {
	pctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	if _, err := cli.Ping(pctx); err != nil {
		cli.Close()
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, &NoDaemonError{Host: host, Err: err}
	}
	// Ping negotiated the version; a daemon too old for the client's
	// minimum says so here rather than on the first real call.
	cli.NegotiateAPIVersion(pctx)
	return cli, nil
}

// DockerRuntime runs instances as containers through the Docker Engine
// API (DOCKER_HOST, else the local socket).
var DockerRuntime = Runtime{
	Name:      "docker",
	Help:      "docker (a container each, host networking)",
	Binaries:  InImage,
	Pins:      true,
	Limits:    true,
	Freezes:   true,
	Isolation: "other cells paused (docker pause of their origin's, engine's and terminator's containers) during each cell's passes",
	Open:      openDocker,
	Leftovers: func(ctx context.Context, limit time.Duration) (Sweeper, error) {
		cli, err := Connect(ctx, limit)
		if err != nil {
			return nil, err
		}
		return dockerSweeper{cli}, nil
	},
}

// openDocker connects to the daemon for a run (Close ends the connection).
func openDocker(ctx context.Context, s Session) (Launcher, error) {
	limit := s.Limit
	if limit == 0 {
		limit = 2 * time.Second
	}
	cli, err := Connect(ctx, limit)
	if err != nil {
		return nil, err
	}
	return Docker{Client: cli, RunID: s.RunID, Memory: s.Memory, CPUs: s.CPUs}, nil
}

// Name is the runtime's name.
func (Docker) Name() string { return DockerRuntime.Name }

// Close closes the connection to the daemon.
func (d Docker) Close() error { return d.Client.Close() }

// MemoryLimit is each container's memory limit in bytes (0: none).
func (d Docker) MemoryLimit() int64 { return d.Memory }

// Images lists the daemon's images that carry label.
func (d Docker) Images(ctx context.Context, label string) ([]ImageSummary, error) {
	sums, err := d.Client.ImageList(ctx, image.ListOptions{Filters: filters.NewArgs(filters.Arg("label", label))})
	if err != nil {
		return nil, fmt.Errorf("list images: %w", err)
	}
	out := make([]ImageSummary, 0, len(sums))
	for _, s := range sums {
		tags := slices.DeleteFunc(slices.Clone(s.RepoTags), func(t string) bool { return t == "<none>:<none>" })
		out = append(out, ImageSummary{ID: s.ID, Tags: tags, Size: s.Size, Created: time.Unix(s.Created, 0).UTC(), Labels: s.Labels})
	}
	return out, nil
}

func (d Docker) create(ctx context.Context, s Spec) (string, error) {
	if d.Client == nil {
		return "", errors.New("docker: no client")
	}
	if s.Image == "" {
		return "", fmt.Errorf("start %s in docker: no image", s.Name)
	}
	if len(s.Command) == 0 {
		return "", fmt.Errorf("start %s in docker: no command", s.Name)
	}
	if err := WriteFiles(s.Dir, s.Files); err != nil {
		return "", fmt.Errorf("start %s: %w", s.Name, err)
	}
	args := s.Command[1:]
	if len(s.CPUs) > 0 && s.PinFlag != "" {
		args = append(append([]string{}, args...), s.PinFlag, CPUList(s.CPUs))
	}
	cfg := &container.Config{
		Image:      s.Image,
		Entrypoint: []string{s.Command[0]},
		Cmd:        args,
		Env:        s.Env,
		WorkingDir: s.Dir,
		Labels:     map[string]string{LabelOwner: "1", LabelRun: d.RunID, LabelName: s.Name},
	}
	for k, v := range creatorLabels() {
		cfg.Labels[k] = v
	}
	for k, v := range s.Labels {
		cfg.Labels[k] = v
	}
	host := &container.HostConfig{NetworkMode: "host"}
	if !d.Remote {
		host.Binds = append(host.Binds, d.Binds...)
		for _, dir := range mounted(s) {
			host.Binds = append(host.Binds, dir+":"+dir)
		}
	}
	host.Resources.CpusetCpus = CPUList(s.CPUs)
	host.Resources.Memory = d.Memory
	host.Resources.NanoCPUs = int64(d.CPUs * 1e9)
	var b [4]byte
	_, _ = rand.Read(b[:])
	name := "hlsbench-" + safeName(d.RunID) + "-" + safeName(s.Name) + "-" + hex.EncodeToString(b[:])
	resp, err := d.Client.ContainerCreate(ctx, cfg, host, nil, nil, name)
	if err != nil {
		return "", fmt.Errorf("start %s in docker (image %s): %w", s.Name, s.Image, err)
	}
	if d.Remote {
		var dirs []string
		for _, b := range append(mounted(s), d.Binds...) {
			dirs = append(dirs, strings.SplitN(b, ":", 2)[0])
		}
		if err := copyDirs(ctx, d.Client, resp.ID, dirs); err != nil {
			d.Client.ContainerRemove(context.WithoutCancel(ctx), resp.ID, container.RemoveOptions{Force: true})
			return "", fmt.Errorf("start %s in docker: %w", s.Name, err)
		}
	}
	return resp.ID, nil
}

// copyDirs copies this host's directories, whole, into a created
// container at the same paths.
func copyDirs(ctx context.Context, cli *client.Client, id string, dirs []string) error {
	if len(dirs) == 0 {
		return nil
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	made := map[string]bool{}
	var parents func(d string) error
	parents = func(d string) error {
		if d == "/" || d == "." || made[d] {
			return nil
		}
		if err := parents(filepath.Dir(d)); err != nil {
			return err
		}
		made[d] = true
		return tw.WriteHeader(&tar.Header{Name: strings.TrimPrefix(d, "/") + "/", Mode: 0o755, Typeflag: tar.TypeDir})
	}
	for _, dir := range dirs {
		if !filepath.IsAbs(dir) {
			return fmt.Errorf("copy %s into the container: not an absolute path", dir)
		}
		if err := parents(filepath.Dir(dir)); err != nil {
			return err
		}
		err := filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			info, err := e.Info()
			if err != nil {
				return err
			}
			if !e.IsDir() && !info.Mode().IsRegular() {
				return nil // sockets, fifos: nothing to carry
			}
			h, err := tar.FileInfoHeader(info, "")
			if err != nil {
				return err
			}
			h.Name = strings.TrimPrefix(p, "/")
			if e.IsDir() {
				made[p] = true
				h.Name += "/"
			}
			if err := tw.WriteHeader(h); err != nil {
				return err
			}
			if e.IsDir() {
				return nil
			}
			f, err := os.Open(p)
			if err != nil {
				return err
			}
			defer f.Close()
			_, err = io.Copy(tw, f)
			return err
		})
		if err != nil {
			return fmt.Errorf("copy %s into the container: %w", dir, err)
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	if err := cli.CopyToContainer(ctx, id, "/", &buf, container.CopyToContainerOptions{}); err != nil {
		return fmt.Errorf("copy %s into the container: %w", strings.Join(dirs, ", "), err)
	}
	return nil
}

// Start creates and starts a container for s and waits until it is ready;
// a container that fails to start is removed, its log in the error.
func (d Docker) Start(ctx context.Context, s Spec) (_ Instance, err error) {
	id, err := d.create(ctx, s)
	if err != nil {
		return nil, err
	}
	c := &containerInstance{d: d, id: id, name: s.Name, image: s.Image, dirs: mounted(s), tail: procgroup.NewTail(16 << 10),
		done: make(chan struct{}), stopTimeout: s.StopTimeout}
	c.out = newLineLog(c.tail)
	defer func() {
		if err != nil {
			err = fmt.Errorf("%w%s", err, c.logNote())
			c.Stop(context.WithoutCancel(ctx))
		}
	}()
	if err := d.Client.ContainerStart(ctx, id, container.StartOptions{}); err != nil {
		return nil, fmt.Errorf("start %s in docker: %w", s.Name, err)
	}
	if err := c.follow(ctx); err != nil {
		return nil, err
	}
	// The container's first process leads a session and a process group
	// of its own on the host: its processes are measured as a local
	// engine's are (engines/cost, engines/cpuload).
	if in, err := d.Client.ContainerInspect(ctx, id); !d.Remote && err == nil && in.State != nil && in.State.Pid > 0 {
		c.pgid, c.pid = in.State.Pid, in.State.Pid
		if st, err := procfs.ReadStat(in.State.Pid); err == nil && st.PGID > 0 {
			c.pgid = st.PGID
		}
		c.unobserve = runstate.From(ctx).Observe(c.pgid)
	}
	c.watch(ctx)
	limit := s.ReadyTimeout
	if limit == 0 {
		limit = 30 * time.Second
	}
	rctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	switch {
	case s.ReadyLine != "":
		if c.ready, err = c.waitLine(rctx, s.ReadyLine); err != nil {
			return nil, fmt.Errorf("start %s in docker: %w", s.Name, err)
		}
	case s.ReadyURL != "":
		if err := c.waitHTTP(rctx, s.ReadyURL, s.ReadyTLS); err != nil {
			return nil, fmt.Errorf("start %s in docker: %w", s.Name, err)
		}
	}
	return c, nil
}

// Run runs s's command in a throwaway container of s's image to its end.
// What it wrote in its directories is given back to hlsbench's user.
func (d Docker) Run(ctx context.Context, s Spec) (Output, error) {
	o, err := d.run(ctx, s)
	if d.Remote {
		return o, err // nothing of this host's was mounted
	}
	if gerr := d.giveBack(context.WithoutCancel(ctx), s.Image, mounted(s)); gerr != nil {
		err = errors.Join(err, gerr)
	}
	return o, err
}

// mounted is the host directories a container of s mounts.
func mounted(s Spec) []string {
	var dirs []string
	for _, d := range append([]string{s.Dir}, s.Binds...) {
		if d != "" {
			dirs = append(dirs, d)
		}
	}
	return dirs
}

// giveBack hands what a container wrote in the host directories it
// mounted back to hlsbench's user when hlsbench is not root: the engines
// run as root in their containers, and the files they make there would
// outlive the run, removable by root alone. A throwaway container of the
// same image, as root, runs chown -R; nothing runs when every file is
// already the user's.
func (d Docker) giveBack(ctx context.Context, image string, dirs []string) error {
	if os.Geteuid() == 0 {
		return nil
	}
	return d.giveTo(ctx, image, dirs, os.Geteuid(), os.Getegid())
}

// giveTo is giveBack to uid and gid.
func (d Docker) giveTo(ctx context.Context, image string, dirs []string, uid, gid int) error {
	if image == "" {
		return nil
	}
	var theirs []string
	for _, dir := range dirs {
		if foreignFiles(dir, uid) {
			theirs = append(theirs, dir)
		}
	}
	if len(theirs) == 0 {
		return nil
	}
	argv := append([]string{"chown", "-R", strconv.Itoa(uid) + ":" + strconv.Itoa(gid)}, theirs...)
	if _, err := d.run(ctx, Spec{Name: "chown", Image: image, Command: argv, Binds: theirs}); err != nil {
		return fmt.Errorf("give %s back to uid %d: %w", strings.Join(theirs, ", "), uid, err)
	}
	return nil
}

// foreignFiles says whether anything under dir is not uid's (or cannot be
// read to tell).
func foreignFiles(dir string, uid int) bool {
	found := false
	filepath.WalkDir(dir, func(_ string, e fs.DirEntry, err error) error {
		if err != nil {
			found = !errors.Is(err, fs.ErrNotExist)
			return fs.SkipAll
		}
		info, err := e.Info()
		if err != nil {
			return nil // gone since
		}
		if st, ok := info.Sys().(*syscall.Stat_t); ok && int(st.Uid) != uid {
			found = true
			return fs.SkipAll
		}
		return nil
	})
	return found
}

// run is Run without the giving back.
func (d Docker) run(ctx context.Context, s Spec) (Output, error) {
	id, err := d.create(ctx, s)
	if err != nil {
		return Output{}, err
	}
	defer d.Client.ContainerRemove(context.WithoutCancel(ctx), id, container.RemoveOptions{Force: true})
	waitc, errc := d.Client.ContainerWait(ctx, id, container.WaitConditionNextExit)
	if err := d.Client.ContainerStart(ctx, id, container.StartOptions{}); err != nil {
		return Output{}, fmt.Errorf("run %s in docker: %w", s.Name, err)
	}
	var code int64
	select {
	case w := <-waitc:
		code = w.StatusCode
	case err := <-errc:
		return Output{}, fmt.Errorf("run %s in docker: %w", s.Name, err)
	}
	rc, err := d.Client.ContainerLogs(ctx, id, container.LogsOptions{ShowStdout: true, ShowStderr: true})
	if err != nil {
		return Output{}, fmt.Errorf("run %s in docker: logs: %w", s.Name, err)
	}
	defer rc.Close()
	var out, errb bytes.Buffer
	if _, err := stdcopy.StdCopy(&out, &errb, rc); err != nil {
		return Output{}, fmt.Errorf("run %s in docker: logs: %w", s.Name, err)
	}
	o := Output{Stdout: out.Bytes(), Stderr: errb.Bytes(), ExitCode: int(code)}
	if code != 0 {
		return o, fmt.Errorf("exit status %d", code)
	}
	return o, nil
}

// ImageID is the id of the image ref names.
func (d Docker) ImageID(ctx context.Context, ref string) (string, error) {
	in, err := d.Client.ImageInspect(ctx, ref)
	if err != nil {
		return "", err
	}
	return in.ID, nil
}

// Remove removes every container of run (every run's when run is ""),
// running or not, and says which it removed. A daemon that is gone, or a
// container already removed, is not an error.
func Remove(ctx context.Context, cli *client.Client, run string) ([]string, error) {
	f := filters.NewArgs(filters.Arg("label", LabelOwner))
	if run != "" {
		f.Add("label", LabelRun+"="+run)
	}
	list, err := cli.ContainerList(ctx, container.ListOptions{All: true, Filters: f})
	if err != nil {
		return nil, fmt.Errorf("docker: list containers: %w", err)
	}
	var removed []string
	var errs []error
	for _, c := range list {
		if c.State == container.StatePaused {
			// Left paused by a run that was killed mid-suite: unpaused
			// before it is removed, as Stop does.
			if err := cli.ContainerUnpause(ctx, c.ID); err != nil && !client.IsErrNotFound(err) {
				errs = append(errs, fmt.Errorf("docker: unpause %s: %w", c.ID[:12], err))
			}
		}
		err := cli.ContainerRemove(ctx, c.ID, container.RemoveOptions{Force: true})
		if err != nil && !client.IsErrNotFound(err) {
			errs = append(errs, err)
			continue
		}
		name := c.ID[:12]
		if len(c.Names) > 0 {
			name = strings.TrimPrefix(c.Names[0], "/")
		}
		removed = append(removed, name)
	}
	return removed, errors.Join(errs...)
}

// creatorLabels name this process as the container's creator.
func creatorLabels() map[string]string {
	st, err := procfs.ReadStat(os.Getpid())
	if err != nil {
		return nil
	}
	return map[string]string{LabelPID: strconv.Itoa(os.Getpid()), LabelStart: strconv.FormatUint(st.Start, 10), LabelBoot: procfs.BootID()}
}

// Orphan is an instance (a container) whose run's hlsbench is gone.
type Orphan struct {
	ID, Name, Run string
	Image         string
	Dirs          []string // the host directories it mounts
}

// Orphans lists the containers of runs whose hlsbench is gone: each
// container names its creator (LabelPID, LabelStart, LabelBoot), and one
// whose creator is not alive in this boot is an orphan, whatever any state
// file says. A container without those labels (made by an older hlsbench)
// is an orphan when dead says its run is.
func Orphans(ctx context.Context, cli *client.Client, dead func(run string) bool) ([]Orphan, error) {
	list, err := cli.ContainerList(ctx, container.ListOptions{All: true, Filters: filters.NewArgs(filters.Arg("label", LabelOwner))})
	if err != nil {
		return nil, fmt.Errorf("docker: list containers: %w", err)
	}
	var out []Orphan
	for _, c := range list {
		run := c.Labels[LabelRun]
		gone := dead(run)
		if pid, err := strconv.Atoi(c.Labels[LabelPID]); err == nil {
			start, _ := strconv.ParseUint(c.Labels[LabelStart], 10, 64)
			gone = !runstate.Alive(pid, start, c.Labels[LabelBoot])
		}
		if !gone {
			continue
		}
		name := c.ID[:12]
		if len(c.Names) > 0 {
			name = strings.TrimPrefix(c.Names[0], "/")
		}
		o := Orphan{ID: c.ID, Name: name, Run: run, Image: c.Image}
		for _, m := range c.Mounts {
			if m.Type == "bind" && m.Source != "" {
				o.Dirs = append(o.Dirs, m.Source)
			}
		}
		out = append(out, o)
	}
	return out, nil
}

// ScratchDirs are the scratch directories of o's run that o mounts (those
// named runstate.DirPrefix(run)…, which hold what it mounts): a run that is
// gone made them, and they are removed with its containers even when its
// state file, which lists them, is gone too.
func (o Orphan) ScratchDirs() []string {
	if o.Run == "" {
		return nil
	}
	var out []string
	for _, d := range o.Dirs {
		for p := filepath.Clean(d); p != "/" && p != "."; p = filepath.Dir(p) {
			if strings.HasPrefix(filepath.Base(p), runstate.DirPrefix(o.Run)) {
				if !slices.Contains(out, p) {
					out = append(out, p)
				}
				break
			}
		}
	}
	return out
}

// RemoveOrphans removes the containers Orphans listed, unpausing a paused
// one first; one already gone is no error. What they wrote in the host
// directories they mount is given back to hlsbench's user (who removes
// them with the run's state). It says which it removed.
func RemoveOrphans(ctx context.Context, cli *client.Client, orphans []Orphan) ([]string, error) {
	var removed []string
	var errs []error
	for _, o := range orphans {
		if err := cli.ContainerUnpause(ctx, o.ID); err != nil && !client.IsErrNotFound(err) && !strings.Contains(err.Error(), "is not paused") {
			errs = append(errs, fmt.Errorf("docker: unpause %s: %w", o.Name, err))
		}
		if err := cli.ContainerRemove(ctx, o.ID, container.RemoveOptions{Force: true}); err != nil && !client.IsErrNotFound(err) {
			errs = append(errs, err)
			continue
		}
		removed = append(removed, o.Name)
		if err := (Docker{Client: cli, RunID: o.Run}).giveBack(ctx, o.Image, o.Dirs); err != nil {
			errs = append(errs, err)
		}
	}
	return removed, errors.Join(errs...)
}

// Runs lists the run ids that have containers.
func Runs(ctx context.Context, cli *client.Client) (map[string][]string, error) {
	list, err := cli.ContainerList(ctx, container.ListOptions{All: true, Filters: filters.NewArgs(filters.Arg("label", LabelOwner))})
	if err != nil {
		return nil, fmt.Errorf("docker: list containers: %w", err)
	}
	runs := map[string][]string{}
	for _, c := range list {
		runs[c.Labels[LabelRun]] = append(runs[c.Labels[LabelRun]], c.ID)
	}
	return runs, nil
}

// dockerSweeper finds and removes the containers of runs that are gone.
type dockerSweeper struct{ cli *client.Client }

func (w dockerSweeper) Kind() string { return "containers" }
func (w dockerSweeper) Close() error { return w.cli.Close() }
func (w dockerSweeper) Orphans(ctx context.Context, dead func(run string) bool) ([]Orphan, error) {
	return Orphans(ctx, w.cli, dead)
}
func (w dockerSweeper) RemoveOrphans(ctx context.Context, orphans []Orphan) ([]string, error) {
	return RemoveOrphans(ctx, w.cli, orphans)
}
func (w dockerSweeper) RemoveRun(ctx context.Context, run string) ([]string, error) {
	if run == "" {
		return nil, errors.New("docker: remove a run's containers: no run")
	}
	return Remove(ctx, w.cli, run)
}

func safeName(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_', r == '.':
			b.WriteRune(r)
		default:
			b.WriteByte('-')
		}
	}
	if b.Len() == 0 {
		return "x"
	}
	return b.String()
}

// containerInstance is a started container.
type containerInstance struct {
	d           Docker
	id, name    string
	image       string
	dirs        []string // the host directories it mounts
	stopTimeout time.Duration
	tail        *procgroup.Tail
	ready       string
	pgid        int // on the host; 0 when unknown
	unobserve   func()

	out *lineLog // the container's stdout lines; ended with its output
	pid int      // its first process, on the host; 0 when unknown

	once     sync.Once
	stopErr  error
	done     chan struct{} // closed once it exited or was stopped
	doneOnce sync.Once
	unwatch  context.CancelFunc

	mu       sync.Mutex
	paused   bool  // ContainerPause sent, no ContainerUnpause since
	stopping bool  // Stop began: never paused again
	exit     *Exit // how it ended on its own
}

// watch waits, in the background, for the container to stop running. One
// that stops before Stop was asked for ended on its own: its exit status,
// whether the kernel killed it for memory (the daemon's OOMKilled) and its
// last lines are kept for Exited, and Done closes.
func (c *containerInstance) watch(ctx context.Context) {
	wctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	c.unwatch = cancel
	resc, errc := c.d.Client.ContainerWait(wctx, c.id, container.WaitConditionNotRunning)
	go func() {
		defer c.closeDone()
		code := -1
		select {
		case res := <-resc:
			code = int(res.StatusCode)
		case <-errc:
			// Stop cancelled the wait, or the daemon went away: nothing
			// is known of an ending of its own.
			return
		}
		c.mu.Lock()
		stopping := c.stopping
		c.mu.Unlock()
		if stopping {
			return
		}
		e := &Exit{Name: c.name, Code: code, MemoryLimit: c.d.Memory}
		ictx, icancel := context.WithTimeout(wctx, 5*time.Second)
		if in, err := c.d.Client.ContainerInspect(ictx, c.id); err == nil && in.State != nil {
			e.Code, e.OOMKilled = in.State.ExitCode, in.State.OOMKilled
		}
		icancel()
		// Its output ends with it: the last lines come shortly after.
		select {
		case <-c.out.ended:
		case <-time.After(2 * time.Second):
		}
		e.Log = LastLines(strings.TrimSpace(c.tail.String()), 20)
		c.mu.Lock()
		c.exit = e
		c.mu.Unlock()
	}()
}

func (c *containerInstance) closeDone() { c.doneOnce.Do(func() { close(c.done) }) }

// Exited says how the container ended, if it ended on its own: nil while
// it runs, and once Stop was asked for.
func (c *containerInstance) Exited() *Exit {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopping {
		return nil
	}
	return c.exit
}

// OOMKills is the kernel's count of out-of-memory kills in the
// container's memory cgroup, and its limit.
func (c *containerInstance) OOMKills() (kills, limit int64, ok bool) {
	n, ok := oomKills(c.pid)
	return n, c.d.Memory, ok
}

// Freeze pauses the container (the daemon's cgroup freezer): every
// process in it stops until Thaw. It is idempotent.
func (c *containerInstance) Freeze(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.paused || c.stopping {
		return nil
	}
	if err := c.d.Client.ContainerPause(ctx, c.id); err != nil {
		return fmt.Errorf("pause %s container: %w", c.name, err)
	}
	c.paused = true
	return nil
}

// Thaw unpauses the container if Freeze paused it.
func (c *containerInstance) Thaw(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.paused {
		return nil
	}
	if err := c.d.Client.ContainerUnpause(ctx, c.id); err != nil && !client.IsErrNotFound(err) {
		return fmt.Errorf("unpause %s container: %w", c.name, err)
	}
	c.paused = false
	return nil
}

// follow streams the container's output into the tail and the lines.
func (c *containerInstance) follow(ctx context.Context) error {
	rc, err := c.d.Client.ContainerLogs(context.WithoutCancel(ctx), c.id, container.LogsOptions{ShowStdout: true, ShowStderr: true, Follow: true})
	if err != nil {
		return fmt.Errorf("start %s in docker: logs: %w", c.name, err)
	}
	pr, pw := io.Pipe()
	go func() {
		_, err := stdcopy.StdCopy(pw, c.tail, rc)
		rc.Close()
		pw.CloseWithError(err)
	}()
	go c.out.read(pr)
	return nil
}

func (c *containerInstance) waitLine(ctx context.Context, prefix string) (string, error) {
	rest, err := c.out.wait(ctx, prefix, c.out.ended)
	switch {
	case errors.Is(err, errStopped):
		return "", fmt.Errorf("%s exited before it said %q", c.name, prefix)
	case err != nil:
		return "", fmt.Errorf("%s: waiting for %q: %w", c.name, prefix, err)
	}
	return rest, nil
}

func (c *containerInstance) waitHTTP(ctx context.Context, url string, tc *tls.Config) error {
	switch err := waitHTTP(ctx, url, tc, c.out.ended); {
	case errors.Is(err, errStopped):
		return fmt.Errorf("%s exited before it answered on %s", c.name, url)
	case err != nil:
		return fmt.Errorf("%s did not answer on %s: %w", c.name, url, err)
	}
	return nil
}

func (c *containerInstance) logNote() string {
	t := strings.TrimSpace(c.tail.String())
	if t == "" {
		return ""
	}
	return "\n--- " + c.name + " container log (last lines) ---\n" + LastLines(t, 20)
}

// ID is the container's id.
func (c *containerInstance) ID() string { return c.id }

// PGID is the host's process group of the container's processes (0 when
// the daemon did not say: a remote daemon's containers are not ours to
// measure).
func (c *containerInstance) PGID() int { return c.pgid }

func (c *containerInstance) Ready() string { return c.ready }
func (c *containerInstance) Logs() string  { return c.tail.String() }

// Done is closed once the container has exited, or been stopped by Stop.
func (c *containerInstance) Done() <-chan struct{} { return c.done }

// Exec runs argv in the container to its end.
func (c *containerInstance) Exec(ctx context.Context, argv ...string) (Output, error) {
	ex, err := c.d.Client.ContainerExecCreate(ctx, c.id, container.ExecOptions{Cmd: argv, AttachStdout: true, AttachStderr: true})
	if err != nil {
		return Output{}, fmt.Errorf("exec in %s: %w", c.name, err)
	}
	att, err := c.d.Client.ContainerExecAttach(ctx, ex.ID, container.ExecAttachOptions{})
	if err != nil {
		return Output{}, fmt.Errorf("exec in %s: %w", c.name, err)
	}
	defer att.Close()
	var out bytes.Buffer
	errb := procgroup.NewTail(64 << 10)
	if _, err := stdcopy.StdCopy(&out, errb, att.Reader); err != nil {
		return Output{}, fmt.Errorf("exec in %s: %w", c.name, err)
	}
	o := Output{Stdout: out.Bytes(), Stderr: []byte(errb.String())}
	in, err := c.d.Client.ContainerExecInspect(ctx, ex.ID)
	if err != nil {
		return o, fmt.Errorf("exec in %s: %w", c.name, err)
	}
	o.ExitCode = in.ExitCode
	if in.ExitCode != 0 {
		return o, fmt.Errorf("exit status %d", in.ExitCode)
	}
	return o, nil
}

// Stop stops the container (SIGTERM, then SIGKILL after the stop timeout)
// and removes it. It is idempotent; a container already gone is stopped.
func (c *containerInstance) Stop(ctx context.Context) error {
	c.once.Do(func() {
		ctx := context.WithoutCancel(ctx)
		// A paused container would not act on SIGTERM: unpaused first.
		c.mu.Lock()
		c.stopping = true
		c.mu.Unlock()
		if err := c.Thaw(ctx); err != nil {
			c.stopErr = err
		}
		t := c.stopTimeout
		if t == 0 {
			t = DefaultStopTimeout
		}
		secs := int(t / time.Second)
		err := c.d.Client.ContainerStop(ctx, c.id, container.StopOptions{Timeout: &secs})
		if err != nil && !client.IsErrNotFound(err) {
			c.stopErr = err
		}
		if err := c.d.Client.ContainerRemove(ctx, c.id, container.RemoveOptions{Force: true}); err != nil && !client.IsErrNotFound(err) {
			c.stopErr = errors.Join(c.stopErr, err)
		}
		if err := c.d.giveBack(ctx, c.image, c.dirs); err != nil {
			c.stopErr = errors.Join(c.stopErr, err)
		}
		if c.unobserve != nil {
			c.unobserve()
		}
		if c.unwatch != nil {
			c.unwatch()
		}
		c.closeDone()
	})
	if c.stopErr != nil {
		return fmt.Errorf("stop %s container: %w", c.name, c.stopErr)
	}
	return nil
}

var (
	_ Launcher      = Docker{}
	_ ImageStore    = Docker{}
	_ MemoryLimiter = Docker{}
	_ Sweeper       = dockerSweeper{}
	_ Instance      = (*containerInstance)(nil)
	_ Freezer       = (*containerInstance)(nil)
	_ Exiter        = (*containerInstance)(nil)
	_ OOMCounter    = (*containerInstance)(nil)
)
