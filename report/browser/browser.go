// Package browser opens a generated page in headless Chromium and reports
// what a reader would see: which images loaded, what the console said, which
// links lead nowhere, and whether the page tried to reach the network. A
// results page is meant to be self-contained, so any of those is a problem.
package browser

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

const (
	DefaultWidth   = 1200
	DefaultTimeout = 60 * time.Second
	// defaultHeight is only the first viewport; screenshots take the whole page.
	defaultHeight = 800
)

// ErrNoChromium is returned when no Chromium binary is found.
var ErrNoChromium = errors.New("chromium not found on PATH (apt-get install chromium)")

// Options says how to open the page. The zero value is usable.
type Options struct {
	// Chromium is the browser binary; default: FindChromium.
	Chromium string
	// Screenshot, if set, is where a full-page PNG is written (atomically).
	Screenshot string
	// ScreenshotHeight, when above 0, keeps only the page's top that many
	// CSS pixels (a README picture, not a 13000-pixel strip).
	ScreenshotHeight int
	// Width is the viewport width in CSS pixels; default DefaultWidth.
	Width int
	// Timeout bounds the whole check, browser start to teardown; default DefaultTimeout.
	Timeout time.Duration
}

// Result is what the browser saw. Problems turns it into a verdict.
type Result struct {
	// Page is the absolute path of the page checked; relative links are
	// resolved against its directory.
	Page string
	// Images are the page's <img> elements, in document order.
	Images []Image
	// Console holds console errors and warnings, uncaught exceptions and the
	// browser's own error log entries (failed resource loads), in arrival order.
	Console []string
	// Requests are the URLs the page asked for that are not local
	// (file:, data:, about:, blob:). The browser blocks them: they are
	// recorded, never sent.
	Requests []string
	// Links are the href of every <a href>, as written.
	Links []string
	Title string
	// ScrollWidth is the page's width as laid out, in CSS pixels: wider
	// than Options.Width, the reader scrolls the whole page sideways.
	ScrollWidth int
}

// Image is one <img> element.
type Image struct {
	Src           string // as written in the page
	NaturalWidth  int
	NaturalHeight int
	Loaded        bool // complete and decoded with a non-zero width
}

// FindChromium returns the first of chromium, chromium-browser and
// google-chrome found on PATH, or ErrNoChromium.
func FindChromium() (string, error) {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
	}
	return "", ErrNoChromium
}

// Check opens a page from disk in headless Chromium and reports what a reader's browser saw.
func Check(ctx context.Context, page string, o Options) (_ *Result, err error) {
	if o.Width <= 0 {
		o.Width = DefaultWidth
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.Chromium == "" {
		p, err := FindChromium()
		if err != nil {
			return nil, err
		}
		o.Chromium = p
	}
	abs, err := filepath.Abs(page)
	if err != nil {
		return nil, fmt.Errorf("check %s: %w", page, err)
	}
	if _, err := os.Stat(abs); err != nil {
		return nil, fmt.Errorf("check page: %w", err)
	}

	// Chromium writes outside its profile too: a crash database under
	// ~/.config/chromium, caches under ~/.cache, dconf. A throw-away home
	// keeps the machine as it was. It is removed last, after the browser
	// has exited (the deferred cancels below run first).
	home, err := os.MkdirTemp("", "hlsbench-browser-")
	if err != nil {
		return nil, fmt.Errorf("check page: %w", err)
	}
	defer func() {
		if rmErr := removeAll(home); rmErr != nil {
			err = errors.Join(err, fmt.Errorf("remove browser home: %w", rmErr))
		}
	}()

	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	// chromedp makes the profile directory itself, and after the browser
	// exits it kills any child still using that directory and removes it: a
	// directory of our own would lose the leftover-killing.
	actx, acancel := chromedp.NewExecAllocator(ctx, allocatorOptions(o.Chromium, home)...)
	defer acancel() // waits for the browser process to exit
	var ev events
	bctx, bcancel := chromedp.NewContext(actx, chromedp.WithListener(ev.record))
	// Cancel rather than a graceful Browser.close: nothing in the throw-away
	// profile is worth saving, and a browser that hangs must not hang us.
	defer bcancel()

	r, err := visit(bctx, abs, o)
	if err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			err = fmt.Errorf("%w (timeout %s)", err, o.Timeout)
		}
		return nil, fmt.Errorf("check %s: %w", abs, err)
	}
	ev.mu.Lock()
	r.Console = ev.console
	r.Requests = ev.requests
	ev.mu.Unlock()
	return r, nil
}

