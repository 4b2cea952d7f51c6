package workloads

import (
	"container/heap"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/hlsbench/hlsbench/origin"
	"github.com/hlsbench/hlsbench/workloads/loadgen"
)

// audience is live-audience's audience, defaults filled in.
type audience struct {
	viewers     int
	live        origin.Live // channels, titles, ladder, target duration, window, title segments
	zipf        float64
	vodShare    float64
	switchShare float64
	ramp, watch time.Duration
}

func audienceOf(cfg Config) audience {
	a := audience{viewers: viewersSetting.Of(cfg), zipf: audienceZipfSetting.Of(cfg), vodShare: vodShareSetting.Of(cfg), switchShare: switchShareSetting.Of(cfg),
		ramp: rampSetting.Of(cfg), watch: watchSetting.Of(cfg),
		live: origin.Live{Channels: channelsSetting.Of(cfg), Titles: titlesSetting.Of(cfg), Ladder: ladderSetting.Of(cfg), TargetDuration: targetDurationSetting.Of(cfg)}}
	a.live = a.live.WithDefaults()
	// Negative: none (zero takes the default in Config).
	a.zipf, a.vodShare, a.switchShare, a.ramp = max(a.zipf, 0), max(a.vodShare, 0), max(a.switchShare, 0), max(a.ramp, 0)
	return a
}

// conns is the generator's pool: a connection per viewer, as players keep
// one each, up to maxAudienceConns (past it viewers share them).
func (a audience) conns() int { return min(a.viewers, maxAudienceConns) }

// The kinds of a viewer's requests, in the low bits of its tag.
const (
	evMaster  = 0
	evMedia   = 1
	evSegment = 2
	kindBits  = 2
)

// liveLookback is how old a live segment a pass's players may still ask
// for: what a playlist that much older than the pass lists. Older ones are
// counted (Unplanned), not fetched.
const liveLookback = 5 * time.Minute

// universe is every object a pass's viewers may ask for, indexed without
// a map: the live channels' playlists and their segments from m0 for span
// numbers (a pass's live edges and liveLookback before them), then the VOD
// titles'.
type universe struct {
	a                                 *audience
	m0, span                          int64
	rends                             int
	liveMaster, liveMedia, liveSeg    int
	vodMaster, vodMedia, vodSeg, size int
}

// newUniverse covers a pass from start for d: the live segments a player
// joining then may start at, to the edge at its end.
func newUniverse(a *audience, start time.Time, d time.Duration) *universe {
	td := a.live.TargetDuration
	u := &universe{a: a, rends: len(a.live.Ladder)}
	// Back far enough for a player handed a stale playlist to fetch what it
	// lists, as players do (an engine may serve an expired playlist long
	// past its TTL): liveLookback, or the window.
	back := max(int64(a.live.Window)+1, int64(liveLookback/td))
	u.m0 = max(origin.LiveEdge(start, td)-back, 0)
	u.span = origin.LiveEdge(start.Add(d+td), td) - u.m0 + 1
	c, t, r, k := a.live.Channels, a.live.Titles, u.rends, a.live.TitleSegments
	u.liveMaster = 0
	u.liveMedia = u.liveMaster + c
	u.liveSeg = u.liveMedia + c*r
	u.vodMaster = u.liveSeg + c*r*int(u.span)
	u.vodMedia = u.vodMaster + t
	u.vodSeg = u.vodMedia + t*r
	u.size = u.vodSeg + t*r*k
	return u
}

func (u *universe) master(live bool, item int) int {
	if live {
		return u.liveMaster + item
	}
	return u.vodMaster + item
}

func (u *universe) media(live bool, item, r int) int {
	if live {
		return u.liveMedia + item*u.rends + r
	}
	return u.vodMedia + item*u.rends + r
}

// segment is segment n of rendition r of a channel or title; false past
// what the universe holds.
func (u *universe) segment(live bool, item, r int, n int64) (int, bool) {
	if live {
		if n < u.m0 || n >= u.m0+u.span {
			return 0, false
		}
		return u.liveSeg + (item*u.rends+r)*int(u.span) + int(n-u.m0), true
	}
	k := u.a.live.TitleSegments
	if n < 0 || n >= int64(k) {
		return 0, false
	}
	return u.vodSeg + (item*u.rends+r)*k + int(n), true
}

// object says what object i is.
type objectRef struct {
	kind     int
	live     bool
	item, r  int
	seg      int64
	playlist bool
}

func (u *universe) object(i int) objectRef {
	switch {
	case i < u.liveMedia:
		return objectRef{kind: evMaster, live: true, item: i, playlist: true}
	case i < u.liveSeg:
		j := i - u.liveMedia
		return objectRef{kind: evMedia, live: true, item: j / u.rends, r: j % u.rends, playlist: true}
	case i < u.vodMaster:
		j := i - u.liveSeg
		ir := j / int(u.span)
		return objectRef{kind: evSegment, live: true, item: ir / u.rends, r: ir % u.rends, seg: u.m0 + int64(j%int(u.span))}
	case i < u.vodMedia:
		return objectRef{kind: evMaster, item: i - u.vodMaster, playlist: true}
	case i < u.vodSeg:
		j := i - u.vodMedia
		return objectRef{kind: evMedia, item: j / u.rends, r: j % u.rends, playlist: true}
	}
	j := i - u.vodSeg
	k := u.a.live.TitleSegments
	ir := j / k
	return objectRef{kind: evSegment, item: ir / u.rends, r: ir % u.rends, seg: int64(j % k)}
}

