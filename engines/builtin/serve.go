package builtin

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"
)

// ServeOptions are the cache's listeners.
type ServeOptions struct {
	Listen string // plaintext HTTP, host:port
	// TLSListen, when set, is a TLS listener too, serving the certificate
	// and key in CertFile and KeyFile (PEM).
	TLSListen, CertFile, KeyFile string
}

// ReadHeaderTimeout is NGINX's client_header_timeout, for every listener.
const ReadHeaderTimeout = 60 * time.Second

// A Server serves a cache on its listeners until Shutdown.
type Server struct {
	plain, secure *http.Server
	addr, tlsAddr string
	errc          chan error
}

// Serve opens o's listeners and serves h on them.
func Serve(h http.Handler, o ServeOptions) (*Server, error) {
	s := &Server{errc: make(chan error, 2)}
	ln, err := net.Listen("tcp", o.Listen)
	if err != nil {
		return nil, fmt.Errorf("listen %s: %w", o.Listen, err)
	}
	s.addr = ln.Addr().String()
	s.plain = &http.Server{Handler: h, ReadHeaderTimeout: ReadHeaderTimeout}
	var tln net.Listener
	if o.TLSListen != "" {
		cert, err := tls.LoadX509KeyPair(o.CertFile, o.KeyFile)
		if err != nil {
			ln.Close()
			return nil, fmt.Errorf("TLS certificate: %w", err)
		}
		tln, err = net.Listen("tcp", o.TLSListen)
		if err != nil {
			ln.Close()
			return nil, fmt.Errorf("listen %s: %w", o.TLSListen, err)
		}
		s.tlsAddr = tln.Addr().String()
		// HTTP/1.1 only, as the other engines are measured: no ALPN h2.
		s.secure = &http.Server{Handler: h, ReadHeaderTimeout: ReadHeaderTimeout,
			TLSConfig:    &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12, NextProtos: []string{"http/1.1"}},
			TLSNextProto: map[string]func(*http.Server, *tls.Conn, http.Handler){}}
	}
	go func() { s.errc <- s.plain.Serve(ln) }()
	if s.secure != nil {
		go func() { s.errc <- s.secure.ServeTLS(tln, "", "") }()
	}
	return s, nil
}

// Addr is the plaintext listener's address; TLSAddr the TLS one's ("" without).
func (s *Server) Addr() string    { return s.addr }
func (s *Server) TLSAddr() string { return s.tlsAddr }

// Err receives the first error that stopped a listener.
func (s *Server) Err() <-chan error { return s.errc }

// Shutdown stops the listeners, letting answers under way finish until ctx
// ends, then closes what is left.
func (s *Server) Shutdown(ctx context.Context) error {
	var errs []error
	for _, srv := range []*http.Server{s.plain, s.secure} {
		if srv == nil {
			continue
		}
		if err := srv.Shutdown(ctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
			srv.Close()
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
