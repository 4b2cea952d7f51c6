// Package agent runs hlsbench's load generator for a controller on another
// host. An agent serves a small HTTP API: it opens generators (their
// connections to the target), runs its share of a pass from an absolute
// instant and answers with the pass's histograms whole, and tells its
// clock, so that the controller can measure the offset between the hosts
// (see Client.Clock). The controller splits one schedule over its agents
// and merges their results exactly (Run).
//
// The API is versioned under /v1:
//
//	GET    /v1/clock                 {"now_unix_ns": …}
//	GET    /v1/host                  the host's CPU, memory and network counters (HostSample)
//	POST   /v1/generators            GeneratorSpec → {"id", "connections", "shards"}
//	POST   /v1/generators/{id}/pass  PassSpec → {"result": loadgen.Result.MarshalWire, "records": [Record…]}
//	POST   /v1/generators/{id}/interrupt   ends the pass running on it early: its
//	                                 result (Interrupted) still answers the pass
//	DELETE /v1/generators/{id}
//
// Errors are {"error": …, "field": …}; field names a setting the caller
// got wrong (status 400), and is empty for a failure of the agent's (500).
package agent

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/hlsbench/hlsbench/workloads/loadgen"
)

// ReadyPrefix starts the line `hlsbench agent` prints once it listens,
// followed by its address.
const ReadyPrefix = "hlsbench agent listening on "

// GeneratorSpec is a generator as a controller asks for it: loadgen.Options
// that can travel.
type GeneratorSpec struct {
	URL         string        `json:"url"`
	Connections int           `json:"connections"`
	Timeout     time.Duration `json:"timeout_ns,omitempty"`
	Header      [][2]string   `json:"header,omitempty"`
	Method      string        `json:"method,omitempty"`
	// CAPEM is a PEM bundle the target's certificate chains to (added to
	// the agent host's roots); Insecure skips verification.
	CAPEM          string `json:"ca_pem,omitempty"`
	Insecure       bool   `json:"insecure,omitempty"`
	Shards         int    `json:"shards,omitempty"`
	CPUs           []int  `json:"cpus,omitempty"`
	ChecksumHeader string `json:"checksum_header,omitempty"`
	// Capture names headers whose integer values each Record keeps (the
	// origin's stamps), for passes that ask for their records.
	Capture []string `json:"capture,omitempty"`
}

// PassSpec is one generator's part of a pass: loadgen.Pass that can travel.
// StartAt is on the agent's clock.
type PassSpec struct {
	Path     string          `json:"path,omitempty"`
	Paths    []string        `json:"paths,omitempty"`
	Zipf     float64         `json:"zipf,omitempty"`
	Header   [][2]string     `json:"header,omitempty"`
	Rate     float64         `json:"rate,omitempty"`
	Arrival  loadgen.Arrival `json:"arrival,omitempty"`
	Duration time.Duration   `json:"duration_ns,omitempty"`
	Requests int64           `json:"requests,omitempty"`
	Burst    int             `json:"burst,omitempty"`
	Seed     uint64          `json:"seed,omitempty"`
	Share    loadgen.Share   `json:"share"`
	StartAt  time.Time       `json:"start_at"`
	// Records asks for every request's Record with the result.
	Records bool `json:"records,omitempty"`
}

func (s PassSpec) pass(skew time.Duration) loadgen.Pass {
	p := loadgen.Pass{Path: s.Path, Paths: s.Paths, Zipf: s.Zipf, Header: s.Header, Rate: s.Rate, Arrival: s.Arrival,
		Duration: s.Duration, Requests: s.Requests, Burst: s.Burst, Seed: s.Seed, Share: s.Share}
	if !s.StartAt.IsZero() {
		p.StartAt = s.StartAt.Add(-skew)
	}
	return p
}

func (s GeneratorSpec) options() (loadgen.Options, error) {
	o := loadgen.Options{URL: s.URL, Connections: s.Connections, Timeout: s.Timeout, Header: s.Header, Method: s.Method,
		Insecure: s.Insecure, Shards: s.Shards, CPUs: s.CPUs, ChecksumHeader: s.ChecksumHeader}
	if s.CAPEM != "" {
		pool, err := x509.SystemCertPool()
		if err != nil || pool == nil {
			pool = x509.NewCertPool()
		}
		if !pool.AppendCertsFromPEM([]byte(s.CAPEM)) {
			return o, &loadgen.ConfigError{Field: "ca", Msg: "no PEM certificate in the bundle"}
		}
		o.TLSConfig = &tls.Config{RootCAs: pool, InsecureSkipVerify: s.Insecure, NextProtos: []string{"http/1.1"}}
	}
	return o, nil
}

// Server is an agent: the generators it holds for its controller.
type Server struct {
	// Skew moves the clock the agent tells and reads start instants on
	// by this much: a test's way to make a host whose clock is wrong.
	Skew time.Duration
	// OnRecord, when set, is every generator's loadgen.Options.OnRecord:
	// a test's way to see each request an agent sent.
	OnRecord func(shard int, rec *loadgen.Record, check loadgen.BodyCheck)

	mu      sync.Mutex
	gens    map[string]*loadgen.Generator
	logs    map[string]*recordLog         // by generator
	running map[string]context.CancelFunc // by generator: its pass's
	next    int
	closed  bool
}

// NewServer returns an agent with no generator.
func NewServer() *Server {
	return &Server{gens: map[string]*loadgen.Generator{}, logs: map[string]*recordLog{}, running: map[string]context.CancelFunc{}}
}

