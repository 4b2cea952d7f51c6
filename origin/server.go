package origin

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"
)

// Server runs an Origin's data handler and control API on listeners of
// their own, and acts out the connection-level failure modes on the data
// listener: Refuse closes it and its open connections (new connections are
// refused) and recovering listens again on the same address; Drop accepts
// connections and closes them at once, and closes the open ones.
type Server struct {
	o        *Origin
	dataAddr string
	ctlAddr  string
	ctl      *http.Server
	unwatch  func()
	done     chan struct{} // closed by Close: stops the relisten loop
	wg       sync.WaitGroup

	mu       sync.Mutex
	data     *http.Server // nil while refusing
	closed   bool
	retrying bool

	connMu sync.Mutex
	conns  map[net.Conn]chan struct{} // closed once the connection's handler has returned
}

// cutWait bounds how long a mode change waits for the answers it cut to be
// counted: a handler notices at its next write or pacing wake-up.
const cutWait = 2 * time.Second

// relistenEvery is how often a Server retries listening again on its data
// address after a failure.
const relistenEvery = 50 * time.Millisecond

// Start listens on dataAddr and controlAddr (host:port; port 0 picks one)
// and serves o on them until Close. Bind loopback addresses unless proxies
// elsewhere must reach the origin: the control API has no authentication.
func Start(o *Origin, dataAddr, controlAddr string) (_ *Server, err error) {
	s := &Server{o: o, done: make(chan struct{}), conns: make(map[net.Conn]chan struct{})}
	defer func() {
		if err != nil {
			err = errors.Join(err, s.Close())
		}
	}()
	ln, err := net.Listen("tcp", dataAddr)
	if err != nil {
		return nil, fmt.Errorf("origin data listener: %w", err)
	}
	s.dataAddr = ln.Addr().String()
	s.mu.Lock()
	s.startData(ln)
	s.mu.Unlock()

	cl, err := net.Listen("tcp", controlAddr)
	if err != nil {
		return nil, fmt.Errorf("origin control listener: %w", err)
	}
	s.ctlAddr = cl.Addr().String()
	s.ctl = &http.Server{Handler: o.Control(), ReadHeaderTimeout: 10 * time.Second}
	s.serve(s.ctl, cl)

	if s.unwatch, err = o.watch(s.apply); err != nil {
		return nil, fmt.Errorf("origin mode %v: %w", o.Mode(), err)
	}
	return s, nil
}

// DataAddr is the data listener's address (host:port), the same while it
// refuses connections.
func (s *Server) DataAddr() string { return s.dataAddr }

// ControlAddr is the control API's address (host:port).
func (s *Server) ControlAddr() string { return s.ctlAddr }

// Close stops both listeners and closes every connection. Answers under way
// end at their next write. Closing again does nothing.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	data := s.data
	s.data = nil
	s.mu.Unlock()
	// Outside s.mu: a mode change holds the origin's lock while it waits
	// for s.mu.
	if s.unwatch != nil {
		s.unwatch()
	}
	close(s.done)
	var errs []error
	if data != nil {
		errs = append(errs, data.Close())
	}
	if s.ctl != nil {
		errs = append(errs, s.ctl.Close())
	}
	s.closeConns()
	s.wg.Wait()
	return errors.Join(errs...)
}

func (s *Server) serve(srv *http.Server, ln net.Listener) {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		_ = srv.Serve(ln) // returns when the listener is closed
	}()
}

// startData serves the data handler on ln. s.mu is held.
func (s *Server) startData(ln net.Listener) {
	s.data = &http.Server{Handler: s.o, ReadHeaderTimeout: 30 * time.Second, ConnState: s.track}
	s.serve(s.data, &dropListener{Listener: ln, o: s.o})
}

// apply acts out mode m on the data listener; the origin calls it on every
// change, one at a time.
func (s *Server) apply(m Mode) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	switch m {
	case Refuse:
		if s.data != nil {
			// Close waits for Serve to return, which takes no s.mu.
			_ = s.data.Close()
			s.data = nil
		}
		s.closeConns()
		return nil
	case Drop:
		err := s.listen()
		s.closeConns()
		return err
	}
	return s.listen()
}

// listen makes sure the data listener is up. s.mu is held.
func (s *Server) listen() error {
	if s.data != nil {
		return nil
	}
	ln, err := net.Listen("tcp", s.dataAddr)
	if err != nil {
		if !s.retrying {
			s.retrying = true
			s.wg.Add(1)
			go s.relisten()
		}
		return fmt.Errorf("origin data listener: listen again on %s (retrying every %v): %w", s.dataAddr, relistenEvery, err)
	}
	s.startData(ln)
	return nil
}

// relisten retries listening on the data address until it works, the mode
// no longer wants a listener, or the Server closes.
func (s *Server) relisten() {
	defer s.wg.Done()
	t := time.NewTicker(relistenEvery)
	defer t.Stop()
	for {
		select {
		case <-s.done:
			return
		case <-t.C:
		}
		s.mu.Lock()
		if s.closed || s.data != nil || s.o.Mode() == Refuse {
			s.retrying = false
			s.mu.Unlock()
			return
		}
		if ln, err := net.Listen("tcp", s.dataAddr); err == nil {
			s.startData(ln)
			s.retrying = false
			s.mu.Unlock()
			return
		}
		s.mu.Unlock()
	}
}

func (s *Server) track(c net.Conn, state http.ConnState) {
	s.connMu.Lock()
	defer s.connMu.Unlock()
	switch state {
	case http.StateNew:
		s.conns[c] = make(chan struct{})
	case http.StateClosed, http.StateHijacked:
		if gone, ok := s.conns[c]; ok {
			close(gone)
			delete(s.conns, c)
		}
	}
}

// closeConns closes the data connections and waits (up to cutWait) until
// their handlers have returned, so that an answer cut short is counted
// failed before the mode change is reported done.
func (s *Server) closeConns() {
	s.connMu.Lock()
	cs := make(map[net.Conn]chan struct{}, len(s.conns))
	for c, gone := range s.conns {
		cs[c] = gone
	}
	s.connMu.Unlock()
	for c := range cs {
		_ = c.Close()
	}
	deadline := time.NewTimer(cutWait)
	defer deadline.Stop()
	for _, gone := range cs {
		select {
		case <-gone:
		case <-deadline.C:
			return
		}
	}
}

// dropListener closes every connection it accepts while the origin drops.
type dropListener struct {
	net.Listener
	o *Origin
}

func (l *dropListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil || l.o.Mode() != Drop {
			return c, err
		}
		_ = c.Close()
	}
}
