package null

import (
	"bufio"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"sync"
)

// tlsServer is the null engine's TLS listener: the instrument's ceiling
// over TLS, so that an engine's TLS capacity has a ceiling to be read
// against. crypto/tls has no non-blocking form an event loop could drive,
// so each connection has a goroutine, as the built-in cache's TLS listener
// has; its answers are the event loops' own (the same parser, table and
// prebuilt answers), so that what it costs beyond plaintext null is the
// handshake and the records, the part of TLS no engine can avoid.
type tlsServer struct {
	ln      net.Listener
	answers *loop // the table and the counts; no epoll of its own
	wg      sync.WaitGroup

	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	closed bool
}

// tlsConfig is the built-in cache's TLS settings (engines/builtin): the
// same certificate, versions and ALPN, so that the two are read alike.
func tlsConfig(certFile, keyFile string) (*tls.Config, error) {
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("tls certificate %s, key %s: %w", certFile, keyFile, err)
	}
	return &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12, NextProtos: []string{"http/1.1"}}, nil
}

func listenTLS(addr string, cfg *tls.Config, table map[string]*entry) (*tlsServer, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("tls listen %s: %w", addr, err)
	}
	s := &tlsServer{ln: tls.NewListener(ln, cfg), answers: &loop{table: table}, conns: map[net.Conn]struct{}{}}
	s.wg.Go(s.accept)
	return s, nil
}

func (s *tlsServer) accept() {
	for {
		c, err := s.ln.Accept()
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return // closed
		}
		if tc, ok := c.(*tls.Conn); ok {
			if t, ok := tc.NetConn().(*net.TCPConn); ok {
				_ = t.SetNoDelay(true)
			}
		}
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			c.Close()
			return
		}
		s.conns[c] = struct{}{}
		s.mu.Unlock()
		s.answers.accepted.Add(1)
		s.wg.Go(func() { s.serve(c) })
	}
}

// serve reads a connection's requests and writes each batch of answers
// before reading again: pipelined requests wait in the socket, as they do
// in the event loops while an answer is queued.
func (s *tlsServer) serve(nc net.Conn) {
	defer func() {
		nc.Close()
		s.mu.Lock()
		delete(s.conns, nc)
		s.mu.Unlock()
	}()
	c := &conn{fd: -1}
	c.out = c.outBuf[:0]
	buf := make([]byte, readBufBytes)
	// Pieces of an answer leave as one record where they fit in one: a
	// head written alone would be a record and a segment of its own.
	w := bufio.NewWriterSize(nc, 16<<10)
	for {
		n, err := nc.Read(buf)
		if n > 0 {
			c.in = append(c.in, buf[:n]...)
		}
		s.answers.answer(c)
		for c.queued > 0 {
			for _, p := range c.out {
				if _, werr := w.Write(p); werr != nil {
					return
				}
			}
			if w.Flush() != nil {
				return
			}
			clear(c.outBuf[:])
			c.out, c.queued, c.arena = c.outBuf[:0], 0, c.arena[:0]
			if c.closing {
				return
			}
			// More whole requests may wait behind what has just left.
			s.answers.answer(c)
		}
		if err != nil || c.closing {
			return
		}
	}
}

func (s *tlsServer) close() {
	s.mu.Lock()
	s.closed = true
	s.ln.Close()
	for c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
}
