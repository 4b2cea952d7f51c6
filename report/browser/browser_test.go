package browser

import (
	"bytes"
	"context"
	"image"
	"image/color"
	"image/png"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// needChromium skips without a browser, except under CI, where a missing
// browser is a broken setup and must fail.
func needChromium(t *testing.T) {
	t.Helper()
	if _, err := FindChromium(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true: %v", err)
		}
		t.Skip("chromium not installed (apt-get install chromium)")
	}
}

// writeFiles writes name → content under dir.
func writeFiles(t *testing.T, dir string, files map[string][]byte) {
	t.Helper()
	for name, data := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func testPNG(t *testing.T, w, h int) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			img.Set(x, y, color.RGBA{R: uint8(x), G: uint8(y), B: 160, A: 255})
		}
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

const testSVG = `<svg xmlns="http://www.w3.org/2000/svg" width="120" height="40" viewBox="0 0 120 40">
<rect width="120" height="40" fill="#eee"/><path d="M0 35 L40 10 L80 20 L120 5" stroke="#36c" fill="none"/>
</svg>`

const goodPage = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>good page</title>
<style>body { font: 16px sans-serif; margin: 2em; } img { display: block; margin: 1em 0; }</style>
</head><body>
<h1 id="section">Results</h1>
<img src="charts/a.png" alt="a chart">
<img src="charts/a.svg" alt="a vector chart">
<p><a href="runs/x.json">the run</a> · <a href="#section">top</a></p>
</body></html>
`

func TestCheckGoodPage(t *testing.T) {
	needChromium(t)
	dir := t.TempDir()
	writeFiles(t, dir, map[string][]byte{
		"index.html":   []byte(goodPage),
		"charts/a.png": testPNG(t, 200, 100),
		"charts/a.svg": []byte(testSVG),
		"runs/x.json":  []byte(`{"schema":1}`),
	})
	shot := filepath.Join(dir, "shot", "page.png")

	start := time.Now()
	r, err := Check(t.Context(), filepath.Join(dir, "index.html"), Options{Screenshot: shot, Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("checked in %v", time.Since(start).Round(time.Millisecond))

	if p := r.Problems(); len(p) > 0 {
		t.Errorf("problems on a good page:\n%s", strings.Join(p, "\n"))
	}
	if r.Title != "good page" {
		t.Errorf("Title = %q, want %q", r.Title, "good page")
	}
	want := map[string][2]int{"charts/a.png": {200, 100}, "charts/a.svg": {120, 40}}
	if len(r.Images) != len(want) {
		t.Fatalf("Images = %+v, want %d", r.Images, len(want))
	}
	for _, img := range r.Images {
		size, ok := want[img.Src]
		if !ok || !img.Loaded || img.NaturalWidth != size[0] || img.NaturalHeight != size[1] {
			t.Errorf("image %+v, want loaded with natural size %v", img, size)
		}
	}
	if got := strings.Join(r.Links, " "); got != "runs/x.json #section" {
		t.Errorf("Links = %q", got)
	}

	f, err := os.Open(shot)
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	defer f.Close()
	cfg, err := png.DecodeConfig(f)
	if err != nil {
		t.Fatalf("screenshot is not a PNG: %v", err)
	}
	if cfg.Width < 1000 {
		t.Errorf("screenshot is %dx%d, want at least 1000 wide", cfg.Width, cfg.Height)
	}
	if tmp, _ := filepath.Glob(filepath.Join(dir, "shot", ".*")); len(tmp) > 0 {
		t.Errorf("temporary files left beside the screenshot: %v", tmp)
	}
}

// The only address this test names is port 9 (discard) on loopback, and the
// browser blocks the request before it is sent.
const badPage = `<!doctype html>
<html><head><title>bad page</title></head><body>
<img src="charts/missing.png">
<img src="http://127.0.0.1:9/x.png">
<a href="runs/missing.json">gone</a>
<a href="http://127.0.0.1:9/">absolute</a>
<a href="/etc/hostname">absolute path</a>
<a href="#ok">fine</a>
<script>console.error("boom")</script>
<script>throw new Error("kaboom")</script>
</body></html>
`

func TestCheckBadPage(t *testing.T) {
	needChromium(t)
	dir := t.TempDir()
	writeFiles(t, dir, map[string][]byte{"index.html": []byte(badPage)})

	start := time.Now()
	r, err := Check(t.Context(), filepath.Join(dir, "index.html"), Options{Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("checked in %v", time.Since(start).Round(time.Millisecond))
	problems := r.Problems()
	t.Logf("problems:\n%s", strings.Join(problems, "\n"))

	all := strings.Join(problems, "\n")
	for _, want := range []string{
		`image not loaded: "charts/missing.png"`,
		`image not loaded: "http://127.0.0.1:9/x.png"`,
		"console: console.error: boom",
		"uncaught exception: ",
		"kaboom",
		"network request: http://127.0.0.1:9/x.png",
		`link to a missing file: "runs/missing.json"`,
		`link is not relative (a self-contained page links with relative paths): "http://127.0.0.1:9/"`,
		`link is an absolute path (a self-contained page links with relative paths): "/etc/hostname"`,
	} {
		if !strings.Contains(all, want) {
			t.Errorf("problems do not mention %q", want)
		}
	}
	if strings.Contains(all, `"#ok"`) {
		t.Errorf("a #fragment link is reported")
	}
}

func TestCheckTimeout(t *testing.T) {
	needChromium(t)
	dir := t.TempDir()
	// An image that never completes: the check must give up at its timeout.
	writeFiles(t, dir, map[string][]byte{"index.html": []byte(`<!doctype html><title>slow</title>
