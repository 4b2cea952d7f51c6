package certs

import (
	"bytes"
	"crypto/tls"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// A client with ClientConfig completes a handshake with ServerConfig on
// 127.0.0.1, and one that trusts only the system's roots does not.
func TestHandshake(t *testing.T) {
	s, err := New([]string{"127.0.0.1", "::1", "localhost"})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := tls.Listen("tcp", "127.0.0.1:0", s.ServerConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				c.Write([]byte("hello"))
			}()
		}
	}()
	c, err := tls.Dial("tcp", ln.Addr().String(), s.ClientConfig())
	if err != nil {
		t.Fatalf("trusted client: %v", err)
	}
	got, _ := io.ReadAll(c)
	st := c.ConnectionState()
	c.Close()
	if string(got) != "hello" || st.Version < tls.VersionTLS12 || len(st.PeerCertificates) != 1 {
		t.Errorf("read %q, state %+v", got, st)
	}
	if pub := st.PeerCertificates[0].PublicKeyAlgorithm.String(); pub != "ECDSA" {
		t.Errorf("key %s, want ECDSA", pub)
	}
	if c, err := tls.Dial("tcp", ln.Addr().String(), &tls.Config{}); err == nil {
		c.Close()
		t.Error("a client that trusts only the system's roots completed the handshake")
	}
	other, _ := New([]string{"127.0.0.1"})
	if c, err := tls.Dial("tcp", ln.Addr().String(), other.ClientConfig()); err == nil {
		c.Close()
		t.Error("another run's authority is trusted")
	}
	if _, err := New(nil); err == nil {
		t.Error("no hosts: want an error")
	}
}

func TestWrite(t *testing.T) {
	s, err := New([]string{"127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	f, err := s.Write(dir)
	if err != nil {
		t.Fatal(err)
	}
	for path, mode := range map[string]os.FileMode{f.CA: 0o644, f.Cert: 0o644, f.Key: 0o600, f.Combined: 0o600} {
		st, err := os.Stat(path)
		if err != nil || st.Mode().Perm() != mode || filepath.Dir(path) != dir {
			t.Errorf("%s: %v %v, want mode %o in %s", path, st.Mode(), err, mode, dir)
		}
	}
	comb, _ := os.ReadFile(f.Combined)
	if !bytes.HasPrefix(comb, s.CertPEM) || !bytes.HasSuffix(comb, s.KeyPEM) {
		t.Error("combined.pem is not the certificate then the key")
	}
	if _, err := tls.LoadX509KeyPair(f.Cert, f.Key); err != nil {
		t.Error(err)
	}
}

// Valid accepts a set Write wrote, and nothing else: a missing file, an
// authority that did not sign the certificate, a key of another set.
func TestValid(t *testing.T) {
	a, err := New([]string{"127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	b, err := New([]string{"127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if _, ok := Valid(dir); ok {
		t.Error("an empty directory is valid")
	}
	if _, err := a.Write(dir); err != nil {
		t.Fatal(err)
	}
	until, ok := Valid(dir)
	if !ok || time.Until(until) < Validity-2*time.Hour {
		t.Fatalf("a fresh set: %v until %v", ok, until)
	}
	if err := os.WriteFile(filepath.Join(dir, "ca.pem"), b.CAPEM, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, ok := Valid(dir); ok {
		t.Error("valid with another set's authority")
	}
	a.Write(dir)
	if err := os.WriteFile(filepath.Join(dir, "key.pem"), b.KeyPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, ok := Valid(dir); ok {
		t.Error("valid with another set's key")
	}
}
