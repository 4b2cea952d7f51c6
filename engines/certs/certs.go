// Package certs makes the certificates of one run: a certificate authority
// of its own and a server certificate it signs (ECDSA P-256), for the
// engines' and terminators' TLS listeners. Only the run's generator trusts
// the authority, and both live as long as the run: nothing is written but
// into the directories the caller gives, and the keys are never printed.
//
//	set, _ := certs.New([]string{"127.0.0.1", "::1", "localhost"})
//	files, _ := set.Write(workDir) // cert.pem, key.pem, combined.pem, ca.pem
//	client := set.ClientConfig()    // trusts set's authority alone
package certs

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// Validity is how long the certificates are valid: a run, with room for
// clocks that disagree a little.
const Validity = 7 * 24 * time.Hour

// Set is a run's authority and the server certificate it signed.
type Set struct {
	CAPEM   []byte // the authority's certificate
	CertPEM []byte // the server's certificate
	KeyPEM  []byte // the server's private key (PKCS #8)
	pool    *x509.CertPool
	cert    tls.Certificate
}

// New makes an authority and a server certificate for hosts (IP addresses
// or DNS names).
func New(hosts []string) (*Set, error) {
	if len(hosts) == 0 {
		return nil, errors.New("certs: no host to certify")
	}
	now := time.Now().Add(-time.Hour)
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	caTmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: "hlsbench run CA", Organization: []string{"hlsbench"}},
		NotBefore:             now,
		NotAfter:              now.Add(Validity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, fmt.Errorf("certs: authority: %w", err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: hosts[0], Organization: []string{"hlsbench"}},
		NotBefore:    now,
		NotAfter:     now.Add(Validity),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return nil, fmt.Errorf("certs: server certificate: %w", err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, err
	}
	s := &Set{
		CAPEM:   pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}),
		CertPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		KeyPEM:  pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}),
		pool:    x509.NewCertPool(),
	}
	s.pool.AddCert(ca)
	if s.cert, err = tls.X509KeyPair(s.CertPEM, s.KeyPEM); err != nil {
		return nil, err
	}
	return s, nil
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		panic(err) // crypto/rand does not fail on Linux
	}
	return n
}

// Files are where Write put the set.
type Files struct {
	CA       string // ca.pem
	Cert     string // cert.pem
	Key      string // key.pem, mode 0600
	Combined string // combined.pem: certificate then key, as hitch and Varnish's pem-file want
}

// Write writes the set into dir (which must exist), the key files readable
// by their owner alone.
func (s *Set) Write(dir string) (Files, error) {
	f := Files{CA: filepath.Join(dir, "ca.pem"), Cert: filepath.Join(dir, "cert.pem"),
		Key: filepath.Join(dir, "key.pem"), Combined: filepath.Join(dir, "combined.pem")}
	for _, w := range []struct {
		path string
		data []byte
		mode os.FileMode
	}{
		{f.CA, s.CAPEM, 0o644},
		{f.Cert, s.CertPEM, 0o644},
		{f.Key, s.KeyPEM, 0o600},
		{f.Combined, append(append([]byte{}, s.CertPEM...), s.KeyPEM...), 0o600},
	} {
		if err := os.WriteFile(w.path, w.data, w.mode); err != nil {
			return Files{}, fmt.Errorf("certs: %w", err)
		}
	}
	return f, nil
}

// ClientConfig trusts the set's authority and nothing else.
func (s *Set) ClientConfig() *tls.Config {
	return &tls.Config{RootCAs: s.pool, MinVersion: tls.VersionTLS12}
}

// ServerConfig serves the set's certificate (for the built-in cache).
func (s *Set) ServerConfig() *tls.Config {
	return &tls.Config{Certificates: []tls.Certificate{s.cert}, MinVersion: tls.VersionTLS12}
}

// Valid reports whether dir holds a set Write wrote whose server
// certificate the authority signed and the key matches, and until when
// the certificate is valid.
func Valid(dir string) (time.Time, bool) {
	read := func(name string) []byte {
		b, _ := os.ReadFile(filepath.Join(dir, name))
		return b
	}
	caPEM, certPEM, keyPEM, combined := read("ca.pem"), read("cert.pem"), read("key.pem"), read("combined.pem")
	if string(combined) != string(certPEM)+string(keyPEM) {
		return time.Time{}, false
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return time.Time{}, false
	}
	leaf, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		return time.Time{}, false
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return time.Time{}, false
	}
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: pool}); err != nil {
		return time.Time{}, false
	}
	return leaf.NotAfter, true
}
