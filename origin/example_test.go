package origin_test

import (
	"context"
	"fmt"
	"io"
	"log"
	"net/http"

	"github.com/hlsbench/hlsbench/origin"
)

func Example() {
	o, err := origin.New(origin.Config{FirstByteDelay: origin.NoDelay, TransferRate: origin.Unlimited})
	if err != nil {
		log.Fatal(err)
	}
	s, err := origin.Start(o, "127.0.0.1:0", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()

	resp, err := http.Get("http://" + s.DataAddr() + origin.ManifestPath + "?run=1")
	if err != nil {
		log.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	fmt.Println(resp.Status, len(body), "bytes, version", resp.Header.Get(origin.VersionHeader))

	c := origin.Client{BaseURL: "http://" + s.ControlAddr()}
	st, err := c.Stats(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("origin fetches of", origin.ManifestPath+"?run=1:", st.Objects[origin.ManifestPath+"?run=1"].Fetches)
	// Output:
	// 200 OK 2048 bytes, version 1
	// origin fetches of /stream/index.m3u8?run=1: 1
}
