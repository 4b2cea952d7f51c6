package builtin

import (
	"context"
	"io"
	"net/http"
	"time"
)

func (c *Cache) probeLoop() {
	defer c.wg.Done()
	t := time.NewTicker(c.p.ProbeInterval)
	defer t.Stop()
	for {
		c.healthy.Store(c.probe())
		select {
		case <-c.ctx.Done():
			return
		case <-t.C:
		}
	}
}

// probe reports whether the origin answers its health path with a 2xx within
// the probe timeout.
func (c *Cache) probe() bool {
	ctx, cancel := context.WithTimeout(c.ctx, c.p.ProbeTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.origin+c.p.ProbePath, nil)
	if err != nil {
		return false
	}
	req.Header["User-Agent"] = []string{userAgent + " probe"}
	resp, err := c.probeTr.RoundTrip(req)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	_, err = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	return err == nil && resp.StatusCode >= 200 && resp.StatusCode < 300
}