// allocatorOptions start a headless browser that makes no connection of its
// own: no component updates, metrics, sync, safe browsing lists, field
// trials, DNS prefetch or proxy auto-detection. No host name resolves either,
// so anything not covered by a flag fails before it leaves the machine.
//
// Traced with strace, the only non-local socket call left is the network
// service's IPv6 reachability check: a UDP connect() to 2001:4860:4860::8888
// port 443 followed by getsockname. A UDP connect picks a route and sends no
// packet, and no flag in Chromium 156 turns it off.
func allocatorOptions(exe, home string) []chromedp.ExecAllocatorOption {
	opts := append([]chromedp.ExecAllocatorOption(nil), chromedp.DefaultExecAllocatorOptions[:]...)
	return append(opts,
		chromedp.ExecPath(exe),
		chromedp.Env("HOME="+home, "XDG_CONFIG_HOME="+filepath.Join(home, ".config"),
			"XDG_CACHE_HOME="+filepath.Join(home, ".cache"), "XDG_DATA_HOME="+filepath.Join(home, ".local", "share")),
		chromedp.Headless,
		chromedp.DisableGPU,
		// Chromium refuses to run as root with its sandbox, and CI runs as root.
		chromedp.NoSandbox,
		chromedp.Flag("hide-scrollbars", true),
		chromedp.Flag("mute-audio", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-default-apps", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("disable-extensions", true),
		chromedp.Flag("metrics-recording-only", true),
		chromedp.Flag("disable-domain-reliability", true),
		chromedp.Flag("disable-breakpad", true),
		chromedp.Flag("disable-crash-reporter", true),
		chromedp.Flag("disable-client-side-phishing-detection", true),
		chromedp.Flag("safebrowsing-disable-auto-update", true),
		chromedp.Flag("disable-field-trial-config", true),
		chromedp.Flag("no-pings", true),
		chromedp.Flag("dns-prefetch-disable", true),
		chromedp.Flag("no-proxy-server", true),
		chromedp.Flag("disable-features", strings.Join([]string{
			"Translate", "BlinkGenPropertyTrees", // chromedp's defaults, which this replaces
			"OptimizationHints", "MediaRouter", "DialMediaRouteProvider",
			"AutofillServerCommunication", "CertificateTransparencyComponentUpdater",
			"InterestFeedContentSuggestions", "NetworkTimeServiceQuerying",
			"PrivacySandboxSettings4", "SafeBrowsing",
		}, ",")),
		chromedp.Flag("host-resolver-rules", "MAP * ~NOTFOUND"),
	)
}

// visit loads the page and reads it back.
func visit(ctx context.Context, abs string, o Options) (*Result, error) {
	// The page's own requests are blocked in the browser as well: they are
	// reported (requestWillBeSent still fires) but never sent.
	block := []*network.BlockPattern{}
	for _, scheme := range []string{"http", "https", "ws", "wss", "ftp"} {
		block = append(block, &network.BlockPattern{URLPattern: scheme + "://*:*/*", Block: true})
	}
	if _, err := chromedp.Call(ctx, network.SetBlockedURLs, network.SetBlockedURLsParams{URLPatterns: block}); err != nil {
		return nil, fmt.Errorf("block network: %w", err)
	}
	if _, err := chromedp.Call(ctx, emulation.SetDeviceMetricsOverride, emulation.SetDeviceMetricsOverrideParams{
		Width: int64(o.Width), Height: defaultHeight, DeviceScaleFactor: 1,
	}); err != nil {
		return nil, fmt.Errorf("set viewport: %w", err)
	}
	u := (&url.URL{Scheme: "file", Path: filepath.ToSlash(abs)}).String()
	if err := chromedp.Do(ctx, chromedp.Navigate(u)); err != nil {
		return nil, fmt.Errorf("open %s: %w", u, err)
	}
	if err := waitSettled(ctx); err != nil {
		return nil, err
	}
	v, err := chromedp.Run(ctx, chromedp.Evaluate[view](readPage))
	if err != nil {
		return nil, fmt.Errorf("read page: %w", err)
	}
	r := &Result{Page: abs, Title: v.Title, Links: v.Links, ScrollWidth: v.ScrollWidth}
	for _, img := range v.Images {
		r.Images = append(r.Images, Image{
			Src:           img.Src,
			NaturalWidth:  img.Width,
			NaturalHeight: img.Height,
			Loaded:        img.Complete && img.Width > 0,
		})
	}
	if o.Screenshot != "" {
		var png []byte
		var err error
		if o.ScreenshotHeight > 0 {
			beyond := true
			var shot page.CaptureScreenshotResult
			shot, err = chromedp.Call(ctx, page.CaptureScreenshot, page.CaptureScreenshotParams{
				Format: page.CaptureScreenshotFormatPng, CaptureBeyondViewport: &beyond,
				Clip: &page.Viewport{Width: float64(o.Width), Height: float64(o.ScreenshotHeight), Scale: 1},
			})
			if err == nil {
				png = shot.Data
			}
		} else {
			png, err = chromedp.Run(ctx, chromedp.FullScreenshot(100))
		}
		if err != nil {
			return nil, fmt.Errorf("screenshot: %w", err)
		}
		if err := writeFile(o.Screenshot, png); err != nil {
			return nil, fmt.Errorf("screenshot: %w", err)
		}
	}
	return r, nil
}

// view is what readPage returns.
type view struct {
	Title       string   `json:"title"`
	Links       []string `json:"links"`
	ScrollWidth int      `json:"scrollWidth"`
	Images      []struct {
		Src      string `json:"src"`
		Complete bool   `json:"complete"`
		Width    int    `json:"width"`
		Height   int    `json:"height"`
	} `json:"images"`
}

// readPage reads attributes, not properties: img.src and a.href are resolved
// to absolute URLs, and the check is about what the page's author wrote.
const readPage = `({
	title: document.title,
	scrollWidth: document.documentElement.scrollWidth,
	links: Array.from(document.querySelectorAll("a[href]"), a => a.getAttribute("href")),
	images: Array.from(document.images, i => ({
		src: i.getAttribute("src") ?? "",
		complete: i.complete,
		width: i.naturalWidth,
		height: i.naturalHeight,
	})),
})`

// settled is true once the document and every image have finished loading,
// successfully or not.
const settled = `document.readyState === "complete" && Array.from(document.images).every(i => i.complete)`

// waitSettled polls until settled; ctx bounds it.
func waitSettled(ctx context.Context) error {
	for {
		done, err := chromedp.Run(ctx, chromedp.Evaluate[bool](settled))
		if err != nil {
			return fmt.Errorf("wait for images: %w", err)
		}
		if done {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("wait for images: %w", ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// removeAll retries for a moment: Chromium's crash handler is not its child
// and can still be writing when the browser has gone.
func removeAll(dir string) error {
	var err error
	for range 20 {
		if err = os.RemoveAll(dir); err == nil {
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return err
}

// writeFile writes through a temporary file in the same directory, so a
// reader never sees half a PNG.
func writeFile(path string, data []byte) (err error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			os.Remove(f.Name())
		}
	}()
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Chmod(0o644); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}

// events collects what the browser reports while the page loads. record runs
// on chromedp's reading goroutine, so it only appends under the lock.
type events struct {
	mu       sync.Mutex
	console  []string
	requests []string
}

func (e *events) record(ev any) {
	var msg, req string
	switch ev := ev.(type) {
	case *network.EventRequestWillBeSent:
		if ev.Request != nil && !local(ev.Request.URL) {
			req = ev.Request.URL
		}
	case *runtime.EventConsoleAPICalled:
		switch ev.Type {
		case runtime.ConsoleAPICalledTypeError, runtime.ConsoleAPICalledTypeWarning, runtime.ConsoleAPICalledTypeAssert:
			args := make([]string, 0, len(ev.Args))
			for _, a := range ev.Args {
				args = append(args, argString(a))
			}
			msg = fmt.Sprintf("console.%s: %s", ev.Type, strings.Join(args, " "))
		}
	case *runtime.EventExceptionThrown:
		msg = "uncaught exception: " + exceptionString(ev.ExceptionDetails)
	case *log.EventEntryAdded:
		if ev.Entry != nil && ev.Entry.Level == log.EntryLevelError {
			msg = fmt.Sprintf("%s error: %s", ev.Entry.Source, ev.Entry.Text)
			if ev.Entry.URL != "" {
				msg += " (" + ev.Entry.URL + ")"
			}
		}
	}
	if msg == "" && req == "" {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if msg != "" {
		e.console = append(e.console, msg)
	}
	if req != "" {
		e.requests = append(e.requests, req)
	}
}

// local reports whether a URL is served by the browser itself.
func local(u string) bool {
	for _, p := range []string{"file:", "data:", "about:", "blob:"} {
		if strings.HasPrefix(u, p) {
			return true
		}
	}
	return false
}

func argString(a *runtime.RemoteObject) string {
	if a == nil {
		return ""
	}
	if len(a.Value) > 0 {
		var s string
		if json.Unmarshal(a.Value, &s) == nil {
			return s
		}
		return string(a.Value)
	}
	if a.UnserializableValue != "" {
		return string(a.UnserializableValue)
	}
	if a.Description != "" {
		return a.Description
	}
	return string(a.Type)
}

func exceptionString(d *runtime.ExceptionDetails) string {
	if d == nil {
		return "(no details)"
	}
	s := d.Text
	if d.Exception != nil && d.Exception.Description != "" {
		// The description carries the message and the stack; the first line
		// is enough to recognise it.
		desc, _, _ := strings.Cut(d.Exception.Description, "\n")
		s += " " + desc
	}
	if d.URL != "" {
		s += fmt.Sprintf(" (%s:%d)", d.URL, d.LineNumber+1)
	}
	return s
}

// Problems lists, for a person, what is wrong with the page: images that did
// not load, console errors, network requests, links that are not relative,
// and relative links to files that do not exist. A self-contained page has none.
func (r *Result) Problems() []string {
	var p []string
	for _, img := range r.Images {
		if !img.Loaded {
			p = append(p, fmt.Sprintf("image not loaded: %q", img.Src))
		}
	}
	for _, c := range r.Console {
		p = append(p, "console: "+c)
	}
	for _, u := range r.Requests {
		p = append(p, "network request: "+u)
	}
	for _, l := range r.Links {
		if msg := r.linkProblem(l); msg != "" {
			p = append(p, msg)
		}
	}
	return p
}

// linkProblem says what is wrong with one href, or "".
func (r *Result) linkProblem(href string) string {
	if href == "" || strings.HasPrefix(href, "#") {
		return ""
	}
	u, err := url.Parse(href)
	if err != nil {
		return fmt.Sprintf("link %q does not parse: %v", href, err)
	}
	switch {
	case u.Scheme != "" || u.Host != "" || strings.HasPrefix(href, "//"):
		return fmt.Sprintf("link is not relative (a self-contained page links with relative paths): %q", href)
	case strings.HasPrefix(u.Path, "/"):
		return fmt.Sprintf("link is an absolute path (a self-contained page links with relative paths): %q", href)
	case u.Path == "":
		return "" // "?query" alone: the page itself
	}
	if r.Page == "" {
		return "" // nothing to resolve against
	}
	target := filepath.Join(filepath.Dir(r.Page), filepath.FromSlash(u.Path))
	if _, err := os.Stat(target); err != nil {
		return fmt.Sprintf("link to a missing file: %q (%s)", href, target)
	}
	return ""
}
