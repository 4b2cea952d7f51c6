package engines

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/hlsbench/hlsbench/engines/builtin"
	"github.com/hlsbench/hlsbench/engines/certs"
	"github.com/hlsbench/hlsbench/engines/freeport"
	"github.com/hlsbench/hlsbench/engines/launch"
	"github.com/hlsbench/hlsbench/engines/runstate"
	"github.com/hlsbench/hlsbench/results"
	"golang.org/x/sys/unix"
)

// Config is what an engine renders: the workload's policy and where it runs.
type Config struct {
	Policy Policy
	// Listen is the engine's address (127.0.0.1:PORT, a real port: engines
	// cannot all report one they picked themselves).
	Listen string
	// Origin is our origin's host:port.
	Origin string
	// WorkDir holds the rendered files and the engine's state (a private
	// temporary directory per instance).
	WorkDir string
	// CacheDir is a RAM-backed directory for engines that cache in files
	// (NGINX), so every engine caches in RAM.
	CacheDir string
	// CPUs is how many cores the engine may use (threads, worker processes).
	CPUs int
	// Topology is how clients reach the engine: TopologyPlaintext, or
	// TopologyTLS, its own TLS listener on TLSListen serving the run's
	// certificate (Certs) besides the plaintext one on Listen.
	Topology  string
	TLSListen string
	Certs     certs.Files
	// ProxyListen is, in topology proxyv2, the engine's PROXY v2 listener
	// (the terminator's backend), besides the plaintext one on Listen.
	// Answers then carry ClientHeader: the client address and port the
	// engine took from the PROXY header.
	ProxyListen string
	// Own, when set, is a configuration of the user's own, written to
	// WorkDir instead of the rendered one; Listen is then its listener
	// where it names one (NGINX's), and Origin where it fetches from.
	Own *UserConfig
}

// ClientHeader is the header in which, in topology proxyv2, every engine
// says which client address and port it saw ("127.0.0.1:40312"): the
// generator's, carried by PROXY v2, not the terminator's own socket.
const ClientHeader = builtin.ClientHeader

// The topologies: how the generator reaches an engine.
const (
	TopologyPlaintext = "plaintext"
	TopologyTLS       = "tls"     // the engine's own TLS listener
	TopologyProxyV2   = "proxyv2" // a TLS terminator in front, speaking PROXY v2 to the engine
)

// Topologies are every topology, in the reference page's order.
var Topologies = []string{TopologyPlaintext, TopologyTLS, TopologyProxyV2}

// TLSServer is an engine that may have a TLS listener of its own.
// TLSSupport says, running the binary where the engine runs, whether this
// build has one: nil, or a NotApplicableError saying why not.
type TLSServer interface {
	TLSSupport(ctx context.Context, run Exec, binary string) error
}

// NotApplicableError is a cell that cannot be measured by its nature (an
// engine without a TLS listener asked for TLS): reported with its reason,
// never counted as a failure.
type NotApplicableError struct{ Reason string }

func (e *NotApplicableError) Error() string { return "not applicable: " + e.Reason }

// RuntimeError is an engine asked to run in a runtime it cannot run in
// (only the built-in cache and null are served inside hlsbench), with the
// runtimes it can.
type RuntimeError struct {
	Engine, Runtime string
	Want            []string
}

func (e *RuntimeError) Error() string {
	return fmt.Sprintf("%s cannot run in runtime %s: want %s", e.Engine, e.Runtime, strings.Join(e.Want, " or "))
}

// NoImageError is an engine or terminator to run in a container without an
// image to run it from. It names the engine, not the command that builds
// its image: that is the caller's to say.
type NoImageError struct{ Engine, Runtime string }

func (e *NoImageError) Error() string { return e.Engine + " in " + e.Runtime + ": no image" }

// Files are rendered configuration files, by name relative to WorkDir.
type Files map[string][]byte

// Names lists the files in a stable order.
func (f Files) Names() []string {
	n := make([]string, 0, len(f))
	for k := range f {
		n = append(n, k)
	}
	sort.Strings(n)
	return n
}

// LaunchSpec is how to run an engine: its binary and command line.
type LaunchSpec struct {
	Binary string // a name found on PATH, or a path
	Args   []string
	Env    []string
	// StopTimeout is how long SIGTERM is given before SIGKILL.
	StopTimeout time.Duration
	// PinFlag, when set, is the flag the command takes its CPUs with (it
	// pins its own threads); otherwise taskset pins it.
	PinFlag string
}

