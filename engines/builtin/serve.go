package builtin

import (
	"context"
	"crypto/tls"
	"encoding/json"
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
	// ProxyListen, when set, is a listener taking a PROXY v2 header on
	// every connection (from a TLS terminator in front): requests there
	// see the client the header gave, and answers carry it in
	// ClientHeader. Its accepted and refused connections are in the stats
	// (proxy_accepted, proxy_rejected, proxy_<reason>).
	ProxyListen string
}

// ClientHeader is the header that, on the PROXY listener, says the client
// address and port the header gave.
const ClientHeader = "X-Hlsbench-Client"

// ReadHeaderTimeout is NGINX's client_header_timeout, for every listener.
const ReadHeaderTimeout = 60 * time.Second

// A Server serves a cache on its listeners until Shutdown.
type Server struct {
	plain, secure, proxied *http.Server
	addr, tlsAddr          string
	proxy                  *ProxyListener
	errc                   chan error
}

// Serve opens o's listeners and serves c on them.
func Serve(c *Cache, o ServeOptions) (s *Server, err error) {
	s = &Server{errc: make(chan error, 3)}
	ln, err := net.Listen("tcp", o.Listen)
	if err != nil {
		return nil, fmt.Errorf("listen %s: %w", o.Listen, err)
	}
	defer func() {
		if err != nil {
			ln.Close()
			if s.proxy != nil {
				s.proxy.Close()
			}
		}
	}()
	s.addr = ln.Addr().String()
	var h http.Handler = c
	if o.ProxyListen != "" {
		pl, err := net.Listen("tcp", o.ProxyListen)
		if err != nil {
			return nil, fmt.Errorf("listen %s: %w", o.ProxyListen, err)
		}
		if s.proxy, err = NewProxyListener(pl, ProxyOptions{}); err != nil {
			pl.Close()
			return nil, err
		}
		h = s.withProxyStats(c)
		s.proxied = &http.Server{Handler: clientHeader(c), ReadHeaderTimeout: ReadHeaderTimeout}
	}
	s.plain = &http.Server{Handler: h, ReadHeaderTimeout: ReadHeaderTimeout}
	var tln net.Listener
	if o.TLSListen != "" {
		cert, err := tls.LoadX509KeyPair(o.CertFile, o.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("TLS certificate: %w", err)
		}
		tln, err = net.Listen("tcp", o.TLSListen)
		if err != nil {
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
	if s.proxied != nil {
		go func() { s.errc <- s.proxied.Serve(s.proxy) }()
	}
	return s, nil
}

// ProxyAddr is the PROXY listener's address ("" without).
func (s *Server) ProxyAddr() string {
	if s.proxy == nil {
		return ""
	}
	return s.proxy.Addr().String()
}

// clientHeader says in every answer which client the PROXY header gave.
func clientHeader(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set(ClientHeader, r.RemoteAddr)
		h.ServeHTTP(w, r)
	})
}

// withProxyStats answers StatsPath with the cache's stats and the PROXY
// listener's counts, flat: proxy_accepted, proxy_rejected, proxy_<reason>.
func (s *Server) withProxyStats(c *Cache) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != StatsPath {
			c.ServeHTTP(w, r)
			return
		}
		m := map[string]int64{}
		b, _ := json.Marshal(c.Stats())
		json.Unmarshal(b, &m)
		ps := s.proxy.Stats()
		pm := map[string]int64{}
		b, _ = json.Marshal(ps)
		json.Unmarshal(b, &pm)
		for k, v := range pm {
			m["proxy_"+k] = v
		}
		m["proxy_rejected"] = ps.Rejected()
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		json.NewEncoder(w).Encode(m)
	})
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
	for _, srv := range []*http.Server{s.plain, s.secure, s.proxied} {
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
