package engines

import (
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/hlsbench/hlsbench/engines/certs"
	"github.com/hlsbench/hlsbench/engines/launch"
	"github.com/hlsbench/hlsbench/origin"
)

// Topology proxyv2: hitch or haproxy terminates TLS in front of each
// engine's PROXY listener, and the engine sees the client's own address and
// port, carried by PROXY v2 (on loopback the addresses match: the source
// ports tell). Stop ends the terminator too.
func TestProxyV2Topology(t *testing.T) {
	set, err := certs.New([]string{"127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	type tc struct {
		name string
		e    Engine
		bin  string
		lch  launch.Launcher
	}
	cases := []tc{{"builtin", Builtin{}, "", launch.Inproc{}}, {"nginx", NGINX{}, needNGINX(t), nil}}
	for _, b := range varnishBuilds(t) {
		cases = append(cases, tc{b.name, b.e, b.bin, nil})
	}
	for _, term := range []Terminator{Hitch{}, HAProxy{}} {
		if _, err := findTerminator(term, ""); err != nil {
			if ciRun() {
				t.Fatalf("CI=true and %v", err)
			}
			t.Logf("%v: not tested", err)
			continue
		}
		for _, c := range cases {
			t.Run(term.Name()+"/"+c.name, func(t *testing.T) {
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				p := DefaultPolicy()
				o, originURL := varnishTestOrigin(t, p, origin.Config{FirstByteDelay: origin.NoDelay, TransferRate: origin.Unlimited})
				inst, err := StartLocal(ctx, c.e, LocalSpec{Policy: p, OriginURL: originURL, Binary: c.bin, Launcher: c.lch,
					Topology: TopologyProxyV2, TLS: set, Terminator: term})
				if err != nil {
					t.Fatal(err)
				}
				defer inst.Stop(context.Background())
				info := inst.Info()
				if info.Topology != TopologyProxyV2 || info.Terminator != term.Name() || info.TerminatorVersion == "" {
					t.Errorf("info %+v", info)
				}
				var local, seen string
				tr := &http.Transport{TLSClientConfig: set.ClientConfig(), DisableKeepAlives: true,
					DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
						conn, err := (&net.Dialer{}).DialContext(ctx, network, addr)
						if err == nil {
							local = conn.LocalAddr().String()
						}
						return conn, err
					}}
				cl := &http.Client{Timeout: 10 * time.Second, Transport: tr}
				for i, want := range []string{"MISS", "HIT"} {
					resp, err := cl.Get(inst.URL() + origin.ManifestPath)
					if err != nil {
						t.Fatal(err)
					}
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if resp.StatusCode != 200 || resp.Header.Get("X-Cache") != want || resp.TLS == nil {
						t.Errorf("request %d: %d X-Cache %q, want 200 %s over TLS", i, resp.StatusCode, resp.Header.Get("X-Cache"), want)
					}
					seen = resp.Header.Get(ClientHeader)
					if seen != local {
						t.Errorf("request %d: the engine saw client %q, the client was %s", i, seen, local)
					}
				}
				if got := o.Stats().Fetches; got != 1 {
					t.Errorf("origin fetches %d, want 1", got)
				}
				var pg int
				switch li := inst.(type) {
				case *processEngine:
					pg = li.TermPGID()
				case *localInstance:
					pg = li.TermPGID()
				}
				if pg <= 0 {
					t.Fatalf("terminator group %d", pg)
				}
				if err := inst.Stop(context.Background()); err != nil {
					t.Fatal(err)
				}
				if err := syscall.Kill(-pg, 0); err == nil {
					t.Errorf("terminator group %d still runs after Stop", pg)
				}
				t.Logf("%s %s in front of %s %s: the engine saw client %s (%s), the client's socket was %s", term.Name(), info.TerminatorVersion,
					c.name, info.Version, seen, ClientHeader, local)
			})
		}
	}
}

func ciRun() bool { return os.Getenv("CI") == "true" }
