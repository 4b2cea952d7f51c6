package cpuload

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"sync"
	"syscall"
	"time"
)

// The stall sampler runs in a process of its own: this program started
// again with samplerEnv set, which init below turns into the sampler's
// server before main runs. In hlsbench's own process a sampler thread that
// wakes from its sleep needs one of the Go runtime's Ps to go on, and the
// generator's goroutines hold them: with 8 busy goroutines beside it a
// SCHED_FIFO sampler saw 2.8 s of "stalls" in a 2 s run on an idle
// 2-core host (TestStallsApartFromBusyGoroutines), time the CPUs gave to
// hlsbench itself, which a pass then blamed on the host. In a process
// that runs nothing else, a late wake-up is again the CPU's.
//
// The server reads one request a line on stdin and answers each on
// stdout; it ends when stdin does, which is when hlsbench ends, even by
// SIGKILL: nothing is left behind.
const samplerEnv = "HLSBENCH_STALL_SAMPLER"

func init() {
	if os.Getenv(samplerEnv) == "1" {
		os.Exit(serveSampler(os.Stdin, os.Stdout))
	}
}

// samplerRequest is one line to the sampler's process.
type samplerRequest struct {
	Op        string        `json:"op"` // "start" or "stop"
	ID        int           `json:"id"`
	CPUs      []int         `json:"cpus,omitempty"`
	Period    time.Duration `json:"period,omitempty"`
	Threshold time.Duration `json:"threshold,omitempty"`
	FIFO      bool          `json:"fifo,omitempty"`
	Cell      []int         `json:"cell,omitempty"`
}

// samplerAnswer is its answer: Stalls to a stop, Err when it failed.
type samplerAnswer struct {
	ID     int     `json:"id"`
	Err    string  `json:"err,omitempty"`
	Stalls *Stalls `json:"stalls,omitempty"`
	// StallsErr is Stalls.Err, which JSON does not carry.
	StallsErr string `json:"stalls_err,omitempty"`
}

// serveSampler runs samplers in this process as in asks, until in ends.
func serveSampler(in io.Reader, out io.Writer) int {
	// A Ctrl-C goes to the whole process group: hlsbench stops the
	// sampler itself, then ends, and so does stdin.
	signal.Ignore(os.Interrupt, syscall.SIGHUP)
	running := map[int]*Sampler{}
	enc := json.NewEncoder(out)
	sc := bufio.NewScanner(in)
	for sc.Scan() {
		var req samplerRequest
		ans := samplerAnswer{}
		if err := json.Unmarshal(sc.Bytes(), &req); err != nil {
			ans.Err = err.Error()
		} else {
			ans.ID = req.ID
			switch req.Op {
			case "start":
				running[req.ID] = startInProcess(req.CPUs, req.Period, req.Threshold, req.FIFO, req.Cell)
			case "stop":
				s, ok := running[req.ID]
				if !ok {
					ans.Err = fmt.Sprintf("no sampler %d", req.ID)
					break
				}
				delete(running, req.ID)
				st := s.Stop()
				ans.Stalls = &st
				if st.Err != nil {
					ans.StallsErr = st.Err.Error()
				}
			default:
				ans.Err = fmt.Sprintf("unknown op %q", req.Op)
			}
		}
		if err := enc.Encode(ans); err != nil {
			return 1
		}
	}
	for _, s := range running {
		s.Stop()
	}
	return 0
}

// samplerProcess is the running sampler process, started on first use
// and kept for the rest of the run.
type samplerProcess struct {
	mu   sync.Mutex
	cmd  *exec.Cmd
	in   io.WriteCloser
	out  *json.Decoder
	next int
	err  error // it failed: every later use fails with this
}

var (
	samplerMu   sync.Mutex
	sampler     *samplerProcess
	samplerPath = "/proc/self/exe" // this program, even if its file was replaced
)

// CloseSampler ends the sampler process, if one runs: at the end of a
// run, which leaves no process behind. A later sampler starts another.
func CloseSampler() {
	samplerMu.Lock()
	p := sampler
	sampler = nil
	samplerMu.Unlock()
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.err == nil {
		p.err = errors.New("stall sampler: closed")
		p.in.Close() // it ends when its stdin does
	}
	done := make(chan struct{})
	go func() { p.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(2 * time.Second):
		p.cmd.Process.Kill()
		<-done
	}
}

// samplerPID is the sampler process's PID, 0 when none runs: it is ours
// (Self counts it).
func samplerPID() int {
	samplerMu.Lock()
	defer samplerMu.Unlock()
	if sampler == nil || sampler.err != nil || sampler.cmd.Process == nil {
		return 0
	}
	return sampler.cmd.Process.Pid
}

// theSampler is the sampler process, started if none runs (or the last
// one failed).
func theSampler() (*samplerProcess, error) {
	samplerMu.Lock()
	defer samplerMu.Unlock()
	if sampler != nil && sampler.err == nil {
		return sampler, nil
	}
	cmd := exec.Command(samplerPath)
	// ps shows what it is; init serves before anything reads the argument.
	cmd.Args = []string{os.Args[0], "stall-sampler"}
	cmd.Env = append(os.Environ(), samplerEnv+"=1")
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("stall sampler: starting its process: %w", err)
	}
	sampler = &samplerProcess{cmd: cmd, in: in, out: json.NewDecoder(out)}
	return sampler, nil
}

// call sends req and reads its answer.
func (p *samplerProcess) call(req samplerRequest) (samplerAnswer, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.err != nil {
		return samplerAnswer{}, p.err
	}
	fail := func(err error) (samplerAnswer, error) {
		p.err = fmt.Errorf("stall sampler: its process: %w", err)
		p.in.Close()
		go p.cmd.Wait()
		return samplerAnswer{}, p.err
	}
	b, err := json.Marshal(req)
	if err != nil {
		return samplerAnswer{}, err
	}
	if _, err := p.in.Write(append(b, '\n')); err != nil {
		return fail(err)
	}
	var ans samplerAnswer
	if err := p.out.Decode(&ans); err != nil {
		return fail(err)
	}
	if ans.Err != "" {
		return ans, errors.New("stall sampler: " + ans.Err)
	}
	if ans.ID != req.ID {
		return fail(fmt.Errorf("answer to %d, asked %d", ans.ID, req.ID))
	}
	return ans, nil
}

// startApart starts a sampler in the sampler process; Stop asks it for
// the stalls.
func startApart(cpus []int, period, threshold time.Duration, fifo bool, cell []int) (*Sampler, error) {
	p, err := theSampler()
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	p.next++
	id := p.next
	p.mu.Unlock()
	if _, err := p.call(samplerRequest{Op: "start", ID: id, CPUs: cpus, Period: period, Threshold: threshold, FIFO: fifo, Cell: cell}); err != nil {
		return nil, err
	}
	return &Sampler{apart: p, id: id, out: Stalls{CPUs: append([]int{}, cpus...), Period: period, Threshold: threshold}}, nil
}

// stopApart is Stop of a sampler in the sampler process.
func (s *Sampler) stopApart() Stalls {
	ans, err := s.apart.call(samplerRequest{Op: "stop", ID: s.id})
	switch {
	case err != nil:
		s.out.Err = err
	case ans.Stalls == nil:
		s.out.Err = errors.New("stall sampler: no stalls in its answer")
	default:
		s.out = *ans.Stalls
		s.out.Apart = true
		if ans.StallsErr != "" {
			s.out.Err = errors.New(ans.StallsErr)
		}
	}
	return s.out
}