// Engine describes a caching engine. Render and Launch are pure: no I/O.
type Engine interface {
	Name() string
	// Binary is the executable's name, looked up on PATH.
	Binary() string
	Render(cfg Config) (Files, error)
	Launch(cfg Config, binary string) LaunchSpec
}

// Exec runs a command where the engine runs — on this host, or in its
// container — and returns what it wrote: engines describe the commands
// that read their version, check their files and read their counters, and
// the launch layer runs them (launch.Launcher.Run before the engine
// starts, launch.Instance.Exec while it runs).
type Exec func(ctx context.Context, argv ...string) (launch.Output, error)

// Versioner reports the version of an installed binary (`varnishd -V`).
type Versioner interface {
	Version(ctx context.Context, run Exec, binary string) (string, error)
}

// Checker validates rendered files with the engine itself (`varnishd -C`,
// `nginx -t`); the files are already written to cfg.WorkDir.
type Checker interface {
	Check(ctx context.Context, run Exec, cfg Config, binary string) error
}

// CounterReader reads an instance's own counters (varnishstat, NGINX's log).
type CounterReader interface {
	ReadCounters(ctx context.Context, run Exec, cfg Config, binary string) (map[string]float64, error)
}

// LocalExec runs commands on this host, in dir.
func LocalExec(dir string) Exec {
	return func(ctx context.Context, argv ...string) (launch.Output, error) {
		return launch.Local{}.Run(ctx, launch.Spec{Name: "command", Command: argv, Dir: dir})
	}
}

// Differ states what no configuration makes equal between an engine and
// the others; runs record it beside the engine's version.
type Differ interface {
	Differences() []string
}

// InprocServer is an engine that can run inside hlsbench (the in-process
// runtime): Serve starts it on cfg.Listen.
type InprocServer interface {
	Serve(cfg Config) func() (ready string, stop func(context.Context) error, err error)
}

// Installer explains how to get an engine that is not installed.
type Installer interface {
	InstallHint() string
}

// registry lists the engines run as local processes: one explicit list.
var registry = map[string]Engine{
	"varnish": Varnish{},
	"vinyl":   Vinyl{},
	"nginx":   NGINX{},
}

// Lookup finds a process engine by name.
func Lookup(name string) (Engine, bool) {
	e, ok := registry[name]
	return e, ok
}

// ProcessEngines lists the engines run as local processes.
func ProcessEngines() []string {
	n := make([]string, 0, len(registry))
	for k := range registry {
		n = append(n, k)
	}
	sort.Strings(n)
	return n
}

