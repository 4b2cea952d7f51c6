package builtin

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/netip"
	"testing"
	"time"
)

// On the PROXY listener a request sees the client the header gave, and
// says it; bad headers (plain HTTP, PROXY v1 text) get the connection
// closed and counted in the cache's stats, beside its own.
func TestServeProxyListener(t *testing.T) {
	orig := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "max-age=60")
		io.WriteString(w, "hello")
	}))
	c, err := New(Config{Origin: orig.URL, Policy: DefaultPolicy()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	srv, err := Serve(c, ServeOptions{Listen: "127.0.0.1:0", ProxyListen: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown(context.Background())

	conn, err := net.Dial("tcp", srv.ProxyAddr())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	claimed := netip.MustParseAddrPort("127.0.0.1:4242")
	hdr, err := AppendProxyHeader(nil, ProxyHeader{Source: claimed, Destination: netip.MustParseAddrPort(srv.ProxyAddr())})
	if err != nil {
		t.Fatal(err)
	}
	conn.Write(append(hdr, "GET /a HTTP/1.1\r\nHost: x\r\n\r\n"...))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get(ClientHeader) != claimed.String() {
		t.Errorf("answer %d, %s %q; want 200 and the claimed client %s", resp.StatusCode, ClientHeader, resp.Header.Get(ClientHeader), claimed)
	}

	for _, bad := range []string{"GET /a HTTP/1.1\r\nHost: x\r\n\r\n", "PROXY TCP4 127.0.0.1 127.0.0.1 4242 80\r\n"} {
		conn, err := net.Dial("tcp", srv.ProxyAddr())
		if err != nil {
			t.Fatal(err)
		}
		conn.Write([]byte(bad))
		conn.SetReadDeadline(time.Now().Add(5 * time.Second))
		if n, err := conn.Read(make([]byte, 1)); err == nil || n != 0 {
			t.Errorf("%q: read %d bytes, %v; want the connection closed", bad, n, err)
		}
		conn.Close()
	}
	st, err := http.Get("http://" + srv.Addr() + StatsPath)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Body.Close()
	m := map[string]int64{}
	if err := json.NewDecoder(st.Body).Decode(&m); err != nil {
		t.Fatal(err)
	}
	if m["proxy_accepted"] != 1 || m["proxy_signature"] != 1 || m["proxy_v1"] != 1 || m["proxy_rejected"] != 2 || m["misses"] != 1 {
		t.Errorf("stats %v; want 1 accepted, 1 signature, 1 v1, 2 rejected, the cache's 1 miss", m)
	}
}
