package loadgen

import (
	"crypto/tls"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/hlsbench/hlsbench/engines/certs"
)

// A pass says what TLS its connections negotiated and how many handshakes
// it paid for: the pool's in the first pass, none in a keep-alive pass after
// it, which still names the TLS of the connections it ran on.
func TestTLSInfo(t *testing.T) {
	set, err := certs.New([]string{"127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	body := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("hello")) })
	for _, tc := range []struct {
		name    string
		max     uint16
		version string
		cipher  string // prefix
	}{
		{"1.3", 0, "TLS 1.3", "TLS_"},
		{"1.2", tls.VersionTLS12, "TLS 1.2", "TLS_ECDHE_ECDSA_"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewUnstartedServer(body)
			srv.TLS = set.ServerConfig()
			srv.TLS.MaxVersion = tc.max
			srv.StartTLS()
			defer srv.Close()

			g := newGen(t, Options{URL: srv.URL, Connections: 2, TLSConfig: set.ClientConfig()})
			r := run(t, g, Pass{Rate: 50, Duration: 300 * time.Millisecond})
			if r.OK != 15 || r.Errors != 0 {
				t.Fatalf("ok %d errors %v", r.OK, r.ErrorsByKind)
			}
			ti := r.TLS
			if ti == nil {
				t.Fatal("no TLS info for an https pass")
			}
			t.Logf("%s", ti)
			if ti.Version != tc.version || !strings.HasPrefix(ti.Cipher, tc.cipher) || ti.Curve == "" || ti.Mixed {
				t.Errorf("negotiated %+v, want %s, a %s… cipher, a group, not mixed", *ti, tc.version, tc.cipher)
			}
			if ti.Handshakes != 2 || ti.Resumed > ti.Handshakes {
				t.Errorf("%d handshakes (%d resumed), want the pool's 2 in the first pass", ti.Handshakes, ti.Resumed)
			}
			var text strings.Builder
			if err := r.WriteText(&text); err != nil {
				t.Fatal(err)
			}
			if want := "tls: " + ti.String() + "\n"; !strings.Contains(text.String(), want) {
				t.Errorf("text output lacks %q:\n%s", want, text.String())
			}
			js, err := json.Marshal(r.Summary())
			if err != nil {
				t.Fatal(err)
			}
			if want := `"tls":{"version":"` + tc.version + `"`; !strings.Contains(string(js), want) {
				t.Errorf("JSON lacks %s: %s", want, js)
			}

			r2 := run(t, g, Pass{Requests: 4, Duration: time.Second})
			if r2.TLS == nil || r2.TLS.Handshakes != 0 || r2.TLS.Version != ti.Version || r2.TLS.Cipher != ti.Cipher || r2.TLS.Curve != ti.Curve {
				t.Errorf("keep-alive pass: %+v, want no handshake and the pool's %+v", r2.TLS, *ti)
			}
			if m := Merge([]*Result{r, r2}); m.TLS == nil || *m.TLS != *ti {
				t.Errorf("merged: %+v, want the first pass's %+v", m.TLS, *ti)
			}
		})
	}
	t.Run("plain", func(t *testing.T) {
		srv := httptest.NewServer(body)
		defer srv.Close()
		g := newGen(t, Options{URL: srv.URL, Connections: 2})
		r := run(t, g, Pass{Rate: 50, Duration: 300 * time.Millisecond})
		if r.OK != 15 || r.TLS != nil {
			t.Fatalf("ok %d, TLS %+v: want 15 and none", r.OK, r.TLS)
		}
		var text strings.Builder
		r.WriteText(&text)
		js, _ := json.Marshal(r.Summary())
		if strings.Contains(text.String(), "tls:") || strings.Contains(string(js), `"tls"`) {
			t.Errorf("plain http reported TLS:\n%s\n%s", text.String(), js)
		}
	})
}

// Connections that negotiated differently say so, in a shard's counts, in
// the generator's merge of shards and in Merge of passes.
func TestTLSInfoMixed(t *testing.T) {
	p13 := tlsParams{version: tls.VersionTLS13, cipher: tls.TLS_AES_128_GCM_SHA256, curve: tls.X25519MLKEM768}
	p12 := tlsParams{version: tls.VersionTLS12, cipher: tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256, curve: tls.X25519}
	var a, b tlsCounts
	a.add(p13, false)
	a.add(p13, true)
	if a.mixed {
		t.Error("equal handshakes counted as mixed")
	}
	b.add(p12, false)
	var all tlsCounts
	all.merge(&a)
	all.merge(&b)
	got := all.info()
	want := TLSInfo{Version: "TLS 1.3", Cipher: "TLS_AES_128_GCM_SHA256", Curve: "X25519MLKEM768", Handshakes: 3, Resumed: 1, Mixed: true}
	if *got != want {
		t.Errorf("merged shards: %+v, want %+v", *got, want)
	}
	if s := got.String(); s != "TLS 1.3 TLS_AES_128_GCM_SHA256 X25519MLKEM768, 3 handshakes (1 resumed); mixed: the connections did not all negotiate these" {
		t.Errorf("text %q", s)
	}

	one := &TLSInfo{Version: "TLS 1.3", Cipher: "TLS_AES_128_GCM_SHA256", Curve: "X25519", Handshakes: 2}
	other := &TLSInfo{Version: "TLS 1.3", Cipher: "TLS_AES_256_GCM_SHA384", Curve: "X25519", Handshakes: 1, Resumed: 1}
	m := mergeTLS([]*Result{{TLS: one}, {TLS: one}})
	if m.Mixed || m.Handshakes != 4 {
		t.Errorf("equal passes merged: %+v", *m)
	}
	m = mergeTLS([]*Result{{TLS: one}, {TLS: other}})
	if !m.Mixed || m.Cipher != one.Cipher || m.Handshakes != 3 || m.Resumed != 1 {
		t.Errorf("different passes merged: %+v", *m)
	}
	if one.Handshakes != 2 {
		t.Error("mergeTLS changed a pass's TLS")
	}
	if mergeTLS([]*Result{{}, {}}) != nil {
		t.Error("plain passes merged into TLS")
	}
}
