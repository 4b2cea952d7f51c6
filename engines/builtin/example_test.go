package builtin_test

import (
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"

	"github.com/hlsbench/hlsbench/engines/builtin"
)

func Example() {
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "max-age=60")
		io.WriteString(w, "#EXTM3U\n")
	}))
	defer origin.Close()

	policy := builtin.DefaultPolicy()
	policy.ProbePath = "" // this origin has no health path
	cache, err := builtin.New(builtin.Config{Origin: origin.URL, Policy: policy})
	if err != nil {
		log.Fatal(err)
	}
	defer cache.Close()
	front := httptest.NewServer(cache)
	defer front.Close()

	for range 2 {
		resp, err := http.Get(front.URL + "/live/media.m3u8")
		if err != nil {
			log.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		fmt.Printf("%s %q\n", resp.Header.Get("X-Cache"), body)
	}
	s := cache.Stats()
	fmt.Println("hits", s.Hits, "misses", s.Misses, "origin fetches", s.OriginFetches)
	// Output:
	// MISS "#EXTM3U\n"
	// HIT "#EXTM3U\n"
	// hits 1 misses 1 origin fetches 1
}
