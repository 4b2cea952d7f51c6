package engines

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hlsbench/hlsbench/engines/certs"
	"github.com/hlsbench/hlsbench/engines/launch"
	"github.com/hlsbench/hlsbench/origin"
)

// Topology tls: each engine with a TLS listener of its own serves the
// run's certificate on it (a client trusting only the run's authority
// completes the handshake, TLS 1.2 or 1.3) from the same cache as its
// plaintext listener; Varnish 7.1 and Vinyl Cache are not applicable, with
// their reason.
func TestTLSTopology(t *testing.T) {
	set, err := certs.New([]string{"127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	type tc struct {
		name   string
		e      Engine
		bin    string
		lch    launch.Launcher
		hasTLS bool
	}
	cases := []tc{{"builtin", Builtin{}, "", launch.Inproc{}, true}}
	cases = append(cases, tc{"nginx", NGINX{}, needNGINX(t), nil, true})
	for _, b := range varnishBuilds(t) {
		// Varnish 9 has native TLS; Debian's 7.1 and Vinyl Cache do not.
		native := b.e.Name() == "varnish" && !strings.HasPrefix(b.name, "varnish@7.") && b.name != "varnish"
		cases = append(cases, tc{b.name, b.e, b.bin, nil, native})
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			p := DefaultPolicy()
			o, originURL := varnishTestOrigin(t, p, origin.Config{FirstByteDelay: origin.NoDelay, TransferRate: origin.Unlimited})
			inst, err := StartLocal(ctx, c.e, LocalSpec{Policy: p, OriginURL: originURL, Binary: c.bin, Launcher: c.lch,
				Topology: TopologyTLS, TLS: set})
			var na *NotApplicableError
			if !c.hasTLS {
				if !errors.As(err, &na) || !strings.Contains(na.Reason, "no TLS listener") {
					t.Fatalf("StartLocal: %v; want not applicable, with the reason", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer inst.Stop(context.Background())
			if !strings.HasPrefix(inst.URL(), "https://127.0.0.1:") || inst.Info().Topology != TopologyTLS {
				t.Fatalf("URL %s, info %+v", inst.URL(), inst.Info())
			}
			cl := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: set.ClientConfig()}}
			var states []string
			for i, want := range []string{"MISS", "HIT"} {
				resp, err := cl.Get(inst.URL() + origin.ManifestPath)
				if err != nil {
					t.Fatal(err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 || resp.Header.Get("X-Cache") != want || resp.TLS == nil || resp.TLS.Version < tls.VersionTLS12 {
					t.Errorf("request %d: %d X-Cache %q TLS %v, want 200 %s over TLS 1.2+", i, resp.StatusCode, resp.Header.Get("X-Cache"), resp.TLS, want)
				}
				if resp.TLS != nil {
					states = append(states, tls.VersionName(resp.TLS.Version)+" "+tls.CipherSuiteName(resp.TLS.CipherSuite))
				}
			}
			if got := o.Stats().Fetches; got != 1 {
				t.Errorf("origin fetches %d, want 1: the TLS listener serves the cache", got)
			}
			untrusted := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{}}}
			if resp, err := untrusted.Get(inst.URL() + origin.ManifestPath); err == nil {
				resp.Body.Close()
				t.Error("a client that does not trust the run's authority got an answer")
			}
			t.Logf("%s: %v", c.name, states)
		})
	}
}
