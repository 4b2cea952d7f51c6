// Package builtin is hlsbench's own caching reverse proxy: an http.Handler that
// keeps whole origin objects in RAM and serves HLS playlists and segments from
// them. It is the engine hlsbench measures when nothing else is installed, so
// it implements the behaviours the benchmark checks (request coalescing with
// streaming, grace, ranges) and states exactly how.
//
// # Store
//
// The cache key is the request URI (path and query) exactly as the client sent
// it. GET and HEAD are cached; PURGE removes the object for its URI (200 when
// there was one, 404 otherwise); BAN removes every object whose URI starts
// with its own (BAN /stream/: a whole stream), at once, and answers 200 with
// the count in X-Hlsbench-Banned; any other method is passed to the origin
// without caching (counted in Stats.Passes). GET /_hlsbench/stats is answered
// by the cache itself with [Stats] as JSON, whatever the method, and is never
// passed on.
//
// Only complete 200 answers are stored: their status, every origin header
// except hop-by-hop ones (and Age and Content-Length, which the cache sets
// itself), and the body. An object is stored only if its TTL is positive and it
// fits in Policy.MaxBytes. Body bytes of stored objects count against
// MaxBytes; when a new object would exceed it, least recently used objects are
// evicted. Objects still being fetched are not in the store, so they are never
// evicted mid-fill; their buffers are transient and not counted.
//
// The TTL of an object is, by path: Policy.ManifestTTL for paths ending in
// .m3u8, Policy.SegmentTTL for .ts, Policy.DefaultTTL otherwise. When that
// class TTL is positive it wins over anything the origin says (including
// no-store). When it is zero the origin decides: Cache-Control no-store,
// private or no-cache make the object uncacheable; otherwise s-maxage, else
// max-age, else Policy.DefaultTTL; a TTL of zero is not stored. The origin's
// Age and Expires headers are ignored.
//
// # Origin fetches
//
// A miss fetches the whole object with a plain GET that carries none of the
// client's headers (no Range, no conditionals, no Accept-Encoding), over one
// keep-alive transport without compression; redirects are not followed.
// Policy.FetchTimeout bounds the time to the origin's response headers and
// also every later gap between body reads; over it the fetch fails. A fetch
// runs in its own goroutine, not in a client's: a client going away does not
// stop the fetch, and the object is still stored when it completes.
//
// With Policy.Coalesce, concurrent misses for one key share one fetch. Its
// body buffer is allocated once from the origin's Content-Length (grown when
// there is none) and every reader, the first requester included, is sent the
// response headers as soon as the origin's arrive and then each chunk as it
// arrives. If the fetch fails before its headers, readers get 503; if it fails
// midway, readers' responses are aborted with http.ErrAbortHandler (the client
// sees a short body) and nothing is stored. Non-200 answers are streamed to the
// readers of that fetch and never stored; a 5xx never replaces a stored object.
//
// Every GET and HEAD answer carries X-Cache (HIT, MISS or STALE) and Age, the
// whole seconds since the copy's origin response headers arrived; passed
// requests and the cache's own 503s say MISS and 0. An aborted response is a
// panic(http.ErrAbortHandler): middleware around the cache must let it
// through to net/http.
//
// # Grace and health
//
// Let age be the time since an object was fetched, TTL its TTL and G
// Policy.Grace, capped at Policy.HealthyGrace while the origin is healthy
// (Varnish's req.grace; 0 serves nothing stale from a healthy origin):
//
//   - age < TTL: HIT.
//   - TTL ≤ age < TTL+G: STALE, served at once from the stored copy, and a
//     background revalidation is started under the rule below.
//   - age ≥ TTL+G with the origin healthy: MISS, a foreground fetch (or, with
//     Coalesce, the fetch already running for the key). If it fails the client
//     gets 503, or the origin's own 5xx answer; the stored copy stays.
//   - age ≥ TTL+G with the origin sick: STALE from the stored copy, as long as
//     it is stored, with revalidation under the rule below (Varnish's grace
//     with a sick backend).
//
// Revalidation rule: at most one fetch per key is in flight at a time (a
// background fetch is not started while any shared fetch for the key runs).
// When the origin is sick, or the key's last fetch failed (transport error,
// timeout or 5xx), a new background fetch for the key starts only if the last
// one started at least one retry gap ago. The retry gap is
// Policy.ProbeInterval, or 1s when that is zero. A healthy origin whose last
// fetch succeeded gets a revalidation at the first STALE answer.
//
// Health comes only from the probe: when Policy.ProbePath is set, a GET of it
// on a fresh connection every ProbeInterval, bounded by ProbeTimeout; a 2xx
// answer makes the origin healthy, anything else sick. One result flips the
// state; the origin is healthy until the first probe says otherwise. Without a
// probe the origin always counts as healthy. Misses for objects not in the
// store always go to the origin, sick or not, so a wrong probe path cannot
// turn every miss into an error.
//
// # Ranges
//
// A single range (bytes=a-b, a-, -n) on a 200 object is answered with 206 and
// Content-Range, or 416 with Content-Range: bytes */size when unsatisfiable.
// Several ranges, other units and malformed headers are ignored (200, whole
// object), as RFC 9110 allows. On a miss the whole object is fetched and the
// range is sent as soon as its bytes arrive; when the origin gives no
// Content-Length, a range reader waits for the whole object. If-Range and
// client conditionals are not evaluated.
//
// # Hit path
//
// Stored header values are prebuilt slices (clipped, so an append by a
// wrapper copies rather than writes into them), put into the response header
// map without copying; the body is written straight from the stored slice;
// the key is r.RequestURI itself; Age values below 1024 s are preformatted.
// The store sits behind one mutex held only for the map lookup and LRU update,
// never while writing to a client: one global LRU is what makes MaxBytes
// exact, and at the benchmark's rates the lock is not the bottleneck.
//
// Close stops the probe and all fetches (their readers are aborted) and waits
// for their goroutines.
//
// # PROXY protocol
//
// Behind a TLS terminator (hitch with write-proxy-v2, haproxy with
// send-proxy-v2) the cache can serve on a [ProxyListener]. It reads the PROXY
// protocol v2 header that starts each connection, and the connection it
// returns has the header's addresses, so r.RemoteAddr is the real client. It
// takes v2 over TCP (IPv4 or IPv6), UNSPEC and LOCAL; for the last two the
// connection's own addresses stand, and a LOCAL header's family, addresses
// and TLVs are read but ignored. It refuses v1 text, UDP and UNIX families, an
// address and TLV block over ProxyOptions.MaxHeaderBytes (default 4 KiB), TLVs
// that do not exactly fill the block, and a CRC32C TLV that does not match.
// Each header is read in its own goroutine, within ProxyOptions.HeaderTimeout
// (default 5 s) of the accept, so a slow client holds up no other. A
// connection with a bad or late header never reaches Accept's caller: it is
// closed and counted by reason in [ProxyListener.Stats].
package builtin
