package launch

import (
	"context"
	"fmt"
	"sync"
)

// Inproc runs instances inside hlsbench itself (tests, --runtime inproc):
// the spec's Serve starts a Go server and says how to stop it. Nothing is
// pinned or recorded: it lives and dies with this process.
type Inproc struct{}

// InprocRuntime serves the built-in cache and the origin inside hlsbench.
var InprocRuntime = Runtime{
	Name:      "inproc",
	Help:      "inproc (builtin and origin inside hlsbench)",
	Binaries:  InHlsbench,
	Isolation: "none: the in-process runtime serves every cell inside hlsbench, which cannot be stopped, so idle cells run beside the one measured",
	Open:      func(context.Context, Session) (Launcher, error) { return Inproc{}, nil },
}

// Name is the runtime's name.
func (Inproc) Name() string { return "inproc" }

// Start calls s.Serve.
func (Inproc) Start(ctx context.Context, s Spec) (Instance, error) {
	if s.Serve == nil {
		return nil, fmt.Errorf("start %s in-process: nothing to serve", s.Name)
	}
	ready, stop, err := s.Serve()
	if err != nil {
		return nil, fmt.Errorf("start %s in-process: %w", s.Name, err)
	}
	return &served{name: s.Name, ready: ready, stop: stop, done: make(chan struct{})}, nil
}

// Run runs s's command on this host: an in-process instance runs here.
func (Inproc) Run(ctx context.Context, s Spec) (Output, error) { return Local{}.Run(ctx, s) }

type served struct {
	name  string
	ready string
	stop  func(context.Context) error

	once sync.Once
	err  error
	done chan struct{}
}

func (i *served) Ready() string         { return i.ready }
func (i *served) Logs() string          { return "" }
func (i *served) Done() <-chan struct{} { return i.done }
func (i *served) Exec(ctx context.Context, argv ...string) (Output, error) {
	return runLocal(ctx, "", nil, argv)
}

// Stop stops the server once; later calls return the first one's error.
func (i *served) Stop(ctx context.Context) error {
	i.once.Do(func() {
		if i.stop != nil {
			i.err = i.stop(ctx)
		}
		close(i.done)
	})
	if i.err != nil {
		return fmt.Errorf("stop %s: %w", i.name, i.err)
	}
	return nil
}

var (
	_ Launcher = Inproc{}
	_ Instance = (*served)(nil)
)