// path is object i's request path, this run's own (q).
func (u *universe) path(i int, q string) string {
	o := u.object(i)
	var p string
	switch {
	case o.kind == evMaster && o.live:
		p = origin.LiveMasterPath(o.item)
	case o.kind == evMaster:
		p = origin.VODMasterPath(o.item)
	case o.kind == evMedia && o.live:
		p = origin.LiveMediaPath(o.item, o.r)
	case o.kind == evMedia:
		p = origin.VODMediaPath(o.item, o.r)
	case o.live:
		p = origin.LiveSegmentPath(o.item, o.r, o.seg)
	default:
		p = origin.VODSegmentPath(o.item, o.r, int(o.seg))
	}
	return p + q
}

func (u *universe) paths(q string) []string {
	out := make([]string, u.size)
	for i := range out {
		out[i] = u.path(i, q)
	}
	return out
}

// viewerSeed is who a viewer is: when it joins (from the pass's start),
// what it watches and whether it switches rendition.
type viewerSeed struct {
	join     int64
	live     bool
	item, r  int
	switcher bool
}

// cast draws a pass's viewers: join times spread uniformly at random over
// the ramp (a Poisson arrival process given their number), channels and
// titles by Zipf popularity, renditions uniformly.
func (a *audience) cast(seed uint64) []viewerSeed {
	rng := rand.New(rand.NewPCG(seed, 0x5851f42d4c957f2d))
	chans, titles := loadgen.Popularity(a.live.Channels, a.zipf), loadgen.Popularity(a.live.Titles, a.zipf)
	joins := make([]int64, a.viewers)
	for i := range joins {
		joins[i] = int64(rng.Float64() * float64(a.ramp))
	}
	slices.Sort(joins)
	out := make([]viewerSeed, a.viewers)
	for i := range out {
		v := viewerSeed{join: joins[i], live: rng.Float64() >= a.vodShare, r: rng.IntN(len(a.live.Ladder)),
			switcher: rng.Float64() < a.switchShare}
		if v.live {
			v.item = loadgen.Draw(chans, rng.Float64())
		} else {
			v.item = loadgen.Draw(titles, rng.Float64())
		}
		out[i] = v
	}
	return out
}

// viewer is a player as one event loop runs it.
type viewer struct {
	viewerSeed
	next     int64 // the next segment to fetch; -1 before a playlist said where to start
	known    int64 // the newest segment a playlist listed (VOD: the last)
	fetching bool  // a segment request is planned or in flight
	play     int64 // VOD: when its first segments were in and playback began; -1 before
	switchAt int64
}

// event is a planned request: at (ns from the pass's start), whose, of
// what kind; clock marks a live player's periodic reload, which plans the
// next one when it is sent.
type event struct {
	at    int64
	v     int32
	kind  uint8
	clock bool
	seg   int64
}

type events []event

func (h events) Len() int           { return len(h) }
func (h events) Less(i, j int) bool { return h[i].at < h[j].at }
func (h events) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *events) Push(x any)        { *h = append(*h, x.(event)) }
func (h *events) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}

// viewerPlan is one event loop's viewers (loadgen.Plan). A player:
// fetches its master playlist as it joins, then its rendition's media
// playlist; live, it reloads that every target duration on its own clock,
// starts startFromEnd segments from the end of the first and fetches each
// segment, one at a time, as soon as a playlist lists it; on VOD it fetches
// the first startFromEnd segments back to back and then keeps that many
// ahead of playback. A switching viewer moves one step up or down the
// ladder every 3 to 6 segments and loads the new rendition's playlist
// before its next segment. Failed segments are skipped (a player stalls
// and moves on); a failed master or VOD playlist is retried a target
// duration later.
type viewerPlan struct {
	u   *universe
	td  int64
	vs  []viewer
	h   events
	rng *rand.Rand
	log []audRec
	// switches made; segments viewers skipped, older than the universe
	// (a playlist more than liveLookback old), or past it (never expected).
	switches, beyond int64
}

func newViewerPlan(u *universe, seeds []viewerSeed, shard, shards int, seed uint64) *viewerPlan {
	p := &viewerPlan{u: u, td: int64(u.a.live.TargetDuration), rng: rand.New(rand.NewPCG(seed, uint64(shard)+1))}
	for i := shard; i < len(seeds); i += shards {
		v := viewer{viewerSeed: seeds[i], next: -1, known: -1, play: -1, switchAt: math.MaxInt64}
		if v.switcher {
			v.switchAt = v.join + p.switchGap()
		}
		p.vs = append(p.vs, v)
		p.h = append(p.h, event{at: v.join, v: int32(len(p.vs) - 1), kind: evMaster})
	}
	heap.Init(&p.h)
	return p
}

