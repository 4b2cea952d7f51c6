package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/hlsbench/hlsbench/workloads/loadgen"
)

// Client talks to one agent.
type Client struct {
	// URL is the agent's API, http://host:port.
	URL  string
	HTTP *http.Client
}

func (c *Client) http() *http.Client {
	if c.HTTP != nil {
		return c.HTTP
	}
	return http.DefaultClient
}

// An Error is an agent's refusal: Field, when set, names the setting that
// was wrong (a loadgen.ConfigError's field).
type Error struct {
	Agent  string
	Status int
	Field  string
	Msg    string
}

func (e *Error) Error() string {
	if e.Field != "" {
		return fmt.Sprintf("agent %s: %s: %s", e.Agent, e.Field, e.Msg)
	}
	return fmt.Sprintf("agent %s: %s", e.Agent, e.Msg)
}

// do sends a request with a JSON body (none when in is nil) and decodes a
// 2xx answer into out (when set); raw, when set, receives the body as it is.
func (c *Client) do(ctx context.Context, method, path string, in, out any, raw *[]byte) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, strings.TrimSuffix(c.URL, "/")+path, body)
	if err != nil {
		return fmt.Errorf("agent %s: %w", c.URL, err)
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http().Do(req)
	if err != nil {
		return fmt.Errorf("agent %s: %w", c.URL, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("agent %s: read the answer: %w", c.URL, err)
	}
	if resp.StatusCode/100 != 2 {
		var ae apiError
		if json.Unmarshal(b, &ae) != nil || ae.Error == "" {
			ae.Error = fmt.Sprintf("%s: %.200s", resp.Status, b)
		}
		return &Error{Agent: c.URL, Status: resp.StatusCode, Field: ae.Field, Msg: ae.Error}
	}
	if raw != nil {
		*raw = b
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			return fmt.Errorf("agent %s: %w", c.URL, err)
		}
	}
	return nil
}

// Clock is an agent's clock as the controller measured it.
type Clock struct {
	// Offset is how far the agent's clock is ahead of the controller's
	// (negative: behind), Uncertainty how far the true offset may be from
	// it: half the round trip of the sample it was taken from, as NTP
	// bounds it.
	Offset      time.Duration
	Uncertainty time.Duration
	// RTT is that sample's round trip, Samples how many were taken.
	RTT     time.Duration
	Samples int
}

// ClockSamples is how many round trips Clock takes.
const ClockSamples = 8

// Clock measures the agent's clock offset as NTP does, by round trips: a
// request sent at t1 and answered at t4 (the controller's clock) with the
// agent's time t puts the offset at t − (t1+t4)/2, within half the round
// trip. The sample with the shortest round trip is kept.
func (c *Client) Clock(ctx context.Context) (Clock, error) {
	best := Clock{RTT: -1}
	for range ClockSamples {
		var a clockAnswer
		t1 := time.Now()
		if err := c.do(ctx, http.MethodGet, "/v1/clock", nil, &a, nil); err != nil {
			return Clock{}, err
		}
		rtt := time.Since(t1)
		if best.RTT >= 0 && rtt >= best.RTT {
			continue
		}
		mid := t1.Add(rtt / 2)
		best = Clock{Offset: time.Unix(0, a.NowUnixNs).Sub(mid), Uncertainty: rtt / 2, RTT: rtt}
	}
	best.Samples = ClockSamples
	return best, nil
}

// AnswerSlack is how much longer than its pass the controller waits for
// an agent's answer.
const AnswerSlack = 30 * time.Second

// Remote is a generator an agent opened.
type Remote struct {
	c       *Client
	opened  Opened
	timeout time.Duration // the generator's request timeout
}

// Open asks the agent for a generator: it opens its connections before it
// answers.
func (c *Client) Open(ctx context.Context, spec GeneratorSpec) (*Remote, error) {
	r := &Remote{c: c, timeout: spec.Timeout}
	if r.timeout == 0 {
		r.timeout = loadgen.DefaultTimeout
	}
	if err := c.do(ctx, http.MethodPost, "/v1/generators", spec, &r.opened, nil); err != nil {
		return nil, err
	}
	return r, nil
}

// Shards is the number of event loops of the remote generator.
func (r *Remote) Shards() int { return r.opened.Shards }

// Run runs the generator's part of a pass and returns its result, its
// verdict taken again here on its histograms, and its records when spec
// asks for them. Cancelling ctx interrupts
// the pass on the agent, which still answers with what it measured
// (Interrupted); the wait for the answer is bounded by the pass's own
// length (its start, duration and the generator's timeout) plus
// AnswerSlack, so a host that vanished cannot hold the controller.
func (r *Remote) Run(ctx context.Context, spec PassSpec) (*loadgen.Result, []Record, error) {
	limit := time.Until(spec.StartAt) + spec.Duration + r.timeout + AnswerSlack
	if spec.Duration == 0 {
		limit += loadgen.DefaultDuration
	}
	wait, cancel := context.WithTimeout(context.WithoutCancel(ctx), max(limit, AnswerSlack))
	defer cancel()
	stop := context.AfterFunc(ctx, func() {
		ictx, icancel := context.WithTimeout(wait, 10*time.Second)
		defer icancel()
		_ = r.c.do(ictx, http.MethodPost, "/v1/generators/"+r.opened.ID+"/interrupt", nil, nil, nil)
	})
	defer stop()
	var a passAnswer
	if err := r.c.do(wait, http.MethodPost, "/v1/generators/"+r.opened.ID+"/pass", spec, &a, nil); err != nil {
		return nil, nil, err
	}
	res, err := loadgen.UnmarshalWire(a.Result)
	if err != nil {
		return nil, nil, fmt.Errorf("agent %s: %w", r.c.URL, err)
	}
	return res, a.Records, nil
}

// Close closes the remote generator's connections.
func (r *Remote) Close(ctx context.Context) error {
	return r.c.do(ctx, http.MethodDelete, "/v1/generators/"+r.opened.ID, nil, nil, nil)
}