// FindBinary locates an engine's binary: the override if given, else PATH
// and the usual sbin directories (root's PATH may lack them).
func FindBinary(e Engine, override string) (string, error) {
	if override != "" {
		p, err := exec.LookPath(override)
		if err != nil {
			return "", &BinaryError{Engine: e.Name(), Path: override, Err: err}
		}
		return p, nil
	}
	if p, err := exec.LookPath(e.Binary()); err == nil {
		return p, nil
	}
	for _, dir := range []string{"/usr/sbin", "/usr/local/sbin", "/sbin"} {
		p := filepath.Join(dir, e.Binary())
		if st, err := os.Stat(p); err == nil && st.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	hint := ""
	if in, ok := e.(Installer); ok {
		hint = ": " + in.InstallHint()
	}
	return "", fmt.Errorf("%s: %s %w on PATH%s", e.Name(), e.Binary(), ErrNotFound, hint)
}

// BinaryError is a binary the caller named that cannot be run.
type BinaryError struct {
	Engine, Path string
	Err          error
}

func (e *BinaryError) Error() string { return fmt.Sprintf("%s: %s: %v", e.Engine, e.Path, e.Err) }
func (e *BinaryError) Unwrap() error { return e.Err }

// tmpfsMagic is statfs's f_type of a tmpfs (TMPFS_MAGIC).
const tmpfsMagic = 0x01021994

// ramCandidate is the RAM file system scratch directories go in, and
// statfs how it is read (tests replace both).
var (
	ramCandidate = "/dev/shm"
	statfs       = unix.Statfs
)

// ramDir is the parent of an engine's scratch directories: a RAM file
// system (tmpfs), and "" for why; else os.TempDir() and why not. Varnish's
// platform notes ask for its workdir on tmpfs ("On Linux, use tmpfs for
// the workdir"): its shared-memory log is a mapped file of 80 MB that it
// writes on every request, whose writeback to a disk is disk work while
// it runs and, in a suite, while whichever cell is measured when the
// kernel flushes it. exec asks for one that programs may be loaded from:
// Varnish loads its compiled VCL from its workdir.
func ramDir(exec bool) (dir, why string) {
	var st unix.Statfs_t
	switch err := statfs(ramCandidate, &st); {
	case err != nil:
		why = fmt.Sprintf("no %s (%v)", ramCandidate, err)
	case st.Type != tmpfsMagic:
		why = ramCandidate + " is not a tmpfs"
	case exec && st.Flags&unix.ST_NOEXEC != 0:
		why = ramCandidate + " is mounted noexec"
	case unix.Access(ramCandidate, unix.W_OK|unix.X_OK) != nil:
		why = ramCandidate + " is not writable by this user"
	default:
		return ramCandidate, ""
	}
	return os.TempDir(), why
}

// WorkOnDisk says an engine's work directory is not in RAM, and why, for
// a run's warnings; "" when it is.
func WorkOnDisk(e results.Engine) string {
	if e.WorkDir == "" || e.WorkDir == results.WorkDirRAM {
		return ""
	}
	return fmt.Sprintf("%s: its work directory is on %s, not a tmpfs: what it writes there is written back to disk while it runs, and in a suite while another cell is measured", e.Name, e.WorkDir)
}

// LocalSpec is an engine's start.
type LocalSpec struct {
	Policy    Policy
	OriginURL string // http://127.0.0.1:PORT
	Binary    string // override; "" finds it
	CPUs      []int
	// Launcher runs the engine: a local process (nil, launch.Local), a
	// container (launch.Docker, from Image) or in-process (launch.Inproc,
	// an InprocServer only).
	Launcher launch.Launcher
	Image    string
	// Name is the engine's name in the results, as the run selected it
	// (varnish@9.0.2, or a variant's label); "" is the engine's own name.
	// Kind is the engine's own name when Name is a label.
	Name, Kind string
	// GivenBinary is the binary a variant was given, recorded as it was
	// given ("" when found as usual).
	GivenBinary string
	// Version is recorded instead of the one the engine says: the
	// built-in cache's (hlsbench's), or a source build's, whose binary may
	// say only "trunk".
	Version string
	// Commit and SourceSHA256 identify a build from source.
	Commit, SourceSHA256 string
	// Topology is "" or TopologyPlaintext, or TopologyTLS with the run's
	// certificates in TLS (written into the instance's work directory).
	Topology string
	TLS      *certs.Set
	// Terminator is topology proxyv2's TLS terminator (nil: hitch), run by
	// Launcher from TermBinary ("" finds it) or TermImage.
	Terminator Terminator
	TermBinary string
	TermImage  string
	// Own is a configuration of the user's own (LoadUserConfig), run
	// instead of the one the engine renders: in plaintext only, with the
	// origin where it fetches from (OriginURL must be there).
	Own *UserConfig
	// Host is the address the engine listens at, on the host Launcher
	// runs it on, and is reached at ("" is loopback: everything on this
	// host).
	Host string
}

// rehost is addr (a loopback host:port) at s.Host's address instead.
func (s LocalSpec) rehost(addr string) string {
	if s.Host == "" {
		return addr
	}
	_, port, _ := net.SplitHostPort(addr)
	return net.JoinHostPort(s.Host, port)
}

// Source identifies an engine built from source, for its results.
type Source struct {
	Version, Commit, SHA256 string
}

// SplitRef splits an engine as a run selects it, NAME or NAME@VERSION.
func SplitRef(ref string) (name, version string) {
	name, version, _ = strings.Cut(ref, "@")
	return name, version
}

// StartLocal renders an engine's files into a private directory, starts its
// binary, waits until it answers HTTP, and records its version. Whatever it
// started is stopped and removed again when a later step fails, and what
// that teardown could not undo is joined to the step's error.
func StartLocal(ctx context.Context, e Engine, s LocalSpec) (inst Instance, err error) {
	lch := s.Launcher
	if lch == nil {
		lch = launch.Local{}
	}
	rt := launch.RuntimeOf(lch)
	inContainer, inproc := rt.Binaries == launch.InImage, rt.Binaries == launch.InHlsbench
	bin, err := binaryFor(e, s, rt)
	if err != nil {
		return nil, err
	}
	origin := strings.TrimPrefix(s.OriginURL, "http://")
	if err := checkOwn(e, s, origin, inproc); err != nil {
		return nil, err
	}
	listen, err := listenAddr(s.Own)
	if err != nil {
		return nil, err
	}
	listen = s.rehost(listen)
	li := &localInstance{e: e, bin: bin, run: runstate.From(ctx)}
	// Registered before anything is made: each step leaves in li what it
	// made, and Stop undoes what is there.
	defer func() {
		if err != nil {
			if serr := li.Stop(context.WithoutCancel(ctx)); serr != nil {
				err = errors.Join(err, serr)
			}
		}
	}()
	group := ""
	if !inContainer && !inproc {
		group = dropGroup(e, bin, s.Own)
	}
	if err := li.makeScratch(inContainer, group); err != nil {
		return nil, err
	}
	li.cfg = Config{Policy: s.Policy, Listen: listen, Origin: origin, WorkDir: li.work, CacheDir: li.cache, CPUs: max(len(s.CPUs), 1),
		Topology: TopologyPlaintext, Own: s.Own}
	li.url = "http://" + listen
	if err := li.setTopology(s); err != nil {
		return nil, err
	}
	// Commands before the engine starts run where it will run.
	before := li.runner(lch, s.Image)
	if inproc {
		before = LocalExec(li.work)
	}
	if err := li.writeConfig(ctx, s, before); err != nil {
		return nil, err
	}
	version, err := li.preflight(ctx, s, before, inproc)
	if err != nil {
		return nil, err
	}
	if err := li.start(ctx, s, lch, version); err != nil {
		return nil, err
	}
	if li.cfg.Topology == TopologyProxyV2 {
		if err := li.startTerminator(ctx, s, lch); err != nil {
			return nil, err
		}
	}
	if inContainer {
		if m, ok := lch.(launch.MemoryLimiter); ok {
			li.info.MemoryLimitBytes = m.MemoryLimit()
		}
		li.info.Image = s.Image
		if st, ok := lch.(launch.ImageStore); ok {
			if id, err := st.ImageID(ctx, s.Image); err == nil {
				li.info.Image += "@" + id
			}
		}
	}
	// The engine's processes are one group, local or in its container
	// (on this host), which engines/cost measures.
	if pg, ok := li.inst.(ProcessGroup); ok && pg.PGID() > 0 {
		return &processEngine{li, pg}, nil
	}
	return li, nil
}

// binaryFor is the engine's binary where rt runs it: none in-process,
// where only an InprocServer runs; in an image, the one on its PATH; else
// the one found here.
func binaryFor(e Engine, s LocalSpec, rt launch.Runtime) (string, error) {
	switch rt.Binaries {
	case launch.InHlsbench:
		if _, ok := e.(InprocServer); !ok {
			return "", &RuntimeError{Engine: e.Name(), Runtime: rt.Name,
				Want: launch.RuntimeNames(func(r launch.Runtime) bool { return r.Binaries != launch.InHlsbench })}
		}
		return s.Binary, nil
	case launch.InImage:
		if s.Image == "" {
			return "", &NoImageError{Engine: e.Name(), Runtime: rt.Name}
		}
		if s.Binary == "" {
			return e.Binary(), nil
		}
		return s.Binary, nil
	}
	return FindBinary(e, s.Binary)
}

// checkOwn refuses a configuration of the user's own that e cannot run as
// s asks: an engine that takes none (or any in-process), a topology but
// plaintext, or an origin other than the one the file fetches from.
func checkOwn(e Engine, s LocalSpec, origin string, inproc bool) error {
	if s.Own == nil {
		return nil
	}
	if _, ok := e.(OwnConfigurable); !ok || inproc {
		return fmt.Errorf("%s takes no configuration file", e.Name())
	}
	if s.Topology != "" && s.Topology != TopologyPlaintext {
		return &NotApplicableError{Reason: OwnTopology}
	}
	if origin != s.Own.Origin {
		return fmt.Errorf("%s: the origin is at %s but %s fetches from %s", e.Name(), origin, s.Own.Path, s.Own.Origin)
	}
	return nil
}

// listenAddr is where the engine listens for plain HTTP: where a
// configuration of the user's own says, else a free port.
func listenAddr(own *UserConfig) (string, error) {
	if own != nil && own.Listen != "" {
		return own.Listen, nil
	}
	return freeport.Addr()
}

// makeScratch makes the engine's work and cache directories through the
// run, which records them before they exist: a killed run's are removed by
// the next. Each is in l.dirs, Stop's to remove, as soon as it is made.
func (l *localInstance) makeScratch(inContainer bool, group string) error {
	parent, why := ramDir(true)
	l.workFS = results.WorkDirRAM
	switch {
	case inContainer:
		// A container's files are mounted or copied into it (on another
		// host, where /dev/shm is the container's own tmpfs, mounted over
		// what was copied); its memory limit would count a tmpfs.
		parent, l.workFS = os.TempDir(), ""
	case why != "":
		l.workFS = parent + " (" + why + ")"
	}
	work, workDir, err := scratchDir(l.run, parent, l.e.Name(), inContainer, group)
	if err != nil {
		return err
	}
	l.work, l.dirs = work, append(l.dirs, workDir)
	cacheParent, _ := ramDir(false)
	cache, cacheDir, err := scratchDir(l.run, cacheParent, l.e.Name()+"-cache", inContainer, group)
	if err != nil {
		return err
	}
	l.cache, l.dirs = cache, append(l.dirs, cacheDir)
	return nil
}

// setTopology gives the engine the listeners and certificates s.Topology
// takes, and makes the instance's URL the one clients use.
func (l *localInstance) setTopology(s LocalSpec) (err error) {
	switch s.Topology {
	case TopologyTLS:
		if l.cfg.TLSListen, err = freeport.Addr(); err != nil {
			return err
		}
		l.cfg.TLSListen = s.rehost(l.cfg.TLSListen)
		if s.TLS == nil {
			return fmt.Errorf("%s: topology tls without certificates", l.e.Name())
		}
		dir := filepath.Join(l.work, "tls")
		if err := os.Mkdir(dir, 0o700); err != nil {
			return err
		}
		if l.cfg.Certs, err = s.TLS.Write(dir); err != nil {
			return err
		}
		l.cfg.Topology = TopologyTLS
		l.url = "https://" + l.cfg.TLSListen
	case TopologyProxyV2:
		if s.TLS == nil {
			return fmt.Errorf("%s: topology proxyv2 without certificates", l.e.Name())
		}
		if l.cfg.ProxyListen, err = freeport.Addr(); err != nil {
			return err
		}
		l.cfg.ProxyListen = s.rehost(l.cfg.ProxyListen)
		l.cfg.Topology = TopologyProxyV2
	case "", TopologyPlaintext:
	default:
		return fmt.Errorf("%s: topology %q: want one of %v", l.e.Name(), s.Topology, Topologies)
	}
	return nil
}

// runner runs a command where lch will run the engine, in its work
// directory and with its cache.
func (l *localInstance) runner(lch launch.Launcher, image string) Exec {
	return func(ctx context.Context, argv ...string) (launch.Output, error) {
		return lch.Run(ctx, launch.Spec{Name: l.e.Name(), Command: argv, Dir: l.work, Image: image, Binds: []string{l.cache}})
	}
}

// writeConfig writes the engine's configuration into its work directory:
// the user's own as given, or the one it renders, after the policy's purge
// mode is resolved with run, since the rendering depends on the mode.
func (l *localInstance) writeConfig(ctx context.Context, s LocalSpec, run Exec) (err error) {
	if s.Policy.Purge != "" {
		if l.cfg.Policy.Purge, err = resolvePurge(ctx, l.e, run, l.bin, s.Policy.Purge); err != nil {
			return err
		}
	}
	var files Files
	if s.Own != nil {
		// Run as given: never rewritten.
		files = Files{l.e.(OwnConfigurable).OwnConfigFile(): s.Own.Content}
	} else if files, err = l.e.Render(l.cfg); err != nil {
		return fmt.Errorf("render %s: %w", l.e.Name(), err)
	}
	// Written before the engine checks them (varnishd -C, nginx -t).
	if err := launch.WriteFiles(l.work, files); err != nil {
		return fmt.Errorf("render %s: %w", l.e.Name(), err)
	}
	return nil
}

// preflight asks the engine, with run, whether it serves its topology,
// checks its configuration and asks its version, which proves the binary
// runs: the last two not in-process, where hlsbench serves it. The version
// is s.Version when given.
func (l *localInstance) preflight(ctx context.Context, s LocalSpec, run Exec, inproc bool) (version string, err error) {
	switch l.cfg.Topology {
	case TopologyTLS:
		ts, ok := l.e.(TLSServer)
		if !ok {
			return "", &NotApplicableError{Reason: l.e.Name() + " has no TLS listener"}
		}
		if err := ts.TLSSupport(ctx, run, l.bin); err != nil {
			return "", err
		}
	case TopologyProxyV2:
		ps, ok := l.e.(ProxyListener)
		if !ok {
			return "", &NotApplicableError{Reason: l.e.Name() + " takes no PROXY protocol"}
		}
		if err := ps.ProxySupport(ctx, run, l.bin); err != nil {
			return "", err
		}
	}
	if c, ok := l.e.(Checker); ok && !inproc {
		if err := c.Check(ctx, run, l.cfg, l.bin); err != nil {
			if s.Own != nil {
				return "", fmt.Errorf("%s rejected %s: %w", l.e.Name(), s.Own.Path, err)
			}
			return "", fmt.Errorf("%s rejected its configuration: %w", l.e.Name(), err)
		}
	}
	version = "unknown"
	if v, ok := l.e.(Versioner); ok && !inproc {
		// Asked even when the version is given: it proves the binary runs.
		if version, err = v.Version(ctx, run, l.bin); err != nil {
			return "", fmt.Errorf("%s version: %w", l.e.Name(), err)
		}
	}
	if s.Version != "" {
		version = s.Version
	}
	return version, nil
}

// start launches the engine through lch and records what its results say
// of it.
func (l *localInstance) start(ctx context.Context, s LocalSpec, lch launch.Launcher, version string) (err error) {
	ls := l.e.Launch(l.cfg, l.bin)
	spec := launch.Spec{Name: l.e.Name(), Command: append([]string{ls.Binary}, ls.Args...),
		Env: ls.Env, Dir: l.work, Image: s.Image, Binds: []string{l.cache}, CPUs: s.CPUs, PinFlag: ls.PinFlag,
		ReadyURL: "http://" + l.cfg.Listen + "/_hlsbench/ready", StopTimeout: ls.StopTimeout}
	if in, ok := l.e.(InprocServer); ok {
		spec.Serve = in.Serve(l.cfg)
	}
	// Kept before its error is checked: Stop ends whatever Start left.
	if l.inst, err = lch.Start(ctx, spec); err != nil {
		return err
	}
	name := s.Name
	if name == "" {
		name = l.e.Name()
	}
	l.info = results.Engine{Name: name, Kind: s.Kind, Version: version, Binary: s.GivenBinary, Commit: s.Commit, SourceSHA256: s.SourceSHA256,
		Runtime: lch.Name(), Topology: l.cfg.Topology, Pinning: map[string]string{"engine": CPUList(s.CPUs)}, Config: s.Own.Record(), WorkDir: l.workFS}
	if d, ok := l.e.(Differ); ok {
		l.info.Differences = d.Differences()
	}
	return nil
}

type localInstance struct {
	e     Engine
	bin   string
	cfg   Config
	work  string
	cache string
	// workFS is where work is: results.WorkDirRAM, or the disk's
	// directory and why not in RAM.
	workFS string
	inst   launch.Instance
	url    string
	info   results.Engine
	run    *runstate.Run
	// dirs are the scratch directories to remove: work's and cache's, or
	// their private parents in a container.
	dirs []string
	// term is topology proxyv2's terminator, in termWork (termDir removes
	// it).
	term              launch.Instance
	termWork, termDir string
}

// startTerminator puts a TLS terminator in front of the engine's PROXY
// listener, through the engine's launcher, and makes it the instance's URL.
// It is ready once an https request through it reaches the engine.
func (l *localInstance) startTerminator(ctx context.Context, s LocalSpec, lch launch.Launcher) (err error) {
	t := s.Terminator
	if t == nil {
		t = Hitch{}
	}
	if launch.RuntimeOf(lch).Binaries == launch.InHlsbench {
		lch = launch.Local{} // a terminator is a program of its own
	}
	inContainer := launch.RuntimeOf(lch).Binaries == launch.InImage
	if inContainer && s.TermImage == "" {
		return &NoImageError{Engine: t.Name(), Runtime: launch.RuntimeOf(lch).Name}
	}
	bin := s.TermBinary
	switch {
	case inContainer && bin == "":
		bin = t.Binary()
	case !inContainer:
		if bin, err = findTerminator(t, s.TermBinary); err != nil {
			return err
		}
	}
	// hitch and HAProxy read their files as root, before they drop
	// privileges: their directory is hlsbench's alone.
	termParent, _ := ramDir(false)
	if inContainer {
		termParent = os.TempDir() // as the engine's (makeScratch)
	}
	if l.termWork, l.termDir, err = scratchDir(l.run, termParent, t.Name(), inContainer, ""); err != nil {
		return err
	}
	tc := TermConfig{Backend: l.cfg.ProxyListen, WorkDir: l.termWork, CPUs: l.cfg.CPUs}
	if inContainer {
		// The container runs hitch as root whoever runs hlsbench: its
		// workers take the image's user, not one this host may lack.
		tc.User = HitchImageUser
	}
	if tc.Listen, err = freeport.Addr(); err != nil {
		return err
	}
	tc.Listen = s.rehost(tc.Listen)
	dir := filepath.Join(l.termWork, "tls")
	if err := os.Mkdir(dir, 0o700); err != nil {
		return err
	}
	if tc.Certs, err = s.TLS.Write(dir); err != nil {
		return err
	}
	files, err := t.Render(tc)
	if err != nil {
		return fmt.Errorf("render %s: %w", t.Name(), err)
	}
	if err := launch.WriteFiles(l.termWork, files); err != nil {
		return err
	}
	run := func(ctx context.Context, argv ...string) (launch.Output, error) {
		return lch.Run(ctx, launch.Spec{Name: t.Name(), Command: argv, Dir: l.termWork, Image: s.TermImage})
	}
	version, err := t.Version(ctx, run, bin)
	if err != nil {
		return fmt.Errorf("%s version: %w", t.Name(), err)
	}
	ls := t.Launch(tc, bin)
	l.url = "https://" + tc.Listen
	l.term, err = lch.Start(ctx, launch.Spec{Name: t.Name(), Command: append([]string{ls.Binary}, ls.Args...),
		Dir: l.termWork, Image: s.TermImage, CPUs: s.CPUs, StopTimeout: ls.StopTimeout,
		ReadyURL: l.url + "/_hlsbench/ready", ReadyTLS: s.TLS.ClientConfig()})
	if err != nil {
		return err
	}
	l.info.Terminator, l.info.TerminatorVersion = t.Name(), version
	if inContainer {
		l.info.TerminatorImage = s.TermImage
	}
	return nil
}

// findTerminator is the terminator's binary: override, PATH, or the usual
// sbin directories.
func findTerminator(t Terminator, override string) (string, error) {
	if override != "" {
		return exec.LookPath(override)
	}
	if p, err := exec.LookPath(t.Binary()); err == nil {
		return p, nil
	}
	for _, dir := range []string{"/usr/sbin", "/usr/local/sbin", "/sbin"} {
		p := filepath.Join(dir, t.Binary())
		if st, err := os.Stat(p); err == nil && st.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s: %s %w on PATH (apt-get install %s)", t.Name(), t.Binary(), ErrNotFound, t.Name())
}

// FindTerminator is the path of the named terminator's binary here.
func FindTerminator(name string) (string, error) {
	t, ok := LookupTerminator(name)
	if !ok {
		return "", fmt.Errorf("no terminator %q: want %s", name, strings.Join(TerminatorNames(), " or "))
	}
	return findTerminator(t, "")
}

// TermPGID is the terminator's process group (0 without one, or unknown).
func (l *localInstance) TermPGID() int {
	if pg, ok := l.term.(ProcessGroup); ok {
		return pg.PGID()
	}
	return 0
}

// Exited says how the engine, or its terminator, ended on its own: nil
// while both run (launch.Exiter).
func (l *localInstance) Exited() *launch.Exit {
	for _, inst := range []launch.Instance{l.inst, l.term} {
		if x, ok := inst.(launch.Exiter); ok {
			if e := x.Exited(); e != nil {
				return e
			}
		}
	}
	return nil
}

// OOMKills is the count of out-of-memory kills in the engine's and its
// terminator's containers, and the engine's limit (launch.OOMCounter).
func (l *localInstance) OOMKills() (kills, limit int64, ok bool) {
	for i, inst := range []launch.Instance{l.inst, l.term} {
		if oc, is := inst.(launch.OOMCounter); is {
			if n, lim, known := oc.OOMKills(); known {
				kills, ok = kills+n, true
				if i == 0 {
					limit = lim
				}
			}
		}
	}
	return kills, limit, ok
}

// Logs are the ends of the engine's and its terminator's output, by part
// ("engine", and the terminator's name).
func (l *localInstance) Logs() map[string]string {
	out := map[string]string{}
	if l.inst != nil {
		out["engine"] = l.inst.Logs()
	}
	if l.term != nil {
		name := l.info.Terminator
		if name == "" {
			name = "terminator"
		}
		out[name] = l.term.Logs()
	}
	return out
}

func (l *localInstance) URL() string          { return l.url }
func (l *localInstance) Info() results.Engine { return l.info }

// processEngine is an engine whose processes are a process group on this
// host: a local process's, or a container's.
type processEngine struct {
	*localInstance
	pg ProcessGroup
}

// PGID is the engine's process group.
func (l *processEngine) PGID() int { return l.pg.PGID() }

// Stop ends the engine (SIGTERM, then SIGKILL, or its container) and
// removes its directories.
func (l *localInstance) Stop(ctx context.Context) error {
	var errs []error
	if l.term != nil {
		errs = append(errs, l.term.Stop(ctx))
	}
	if l.termDir != "" {
		errs = append(errs, l.run.RemoveAll(l.termDir))
	}
	if l.inst != nil {
		errs = append(errs, l.inst.Stop(ctx))
	}
	for _, d := range l.dirs {
		errs = append(errs, l.run.RemoveAll(d))
	}
	return errors.Join(errs...)
}

// Freeze stops the engine's processes and its terminator's
// (launch.Freezer): a suite holds every cell but the measured one still.
// An engine in hlsbench's own process cannot be frozen: launch.ErrCannotFreeze.
func (l *localInstance) Freeze(ctx context.Context) error {
	if l.term != nil {
		if err := launch.Freeze(ctx, l.term); err != nil {
			return fmt.Errorf("freeze %s: %w", l.info.Terminator, err)
		}
	}
	if err := launch.Freeze(ctx, l.inst); err != nil {
		return fmt.Errorf("freeze %s: %w", l.info.Name, err)
	}
	return nil
}

// Thaw lets the engine and its terminator run again: the engine first,
// so that the terminator's first connection finds it awake.
func (l *localInstance) Thaw(ctx context.Context) error {
	if err := launch.Thaw(ctx, l.inst); err != nil {
		return fmt.Errorf("thaw %s: %w", l.info.Name, err)
	}
	if l.term != nil {
		if err := launch.Thaw(ctx, l.term); err != nil {
			return fmt.Errorf("thaw %s: %w", l.info.Terminator, err)
		}
	}
	return nil
}

// CacheBytes is the disk space of the engine's cache directory (RAM-backed):
// what an engine that caches in files (NGINX) holds outside its processes'
// resident memory.
func (l *localInstance) CacheBytes() (int64, error) {
	if l.cfg.Own != nil && !l.ownCounters() {
		// NGINX caches in files, where a configuration of one's own puts
		// them: not in the directory hlsbench made.
		return 0, fmt.Errorf("%s caches where %s says, which hlsbench does not measure", l.e.Name(), l.cfg.Own.Path)
	}
	return DirBytes(l.cache)
}

// CacheSizer is an instance that says how much its cache files take.
type CacheSizer interface {
	CacheBytes() (int64, error)
}

// DirBytes is the space the files under dir take (their blocks, as du
// counts them); files that vanish while it counts are skipped.
func DirBytes(dir string) (int64, error) {
	var n int64
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		info, err := d.Info()
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if st, ok := info.Sys().(*syscall.Stat_t); ok {
			n += st.Blocks * 512
		} else {
			n += info.Size()
		}
		return nil
	})
	return n, err
}