<script>window.addEventListener("load", () => { const i = new Image(); i.src = "data:image/png;base64,"; document.body.append(i); Object.defineProperty(i, "complete", {get: () => false}); })</script>`)})
	start := time.Now()
	_, err := Check(t.Context(), filepath.Join(dir, "index.html"), Options{Timeout: 3 * time.Second})
	if err == nil {
		t.Fatal("Check returned no error for a page that never settles")
	}
	if d := time.Since(start); d > 15*time.Second {
		t.Errorf("Check took %v with a 3s timeout", d)
	}
	if !strings.Contains(err.Error(), "timeout 3s") {
		t.Errorf("error does not name the timeout: %v", err)
	}
}

func TestProblemsLinks(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string][]byte{"index.html": nil, "runs/a b.json": nil})
	r := &Result{Page: filepath.Join(dir, "index.html"), Links: []string{
		"", "#x", "runs/a%20b.json", "runs/a%20b.json#frag", "./index.html?x=1",
		"https://example.invalid/", "//cdn.invalid/x.js", "/abs", "mailto:x@example.invalid", "runs/nope.json",
	}}
	got := r.Problems()
	want := []string{
		`link is not relative (a self-contained page links with relative paths): "https://example.invalid/"`,
		`link is not relative (a self-contained page links with relative paths): "//cdn.invalid/x.js"`,
		`link is an absolute path (a self-contained page links with relative paths): "/abs"`,
		`link is not relative (a self-contained page links with relative paths): "mailto:x@example.invalid"`,
		`link to a missing file: "runs/nope.json" (` + filepath.Join(dir, "runs", "nope.json") + `)`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("Problems() =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestPage checks a page generated elsewhere; package report's own test
// generates one from fixtures and calls Check directly.
func TestPage(t *testing.T) {
	page := os.Getenv("HLSBENCH_PAGE")
	if page == "" {
		t.Skip("HLSBENCH_PAGE not set: the generated page is checked by package report's test (or set HLSBENCH_PAGE=path/to/index.html)")
	}
	needChromium(t)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	// HLSBENCH_SCREENSHOT_HEIGHT keeps the page's top only (the README's picture).
	height, _ := strconv.Atoi(os.Getenv("HLSBENCH_SCREENSHOT_HEIGHT"))
	// The page reads at a laptop's 1280 px (HLSBENCH_SCREENSHOT_WIDTH):
	// no sideways scroll of the whole page.
	width, _ := strconv.Atoi(os.Getenv("HLSBENCH_SCREENSHOT_WIDTH"))
	if width <= 0 {
		width = 1280
	}
	r, err := Check(ctx, page, Options{Screenshot: os.Getenv("HLSBENCH_SCREENSHOT"), ScreenshotHeight: height, Width: width, Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if p := r.Problems(); len(p) > 0 {
		t.Errorf("%s has %d problems:\n%s", page, len(p), strings.Join(p, "\n"))
	}
	if r.ScrollWidth > width {
		t.Errorf("%s is %d px wide at %d px: it scrolls sideways", page, r.ScrollWidth, width)
	}
}
