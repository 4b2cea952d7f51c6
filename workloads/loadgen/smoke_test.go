package loadgen

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

func TestSmoke(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Cache", "HIT")
		w.Write(make([]byte, 2048))
	}))
	defer srv.Close()
	g, err := New(context.Background(), Options{URL: srv.URL + "/x", Connections: 10})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	r, err := g.Run(context.Background(), Pass{Rate: 2000, Duration: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	var sb = new(stringsBuilder)
	r.WriteText(sb)
	fmt.Println(sb.String())
	r, err = g.Run(context.Background(), Pass{Duration: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	sb = new(stringsBuilder)
	r.WriteText(sb)
	fmt.Println(sb.String())
}

type stringsBuilder struct{ b []byte }

func (s *stringsBuilder) Write(p []byte) (int, error) { s.b = append(s.b, p...); return len(p), nil }
func (s *stringsBuilder) String() string              { return string(s.b) }
