package null

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/hlsbench/hlsbench/engines/certs"
	"github.com/hlsbench/hlsbench/origin"
)

// tlsTestServer serves the origin's objects on a plaintext and a TLS
// listener, with a client that trusts the run's authority.
func tlsTestServer(t *testing.T) (*Server, *origin.Server, *tls.Config) {
	t.Helper()
	orig := testOrigin(t)
	objs, err := Fetch(context.Background(), "http://"+orig.DataAddr(), Paths(2))
	if err != nil {
		t.Fatal(err)
	}
	set, err := certs.New([]string{"127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	files, err := set.Write(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	s, err := Serve(Options{Listen: "127.0.0.1:0", TLSListen: "127.0.0.1:0", CertFile: files.Cert, KeyFile: files.Key,
		Threads: 1, Objects: objs})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, orig, set.ClientConfig()
}

// TestTLSSameAsPlaintext: over TLS every object, whole, ranged and HEAD,
// is the plaintext listener's answer byte for byte, and the connection
// negotiated http/1.1 as the built-in cache's does.
func TestTLSSameAsPlaintext(t *testing.T) {
	s, _, cc := tlsTestServer(t)
	if s.TLSAddr() == "" {
		t.Fatal("no TLS listener")
	}
	plain := &http.Client{Transport: &http.Transport{DisableCompression: true}}
	// A client that offers h2 first is answered in HTTP/1.1, as by the
	// built-in cache.
	cc.NextProtos = []string{"h2", "http/1.1"}
	secure := &http.Client{Transport: &http.Transport{DisableCompression: true, TLSClientConfig: cc}}
	defer plain.CloseIdleConnections()
	defer secure.CloseIdleConnections()
	for _, path := range Paths(2) {
		for _, method := range []string{"GET", "HEAD"} {
			for _, rng := range []string{"", "bytes=0-65535", "bytes=-500", "bytes=99999999-"} {
				want, wb := get(t, plain, method, "http://"+s.Addr()+path+"?run=x", rng)
				got, gb := get(t, secure, method, "https://"+s.TLSAddr()+path+"?run=x", rng)
				name := method + " " + path + " " + rng
				if got.StatusCode != want.StatusCode || !bytes.Equal(gb, wb) {
					t.Errorf("%s: status %d with %d bytes over TLS, %d with %d in plaintext", name, got.StatusCode, len(gb), want.StatusCode, len(wb))
				}
				if got.TLS == nil || got.TLS.NegotiatedProtocol != "http/1.1" {
					t.Errorf("%s: TLS state %v, want http/1.1 negotiated", name, got.TLS)
				}
			}
		}
	}
}

// TestTLSPipelining: one TLS connection carries requests one after another
// and sent together, answered in order, counted in the server's stats;
// after Close nothing listens.
func TestTLSPipelining(t *testing.T) {
	s, _, cc := tlsTestServer(t)
	conn, err := tls.Dial("tcp", s.TLSAddr(), cc)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(30 * time.Second))
	br := bufio.NewReader(conn)
	req := "GET " + origin.ManifestPath + "?run=k HTTP/1.1\r\nHost: x\r\n\r\n"
	const sequential = 50
	for i := range sequential {
		if _, err := io.WriteString(conn, req); err != nil {
			t.Fatal(err)
		}
		if resp, b := readAnswer(t, br, "GET"); resp.StatusCode != 200 || len(b) != origin.DefaultManifestSize {
			t.Fatalf("request %d: status %d, %d bytes", i, resp.StatusCode, len(b))
		}
	}
	batch := req + "GET /stream/segment-1.ts HTTP/1.1\r\nHost: x\r\n\r\n" + "GET /nope HTTP/1.1\r\nHost: x\r\n\r\n" +
		"GET /stream/segment-0.ts HTTP/1.1\r\nHost: x\r\nRange: bytes=10-19\r\nConnection: close\r\n\r\n"
	if _, err := io.WriteString(conn, batch); err != nil {
		t.Fatal(err)
	}
	for i, w := range []struct{ status, size int }{{200, origin.DefaultManifestSize}, {200, origin.DefaultSegmentSize}, {404, 19}, {206, 10}} {
		resp, b := readAnswer(t, br, "GET")
		if resp.StatusCode != w.status || len(b) != w.size {
			t.Errorf("pipelined answer %d: status %d with %d bytes, want %d with %d", i, resp.StatusCode, len(b), w.status, w.size)
		}
	}
	if _, err := br.ReadByte(); err != io.EOF {
		t.Errorf("after Connection: close: %v, want the connection closed (EOF)", err)
	}
	if st := s.Stats(); st.Accepted != 1 || st.Requests != sequential+4 {
		t.Errorf("stats %+v: want 1 connection and %d requests", st, sequential+4)
	}
	addr := s.TLSAddr()
	s.Close()
	if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		c.Close()
		t.Errorf("%s still accepts connections after Close", addr)
	}
}

// TestTLSBadCertificate: a TLS listener whose key cannot be read is an
// error naming the files, and nothing is left listening.
func TestTLSBadCertificate(t *testing.T) {
	_, err := Serve(Options{Listen: "127.0.0.1:0", TLSListen: "127.0.0.1:0", CertFile: "/nonexistent/cert.pem", KeyFile: "/nonexistent/key.pem"})
	if err == nil || !bytes.Contains([]byte(err.Error()), []byte("/nonexistent/cert.pem")) {
		t.Fatalf("err %v: want one naming the certificate", err)
	}
}
