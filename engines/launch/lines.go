package launch

import (
	"bufio"
	"context"
	"errors"
	"io"
	"strings"
	"sync"

	"github.com/hlsbench/hlsbench/engines/internal/procgroup"
)

// lineLog keeps an instance's output lines, each also written to its tail,
// and wakes whoever waits for one: a ready line. It ends with the output.
type lineLog struct {
	tail *procgroup.Tail

	mu    sync.Mutex
	lines []string
	wake  chan struct{}
	ended chan struct{}
}

func newLineLog(tail *procgroup.Tail) *lineLog {
	return &lineLog{tail: tail, wake: make(chan struct{}), ended: make(chan struct{})}
}

// read takes r's lines until r ends.
func (l *lineLog) read(r io.Reader) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		l.tail.Write([]byte(line + "\n"))
		l.mu.Lock()
		l.lines = append(l.lines, line)
		close(l.wake)
		l.wake = make(chan struct{})
		l.mu.Unlock()
	}
	close(l.ended)
}

// errStopped ends a wait whose stop channel closed: the instance is gone.
var errStopped = errors.New("stopped")

// wait returns the rest of the first line starting with prefix, trimmed;
// errStopped once stop is closed, ctx's error once it is done.
func (l *lineLog) wait(ctx context.Context, prefix string, stop <-chan struct{}) (string, error) {
	seen := 0
	for {
		l.mu.Lock()
		for ; seen < len(l.lines); seen++ {
			if rest, ok := strings.CutPrefix(l.lines[seen], prefix); ok {
				l.mu.Unlock()
				return strings.TrimSpace(rest), nil
			}
		}
		wake := l.wake
		l.mu.Unlock()
		select {
		case <-wake:
		case <-stop:
			return "", errStopped
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}
}