func (p *viewerPlan) switchGap() int64 { return int64(3+p.rng.IntN(4)) * p.td }

func (p *viewerPlan) obj(e *event) int {
	v := &p.vs[e.v]
	switch e.kind {
	case evMaster:
		return p.u.master(v.live, v.item)
	case evMedia:
		return p.u.media(v.live, v.item, v.r)
	}
	i, _ := p.u.segment(v.live, v.item, v.r, e.seg) // checked when planned
	return i
}

func (p *viewerPlan) Next() (loadgen.Planned, bool) {
	if len(p.h) == 0 {
		return loadgen.Planned{}, false
	}
	e := &p.h[0]
	return loadgen.Planned{At: time.Duration(e.at), Obj: p.obj(e), Tag: int64(e.v)<<kindBits | int64(e.kind)}, true
}

func (p *viewerPlan) Pop() {
	e := heap.Pop(&p.h).(event)
	if e.clock && p.vs[e.v].live {
		heap.Push(&p.h, event{at: e.at + p.td, v: e.v, kind: evMedia, clock: true})
	}
}

func (p *viewerPlan) push(e event) { heap.Push(&p.h, e) }

func (p *viewerPlan) Answered(rec *loadgen.Record, check loadgen.BodyCheck, at time.Duration) {
	vi, kind := int32(rec.Tag>>kindBits), int(rec.Tag&(1<<kindBits-1))
	v := &p.vs[vi]
	edge := int64(-1)
	if e, ok := check.(*evidence); ok && rec.Status != 0 {
		edge = e.edge
	}
	good := rec.Err == "" && rec.Status == 200
	p.log = append(p.log, audRec{intended: rec.Intended.UnixNano(), ttfb: int64(rec.TTFB), total: int64(rec.Total), lag: int64(rec.Lag),
		obj: int32(rec.Object), status: int16(rec.Status), err: rec.Err != "", edge: edge, body: rec.BodyBytes})
	now := int64(at)
	switch kind {
	case evMaster:
		if good {
			p.push(event{at: now, v: vi, kind: evMedia, clock: v.live})
		} else {
			p.push(event{at: now + p.td, v: vi, kind: evMaster})
		}
	case evMedia:
		if !good {
			if !v.live && v.next < 0 {
				p.push(event{at: now + p.td, v: vi, kind: evMedia})
			}
			return
		}
		if v.live {
			if edge < 0 {
				return // no stamp: the player cannot tell what it lists
			}
			v.known = max(v.known, edge)
			if v.next < 0 {
				v.next = max(edge-(startFromEnd-1), edge-int64(p.u.a.live.Window)+1, 0)
			}
		} else {
			v.known = int64(p.u.a.live.TitleSegments) - 1
			if v.next < 0 {
				v.next = 0
			}
		}
		p.fetchNext(vi, now)
	case evSegment:
		v.fetching = false
		if !v.live && v.next == startFromEnd-1 && v.play < 0 {
			v.play = now
		}
		v.next++
		if now >= v.switchAt {
			// Up or down the ladder; the new playlist comes first.
			switch {
			case v.r == 0:
				v.r = 1
			case v.r == len(p.u.a.live.Ladder)-1 || p.rng.IntN(2) == 0:
				v.r--
			default:
				v.r++
			}
			v.r = min(v.r, len(p.u.a.live.Ladder)-1)
			v.switchAt = now + p.switchGap()
			p.switches++
			p.push(event{at: now, v: vi, kind: evMedia})
			return
		}
		p.fetchNext(vi, now)
	}
}

// fetchNext plans the viewer's next segment if a playlist listed it and
// none is on its way: now, or on VOD when playback leaves room for it.
func (p *viewerPlan) fetchNext(vi int32, now int64) {
	v := &p.vs[vi]
	if v.fetching || v.next < 0 || v.next > v.known {
		return
	}
	due := now
	if !v.live && v.next >= startFromEnd && v.play >= 0 {
		due = max(now, v.play+(v.next-startFromEnd+1)*p.td)
	}
	if v.live && v.next < p.u.m0 {
		// Older than the plan reaches: skipped, counted.
		p.beyond += p.u.m0 - v.next
		v.next = p.u.m0
		if v.next > v.known {
			return
		}
	}
	if _, ok := p.u.segment(v.live, v.item, v.r, v.next); !ok {
		p.beyond++
		return
	}
	v.fetching = true
	p.push(event{at: due, v: vi, kind: evSegment, seg: v.next})
}

// audRec is one request of a live-audience pass.
type audRec struct {
	intended         int64 // unix ns
	ttfb, total, lag int64
	obj              int32
	status           int16
	err              bool
	edge             int64 // a live media playlist's LiveEdgeHeader; -1 without one
	body             int64 // body bytes received, an error page's too
}

func (r *audRec) good() bool { return !r.err && r.status == 200 }

var _ loadgen.Plan = (*viewerPlan)(nil)