// Handler serves the API.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/clock", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, clockAnswer{NowUnixNs: time.Now().Add(s.Skew).UnixNano()})
	})
	mux.HandleFunc("GET /v1/host", s.host)
	mux.HandleFunc("POST /v1/generators", s.open)
	mux.HandleFunc("POST /v1/generators/{id}/pass", s.run)
	mux.HandleFunc("POST /v1/generators/{id}/interrupt", s.interrupt)
	mux.HandleFunc("DELETE /v1/generators/{id}", s.remove)
	return mux
}

type clockAnswer struct {
	NowUnixNs int64 `json:"now_unix_ns"`
}

// Opened is the agent's answer to an open.
type Opened struct {
	ID          string `json:"id"`
	Connections int    `json:"connections"`
	Shards      int    `json:"shards"`
}

type apiError struct {
	Error string `json:"error"`
	Field string `json:"field,omitempty"`
}

func (s *Server) open(w http.ResponseWriter, r *http.Request) {
	var spec GeneratorSpec
	if !readJSON(w, r, &spec) {
		return
	}
	o, err := spec.options()
	if err != nil {
		writeErr(w, err)
		return
	}
	log := &recordLog{next: s.OnRecord}
	o.OnRecord = log.add
	if len(spec.Capture) > 0 {
		o.BodyCheck = newCapture(spec.Capture)
	}
	g, err := loadgen.New(r.Context(), o)
	if err != nil {
		writeErr(w, err)
		return
	}
	log.shards = make([][]Record, g.Shards())
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		g.Close()
		writeErr(w, errors.New("the agent is closing"))
		return
	}
	s.next++
	id := "g" + strconv.Itoa(s.next)
	s.gens[id], s.logs[id] = g, log
	s.mu.Unlock()
	writeJSON(w, http.StatusCreated, Opened{ID: id, Connections: g.Connections(), Shards: g.Shards()})
}

func (s *Server) gen(w http.ResponseWriter, r *http.Request) *loadgen.Generator {
	s.mu.Lock()
	g := s.gens[r.PathValue("id")]
	s.mu.Unlock()
	if g == nil {
		writeJSON(w, http.StatusNotFound, apiError{Error: fmt.Sprintf("no generator %q", r.PathValue("id"))})
	}
	return g
}

func (s *Server) run(w http.ResponseWriter, r *http.Request) {
	g := s.gen(w, r)
	if g == nil {
		return
	}
	var spec PassSpec
	if !readJSON(w, r, &spec) {
		return
	}
	// The controller hanging up interrupts the pass, as does its
	// interrupt (its Ctrl-C), which still gets the result.
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	id := r.PathValue("id")
	s.mu.Lock()
	if s.running[id] != nil {
		s.mu.Unlock()
		writeJSON(w, http.StatusConflict, apiError{Error: fmt.Sprintf("generator %q is running a pass", id)})
		return
	}
	s.running[id] = cancel
	log := s.logs[id]
	s.mu.Unlock()
	log.on = spec.Records // no loop runs between passes
	res, err := g.Run(ctx, spec.pass(s.Skew))
	recs := log.take()
	s.mu.Lock()
	delete(s.running, id)
	s.mu.Unlock()
	if err != nil {
		writeErr(w, err)
		return
	}
	b, err := res.MarshalWire()
	if err != nil {
		writeErr(w, err)
		return
	}
	writeJSON(w, http.StatusOK, passAnswer{Result: b, Records: recs})
}

// passAnswer is a pass's answer: its result in loadgen's wire form, and
// its records when the pass asked for them.
type passAnswer struct {
	Result  json.RawMessage `json:"result"`
	Records []Record        `json:"records,omitempty"`
}

func (s *Server) interrupt(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	cancel := s.running[r.PathValue("id")]
	s.mu.Unlock()
	if cancel == nil {
		writeJSON(w, http.StatusConflict, apiError{Error: fmt.Sprintf("generator %q runs no pass", r.PathValue("id"))})
		return
	}
	cancel()
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) remove(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	g := s.gens[r.PathValue("id")]
	delete(s.gens, r.PathValue("id"))
	delete(s.logs, r.PathValue("id"))
	s.mu.Unlock()
	if g == nil {
		writeJSON(w, http.StatusNotFound, apiError{Error: fmt.Sprintf("no generator %q", r.PathValue("id"))})
		return
	}
	if err := g.Close(); err != nil {
		writeErr(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// Close closes every generator the agent holds.
func (s *Server) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	var errs []error
	for id, g := range s.gens {
		errs = append(errs, g.Close())
		delete(s.gens, id)
	}
	return errors.Join(errs...)
}

// maxBody bounds a request's JSON: a pass's paths are at most
// loadgen.MaxPaths.
const maxBody = 256 << 20

func readJSON(w http.ResponseWriter, r *http.Request, v any) bool {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBody))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		writeJSON(w, http.StatusBadRequest, apiError{Error: "read the request: " + err.Error()})
		return false
	}
	return true
}

func writeErr(w http.ResponseWriter, err error) {
	var ce *loadgen.ConfigError
	if errors.As(err, &ce) {
		writeJSON(w, http.StatusBadRequest, apiError{Error: ce.Msg, Field: ce.Field})
		return
	}
	writeJSON(w, http.StatusInternalServerError, apiError{Error: err.Error()})
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(v)
}

// Serve answers the API on ln until ctx ends, then closes the agent's
// generators. A pass in flight is interrupted.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	srv := &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 10 * time.Second,
		BaseContext: func(net.Listener) context.Context { return ctx }}
	stop := context.AfterFunc(ctx, func() { srv.Close() })
	defer stop()
	err := srv.Serve(ln)
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return errors.Join(err, s.Close())
}
