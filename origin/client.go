package origin

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Client drives a Server's control API, typically from another process.
type Client struct {
	// BaseURL is the control API, e.g. "http://127.0.0.1:8082".
	BaseURL string
	// HTTP is the client to use; nil means http.DefaultClient.
	HTTP *http.Client
}

// readyEvery is how often Ready asks.
const readyEvery = 20 * time.Millisecond

// SetMode switches the origin's failure mode.
func (c *Client) SetMode(ctx context.Context, m Mode) error {
	var a modeAnswer
	return c.do(ctx, http.MethodPost, "/mode?set="+url.QueryEscape(m.String()), &a)
}

// Stats reads the origin's counters.
func (c *Client) Stats(ctx context.Context) (Stats, error) {
	var s Stats
	err := c.do(ctx, http.MethodGet, "/stats", &s)
	return s, err
}

// ResetStats zeroes the origin's counters.
func (c *Client) ResetStats(ctx context.Context) error {
	return c.do(ctx, http.MethodPost, "/stats/reset", nil)
}

// Ready asks GET /healthz until it answers 200 or ctx ends; give ctx a
// deadline.
func (c *Client) Ready(ctx context.Context) error {
	t := time.NewTicker(readyEvery)
	defer t.Stop()
	for {
		err := c.do(ctx, http.MethodGet, "/healthz", nil)
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("wait for origin control at %s: %w (last: %w)", c.BaseURL, context.Cause(ctx), err)
		case <-t.C:
		}
	}
}

func (c *Client) do(ctx context.Context, method, path string, out any) error {
	hc := c.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	req, err := http.NewRequestWithContext(ctx, method, strings.TrimRight(c.BaseURL, "/")+path, nil)
	if err != nil {
		return fmt.Errorf("origin control: %w", err)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return fmt.Errorf("origin control: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return fmt.Errorf("origin control: %s %s: %w", method, path, err)
	}
	if resp.StatusCode != http.StatusOK {
		msg := strings.TrimSpace(string(body))
		var a modeAnswer
		if json.Unmarshal(body, &a) == nil && a.Error != "" {
			msg = a.Error
		}
		return fmt.Errorf("origin control: %s %s: %s: %s", method, path, resp.Status, msg)
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(body, out); err != nil {
		return fmt.Errorf("origin control: %s %s: %w", method, path, err)
	}
	return nil
}