// UpstreamCounter is the engine's, when it has one.
func (l *localInstance) UpstreamCounter() string {
	if l.cfg.Own != nil && !l.ownCounters() {
		return ""
	}
	if u, ok := l.e.(UpstreamCounter); ok {
		return u.UpstreamCounter()
	}
	return ""
}

func (l *localInstance) Counters(ctx context.Context) (map[string]float64, error) {
	cr, ok := l.e.(CounterReader)
	if !ok || l.cfg.Own != nil && !l.ownCounters() {
		return nil, nil
	}
	return cr.ReadCounters(ctx, l.inst.Exec, l.cfg, l.bin)
}

// ownCounters: the engine's counters and cache size do not depend on its
// configuration (varnishstat reads the same with any VCL, and its store is
// in memory; NGINX's counters come from the access log format hlsbench
// renders, which a file of one's own lacks, and its cache files are where
// the file puts them).
func (l *localInstance) ownCounters() bool {
	oc, ok := l.e.(interface{ CountersWithOwnConfig() bool })
	return ok && oc.CountersWithOwnConfig()
}

var (
	_ Instance        = (*localInstance)(nil)
	_ Counters        = (*localInstance)(nil)
	_ UpstreamCounter = (*localInstance)(nil)
	_ CacheSizer      = (*localInstance)(nil)
	_ UpstreamCounter = Varnish{}
	_ UpstreamCounter = Vinyl{}
	_ UpstreamCounter = NGINX{}
	_ ProcessGroup    = (*processEngine)(nil)
)

var (
	_ Differ = Varnish{}
	_ Differ = Vinyl{}
	_ Differ = NGINX{}
)
