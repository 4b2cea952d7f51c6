package loadgen

import (
	"context"
	"crypto/tls"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

const (
	readBufSize = 256 << 10
	// maxWait bounds every wait so a stop request, the Go runtime's
	// preemption and timeouts are seen within a few milliseconds.
	maxWait = int64(5 * time.Millisecond)
	// expireEvery is how often in-flight and queued requests are checked
	// against their timeout.
	expireEvery = int64(2 * time.Millisecond)
	// A timer wakes a thread late: on the 2-core PVM guest hlsbench is
	// developed on, an epoll_pwait2 timeout returns p50 75 µs, p99 97 µs
	// after it was due (timer slack 1 ns, CPU idle meanwhile; bare metal
	// is nearer 5 µs), and every send of the schedule would be that late.
	// A pinned rate loop therefore wakes margin() early and polls its sockets,
	// without blocking, until the slot is due: the margin is twice the
	// loop's own smoothed wake latency plus spinSlack, at most spinMax.
	// Time spent polling is counted apart from the loop's work (shard
	// CPU share), since it is not load the generator could not carry.
	spinSlack = int64(10 * time.Microsecond)
	spinMax   = int64(300 * time.Microsecond)
	// calibrateWaits timed waits of calibrateWait measure the wake latency
	// when a loop starts.
	calibrateWaits = 16
	calibrateWait  = int64(200 * time.Microsecond)
	evfdIndex      = -1

	// deadBeforeBackoff is how many connections in a row may die before
	// their first answer (refused, reset, closed without a byte) before the
	// loop stops opening sockets for every request: from then on a request
	// that finds no free connection fails at once with the same error, and
	// one probe connection at a time is tried, minBackoff after the last
	// failure, doubling up to maxBackoff. The first answer ends it. Without
	// this a server that accepts and closes every connection made the loop
	// open sockets as fast as it could.
	deadBeforeBackoff = 3
	minBackoff        = int64(time.Millisecond)
	maxBackoff        = int64(250 * time.Millisecond)
)

type connState uint8

const (
	connDown connState = iota
	connConnecting
	connIdle
	connBusy
)

// pending is a request between its slot in the schedule and a connection.
type pending struct {
	intended, dispatched int64
	obj                  int32 // index in passSpec.reqs
	tag                  int64 // a planned request's Planned.Tag
}

type conn struct {
	idx     int // index in shard.conns, also the epoll data
	fd      int
	state   connState
	started int64 // connect start (nanotime)
	outWait bool  // EPOLLOUT registered for a partial write or a connect
	// answered is set once any byte of an answer arrived since the
	// connection was opened; a connection that dies before that counts
	// towards the backoff.
	answered bool
	// probe marks the one connection a backing-off loop is trying.
	probe bool

	req     pending
	written int64
	first   int64
	rx      int64 // kernel receive time of the answer's first byte (nanotime), 0 if unknown
	last    int64 // when the answer's latest bytes had arrived, at the latest (see arrival)
	woff    int   // bytes of the request already written (plain sockets)

	fc   *fdConn
	tc   *tls.Conn
	resp response
}

type mode uint8

const (
	modeRate mode = iota
	modeClosed
	modeBurst
	modePlan // Pass.Plan: the caller's schedule, paced like a rate
)

// paced reports whether the loop sends on a schedule of intended times
// (a rate, or a plan) rather than as answers return.
func (m mode) paced() bool { return m == modeRate || m == modePlan }

// passSpec is what every shard runs in one pass; shards only read it.
type passSpec struct {
	mode mode
	// reqs are the requests of the pass, one per path; pick, when set,
	// is the cumulative popularity a request's path is drawn from.
	reqs     [][]byte
	pick     []float64
	ex       expect
	t0, end  int64 // nanotime; end is when dispatching stops
	period   float64
	arrival  Arrival
	rate     float64
	seed     uint64
	timeout  int64
	requests int64 // 0: unbounded
	burst    int
	shards   int
	// share is the generator's part of the pass's schedule (Pass.Share):
	// slot k is this generator's when k mod share.Of is share.Index.
	share   Share
	stop    *atomic.Bool
	ivEvery int64 // HDR log interval, 0 when not logging
	// late delays every dispatch by this much: tests make the generator
	// late on purpose with it (Pass.lateBy).
	late int64
	// plan makes each loop's Plan (modePlan).
	plan func(shard int) Plan
	// The process's CPU over the sending window, as the loops' own check
	// sees it: cpuStart is read by the first loop past t0, cpuEnd and
	// sendEnd by the last loop to stop sending (left counts the loops
	// still sending). Connections opened before t0 and answers drained
	// after the last send are outside it.
	cpuStart, cpuEnd, sendEnd atomic.Int64
	started                   atomic.Bool
	left                      atomic.Int32
}

// startSending is called by every loop once it is past t0: the first reads
// the process's CPU.
func (sp *passSpec) startSending() {
	if sp.started.CompareAndSwap(false, true) {
		sp.cpuStart.Store(int64(processCPU()))
	}
}

// stopSending is called by every loop once it stops sending: the last reads
// the process's CPU and the time.
func (sp *passSpec) stopSending(now int64) {
	if sp.left.Add(-1) == 0 {
		sp.cpuEnd.Store(int64(processCPU()))
		sp.sendEnd.Store(now)
	}
}

type shardResult struct {
	m *metrics
	// cpu is the loop thread's CPU over its sending window, wall the
	// window's length: from t0 to when it dispatched its last slot (rate
	// and closed loop) or to its last answer (a burst).
	cpu, wall time.Duration
	// spun is the part of cpu spent polling for a due slot (see
	// spinSlack), spunAll the same over the whole pass, margin how early
	// the loop last woke before a slot.
	spun, spunAll, margin time.Duration
	// winEnd is when the pass's sending really ended (nanotime): the
	// planned end, the last send of a counted pass, or the interrupt.
	winEnd  int64
	stopped bool
	cpuID   int // the CPU the loop ran on at the end of the pass
	err     error
}

type shard struct {
	g      *Generator
	id     int
	epfd   int
	evfd   int
	conns  []*conn
	idle   idleRing
	queue  pendingQueue
	rbuf   []byte
	events []unix.EpollEvent
	m      *metrics
	cmds   chan func()
	// Connections by state (kept by setState).
	busy, connecting, down int
	scan                   int // where the search for a down connection resumes

	sp *passSpec
	// The loop's slots of the pass's schedule are first, first+stride, …
	// (the schedule is one sequence whichever generators and loops split
	// it: see setupPacer).
	first, stride int64
	nextSlot      int64 // schedule slot of the next send
	nextAt        int64 // intended time of the next send
	// poissonAt is the time of slot nextSlot after t0 (ns, a Poisson
	// schedule's running sum of gaps).
	poissonAt float64
	nextObj   int32 // its object and tag, in a planned pass
	nextTag   int64
	plan      Plan // this loop's, in a planned pass
	sent      int64
	quota     int64
	rng       *rand.Rand
	expireAt  int64
	stopped   bool
	stopAt    int64
	// sendEnd is when this loop stopped dispatching (0 while it still
	// does); cpuSend its thread's CPU from t0 to then.
	sendEnd int64
	cpuSend time.Duration
	// wakeLate is the smoothed lateness of this thread's timed waits
	// (ns, an EWMA with weight 1/8); spun is the time spent polling for a
	// due slot in this pass, spunSend the same until sendEnd.
	wakeLate int64
	spun     int64
	spunSend int64
	// rawWait: this loop's thread is pinned to a CPU of its own
	// (Options.CPUs), and its waits are raw system calls (sys_linux.go).
	rawWait bool
	// owed counts closed-loop sends put off while backing off.
	owed int64

	// woke is when the current batch of epoll events was returned: every
	// socket in the batch had its bytes by then. batchRead is set once a
	// socket of the batch was read.
	woke      int64
	batchRead bool
	// rx reads kernel receive stamps; realOff converts them (CLOCK_REALTIME)
	// to nanotime, measured at the start of each pass.
	rx      rxPeek
	realOff int64

	// Backoff state (see deadBeforeBackoff).
	deadStreak int
	dead       errDetail // the last connection death, for requests failed at once
	backoff    int64
	probeAt    int64
	probing    bool

	// sa is this loop's own copy of the target's address: unix.Connect
	// writes into the Sockaddr it is given, so loops must not share one.
	sa     unix.Sockaddr
	iv     *interval
	pinErr error
	// opened counts every socket this shard opened; openedBefore is the
	// count when the previous pass ended.
	opened, openedBefore int64
	// tls counts the handshakes since the previous pass ended, as opened
	// counts sockets; tlsLast is the last one's parameters.
	tls     tlsCounts
	tlsLast tlsParams
}

func newShard(g *Generator, id int) (*shard, error) {
	s := &shard{g: g, id: id, rbuf: make([]byte, readBufSize), events: make([]unix.EpollEvent, 256),
		m: newMetrics(), cmds: make(chan func()), sa: copySockaddr(g.sa)}
	var err error
	if s.epfd, err = unix.EpollCreate1(unix.EPOLL_CLOEXEC); err != nil {
		return nil, err
	}
	if s.evfd, err = unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC); err != nil {
		unix.Close(s.epfd)
		return nil, err
	}
	ev := unix.EpollEvent{Events: unix.EPOLLIN, Fd: evfdIndex}
	if err := unix.EpollCtl(s.epfd, unix.EPOLL_CTL_ADD, s.evfd, &ev); err != nil {
		unix.Close(s.evfd)
		unix.Close(s.epfd)
		return nil, err
	}
	go s.serve()
	return s, nil
}

// serve runs every command of this shard on one locked OS thread, so the
// thread's timer slack and CPU accounting are the shard's own.
func (s *shard) serve() {
	runtime.LockOSThread() // never unlocked: the thread dies with the shard
	preciseTimers()
	if pin := loopCPUs(s.g.opts.CPUs, s.g.opts.Shards); s.id < len(pin) {
		var set unix.CPUSet
		set.Set(pin[s.id])
		s.pinErr = unix.SchedSetaffinity(0, &set)
		s.rawWait = s.pinErr == nil
	}
	s.calibrate()
	for f := range s.cmds {
		f()
	}
}

// calibrate measures how late this thread's timed waits wake, before any
// pass: the median of calibrateWaits waits seeds wakeLate.
func (s *shard) calibrate() {
	late := make([]int64, 0, calibrateWaits)
	for range calibrateWaits {
		t := nanotime()
		if n, e := epollWait(s.epfd, s.events, calibrateWait, s.rawWait); n != 0 || e != 0 {
			continue
		}
		late = append(late, max(nanotime()-t-calibrateWait, 0))
	}
	if len(late) > 0 {
		slices.Sort(late)
		s.wakeLate = late[len(late)/2]
	}
}

// margin is how early a rate loop wakes before a due slot: 0 when its
// thread is not pinned to a CPU of its own (Options.CPUs), where polling
// would take the CPU from what it measures.
func (s *shard) margin() int64 {
	if len(s.g.opts.CPUs) == 0 {
		return 0
	}
	return min(2*s.wakeLate+spinSlack, spinMax)
}

// waitUntil waits for events until due, the schedule's next slot: a timed
// wait until margin() before it, then polls without blocking. It learns
// wakeLate from every timed wait the timer ended, and counts the polls that
// found nothing before due in spun.
func (s *shard) waitUntil(due int64) int {
	t := nanotime()
	if early := due - t - s.margin(); early > 0 {
		n, e := epollWait(s.epfd, s.events, early, s.rawWait)
		if e != 0 {
			return 0 // EINTR: the runtime preempted us; just loop
		}
		if n == 0 {
			if late := nanotime() - t - early; late >= 0 {
				s.wakeLate += (late - s.wakeLate) / 8
			}
		}
		return n
	}
	n := s.wait(0)
	if n == 0 && due > t {
		s.spun += nanotime() - t
	}
	return n
}

// do runs f on the shard's thread and waits for it.
func (s *shard) do(f func()) {
	done := make(chan struct{})
	s.cmds <- func() { f(); close(done) }
	<-done
}

func (s *shard) wake() {
	var one = [8]byte{1}
	rawWrite(s.evfd, one[:])
}

func (s *shard) close() {
	s.do(func() {
		for _, c := range s.conns {
			s.closeConn(c)
		}
		unix.Close(s.evfd)
		unix.Close(s.epfd)
	})
	close(s.cmds)
}

func (s *shard) addConn() *conn {
	c := &conn{idx: len(s.conns), fd: -1, resp: newResponse(nil)}
	if s.g.opts.BodyCheck != nil {
		c.resp.check = s.g.opts.BodyCheck()
	}
	s.conns = append(s.conns, c)
	s.down++
	return c
}

// setState moves a connection to st and keeps the counts by state.
func (s *shard) setState(c *conn, st connState) {
	switch c.state {
	case connDown:
		s.down--
	case connConnecting:
		s.connecting--
	case connBusy:
		s.busy--
	}
	c.state = st
	switch st {
	case connDown:
		s.down++
	case connConnecting:
		s.connecting++
	case connBusy:
		s.busy++
	}
}

// openBlocking connects (and shakes hands) before a pass starts.
func (s *shard) openBlocking(c *conn) error {
	fd, err := dialBlocking(s.sa, s.g.family, s.g.opts.Timeout)
	s.opened++
	if err != nil {
		return err
	}
	c.fd = fd
	if err := s.handshake(c, nanotime()+int64(s.g.opts.Timeout)); err != nil {
		unix.Close(fd)
		c.fd = -1
		return err
	}
	ev := unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLRDHUP, Fd: int32(c.idx)}
	if err := unix.EpollCtl(s.epfd, unix.EPOLL_CTL_ADD, fd, &ev); err != nil {
		unix.Close(fd)
		c.fd = -1
		return err
	}
	s.setState(c, connIdle)
	c.outWait = false
	c.answered = false
	return nil
}

// handshake runs the TLS handshake, blocking on the socket, when the target
// is https. A reconnect during a pass blocks this shard for the handshake.
func (s *shard) handshake(c *conn, deadline int64) error {
	if s.g.tlsConfig == nil {
		c.fc, c.tc = nil, nil
		return nil
	}
	c.fc = &fdConn{fd: c.fd, blocking: true, deadline: deadline}
	c.tc = tls.Client(c.fc, s.g.tlsConfig)
	ctx, cancel := context.WithDeadline(context.Background(), time.Now().Add(time.Duration(deadline-nanotime())))
	defer cancel()
	if err := c.tc.HandshakeContext(ctx); err != nil {
		return err
	}
	c.fc.blocking = false
	cs := c.tc.ConnectionState()
	s.tlsLast = paramsOf(&cs)
	s.tls.add(s.tlsLast, cs.DidResume)
	return nil
}

// startReconnect opens a closed connection again without waiting for it.
func (s *shard) startReconnect(c *conn, now int64) {
	fd, done, err := startConnect(s.sa, s.g.family)
	s.opened++
	if err != nil {
		s.connectFailed(c, connectDetail("connect", err), now)
		return
	}
	c.fd = fd
	c.started = now
	c.answered = false
	ev := unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLRDHUP | unix.EPOLLOUT, Fd: int32(c.idx)}
	if err := unix.EpollCtl(s.epfd, unix.EPOLL_CTL_ADD, fd, &ev); err != nil {
		unix.Close(fd)
		c.fd = -1
		s.connectFailed(c, connectDetail("epoll", err), now)
		return
	}
	c.outWait = true
	s.setState(c, connConnecting)
	if done {
		s.connected(c, now)
	}
}

func (s *shard) connected(c *conn, now int64) {
	if err := connectResult(c.fd); err != nil {
		s.closeConn(c)
		s.connectFailed(c, connectDetail("connect", err), now)
		return
	}
	if err := s.handshake(c, now+int64(s.g.opts.Timeout)); err != nil {
		s.closeConn(c)
		s.connectFailed(c, connectDetail("tls handshake", err), nanotime())
		return
	}
	s.setOut(c, false)
	s.setState(c, connIdle)
	s.connIdle(c, nanotime())
}

// connectFailed handles a connection (c, already down) that could not be
// opened: the oldest waiting request could not be sent and fails with d.
func (s *shard) connectFailed(c *conn, d errDetail, now int64) {
	if c.probe {
		c.probe, s.probing = false, false
	}
	if s.queue.n > 0 {
		s.lose(s.queue.pop(), d, now)
	}
	s.died(d, now)
	s.reopen(now)
}

// died counts a connection that died before its first answer. Past
// deadBeforeBackoff in a row the loop backs off: every waiting request fails
// now with d (each would only open another socket the server refuses), and
// the next probe may start after the backoff.
func (s *shard) died(d errDetail, now int64) {
	s.deadStreak++
	s.dead = d
	if !s.backingOff() {
		return
	}
	s.backoff = min(max(2*s.backoff, minBackoff), maxBackoff)
	s.probeAt = now + s.backoff
	d.backoff = true
	for s.queue.n > 0 {
		s.lose(s.queue.pop(), d, now)
	}
}

// alive ends a backoff: an answer arrived.
func (s *shard) alive() {
	s.deadStreak, s.backoff, s.probeAt = 0, 0, 0
}

func (s *shard) backingOff() bool { return s.deadStreak >= deadBeforeBackoff }

// reopen opens down connections for requests waiting with none on its way.
func (s *shard) reopen(now int64) {
	for s.queue.n > s.connecting && s.down > 0 && !s.backingOff() {
		s.startReconnect(s.downConn(), now)
	}
}

// downConn returns a connection that is down; there must be one.
func (s *shard) downConn() *conn {
	n := len(s.conns)
	for i := 0; i < n; i++ {
		c := s.conns[(s.scan+i)%n]
		if c.state == connDown {
			s.scan = (s.scan + i + 1) % n
			return c
		}
	}
	panic("loadgen: no connection is down")
}

func (s *shard) setOut(c *conn, on bool) {
	if c.outWait == on {
		return
	}
	ev := unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLRDHUP, Fd: int32(c.idx)}
	if on {
		ev.Events |= unix.EPOLLOUT
	}
	_ = unix.EpollCtl(s.epfd, unix.EPOLL_CTL_MOD, c.fd, &ev)
	c.outWait = on
}

func (s *shard) closeConn(c *conn) {
	if c.fd >= 0 {
		unix.Close(c.fd) // also leaves the epoll set
		c.fd = -1
	}
	s.setState(c, connDown)
	c.outWait = false
	c.fc, c.tc = nil, nil
}

// run executes one pass on this shard's thread.
func (s *shard) run(sp *passSpec) shardResult {
	s.sp = sp
	s.m.reset()
	s.queue.reset(max(QueuePerConnection*len(s.conns), QueueMin))
	s.stopped, s.stopAt = false, 0
	s.sent, s.owed = 0, 0
	s.sendEnd, s.cpuSend = 0, 0
	s.spun, s.spunSend = 0, 0
	s.deadStreak, s.backoff, s.probeAt, s.probing = 0, 0, 0, false
	s.dead = errDetail{}
	s.realOff = time.Now().UnixNano() - nanotime()

	// Every connection is open before t0.
	for _, c := range s.conns {
		c.probe = false
		if c.state == connDown {
			if err := s.openBlocking(c); err != nil {
				return shardResult{m: s.m, err: err}
			}
		}
	}
	s.idle.reset(len(s.conns))
	for _, c := range s.conns {
		if c.state == connIdle {
			s.idle.push(c)
		}
	}
	s.setupPacer()
	cpu0 := threadCPU()

	// Sleep to t0 on the loop's own clock, so all shards start together.
	for {
		now := nanotime()
		if now >= sp.t0 {
			break
		}
		s.waitUntil(min(sp.t0, now+maxWait))
		if sp.stop.Load() {
			break
		}
	}
	sp.startSending()
	if sp.ivEvery > 0 {
		s.iv = s.newInterval(sp.t0)
	}
	s.expireAt = sp.t0 + expireEvery

	switch sp.mode {
	case modeClosed:
		now := nanotime()
		for range s.conns {
			if !s.canSend(now) {
				break
			}
			s.submit(pending{intended: now, dispatched: now}, now)
		}
	case modeBurst:
		now := nanotime()
		for s.sent < s.quota {
			s.submit(pending{intended: sp.t0, dispatched: now}, now)
		}
	}

	for {
		now := nanotime()
		if sp.stop.Load() {
			s.interrupt(now)
			break
		}
		if sp.mode.paced() {
			s.dispatch(now)
		}
		if s.owed > 0 {
			s.payOwed(now)
		}
		if s.sendEnd == 0 && !s.sending(now) {
			s.sendEnd, s.cpuSend, s.spunSend = now, threadCPU()-cpu0, s.spun
			sp.stopSending(now)
		}
		if now >= s.expireAt {
			s.expire(now)
			s.expireAt = now + expireEvery
		}
		if s.iv != nil && now >= s.iv.end {
			s.rotate(now)
		}
		if s.finished(now) {
			break
		}
		var n int
		if w := s.waitFor(now); sp.mode.paced() && s.sending(now) && s.nextAt+sp.late <= now+w {
			n = s.waitUntil(s.nextAt + sp.late) // the next slot is what ends the wait
		} else {
			n = s.wait(w)
		}
		s.woke, s.batchRead = nanotime(), false
		for i := 0; i < n; i++ {
			ev := &s.events[i]
			if ev.Fd == evfdIndex {
				var b [8]byte
				rawRead(s.evfd, b[:])
				continue
			}
			s.onEvent(s.conns[ev.Fd], ev.Events)
			// Many large reads can take a while: a slot that fell due
			// meanwhile goes out now, not after the whole batch.
			if sp.mode.paced() && i+1 < n {
				if now := nanotime(); s.nextAt+sp.late <= now {
					s.dispatch(now)
				}
			}
		}
	}
	end := nanotime()
	if s.sendEnd == 0 {
		s.sendEnd, s.cpuSend, s.spunSend = end, threadCPU()-cpu0, s.spun
		sp.stopSending(end)
	}
	s.m.sockets = s.opened - s.openedBefore
	s.openedBefore = s.opened
	s.m.tls, s.tls = s.tls, tlsCounts{}
	if s.m.tls.handshakes == 0 {
		// The pass ran on connections opened before it.
		s.m.tls.first = s.tlsLast
	}
	res := shardResult{m: s.m, cpu: s.cpuSend, spun: time.Duration(s.spunSend), spunAll: time.Duration(s.spun),
		margin: time.Duration(s.margin()),
		wall:   time.Duration(s.sendEnd - sp.t0), stopped: s.stopped,
		winEnd: s.windowEnd(), cpuID: currentCPU()}
	if s.iv != nil {
		s.iv.end = end
		s.g.log.in <- s.iv
		s.iv = nil
	}
	return res
}

// sending reports whether this loop still has requests to send. A burst's
// window is the whole burst.
func (s *shard) sending(now int64) bool {
	switch s.sp.mode {
	case modeRate:
		return s.nextAt < s.sp.end && s.sent < s.quota
	case modeClosed:
		return s.canSend(now)
	case modePlan:
		// An answer may plan more until the end: the window is the pass.
		return now < s.sp.end && (s.nextAt < s.sp.end || s.busy > 0 || s.queue.n > 0)
	}
	return true
}

// windowEnd is when sending really ended: the planned end of the pass, or
// the last send of a pass with a request count that ended sooner, or the
// interrupt, whichever came first.
func (s *shard) windowEnd() int64 {
	sp := s.sp
	if sp.mode == modeBurst {
		return sp.t0
	}
	end := sp.end
	if s.sent >= s.quota {
		end = min(end, s.sendEnd)
	}
	if s.stopped {
		end = min(end, s.stopAt)
	}
	return end
}

func (s *shard) wait(d int64) int {
	n, e := epollWait(s.epfd, s.events, d, s.rawWait)
	if e != 0 {
		return 0 // EINTR: the runtime preempted us; just loop
	}
	return n
}

func (s *shard) setupPacer() {
	sp := s.sp
	// The schedule is one sequence of slots, the same however it is
	// split: generator share.Index of share.Of takes the slots k with k mod
	// Of = Index, and its loop id of shards every shards-th of those, so
	// loop id sends slots first, first+stride, … A pass's request count
	// and a burst count slots of the whole schedule.
	s.first = int64(sp.share.Index) + int64(sp.share.Of)*int64(s.id)
	s.stride = int64(sp.share.Of) * int64(sp.shards)
	s.quota = math.MaxInt64
	s.plan = nil
	switch {
	case sp.mode == modeBurst:
		s.quota = slotsBelow(int64(sp.burst), s.first, s.stride)
	case sp.requests > 0:
		s.quota = slotsBelow(sp.requests, s.first, s.stride)
	}
	s.nextSlot = s.first
	switch sp.mode {
	case modePlan:
		s.plan = sp.plan(s.id)
		s.planNext()
	case modeRate:
		s.nextAt = sp.t0 + int64(float64(s.first)*sp.period)
		if sp.arrival == Poisson {
			// Every loop of every generator draws the same gaps from the
			// same stream and keeps its own slots' times.
			s.rng = rand.New(rand.NewPCG(sp.seed, 0))
			s.poissonAt = 0
			s.poissonStep(s.first + 1)
		}
	}
}

// slotsBelow counts the slots first, first+stride, … below n.
func slotsBelow(n, first, stride int64) int64 {
	if first >= n {
		return 0
	}
	return (n-1-first)/stride + 1
}

// poissonStep adds the next n gaps of the Poisson schedule to poissonAt and
// sets nextAt: the first slot is one gap after t0.
func (s *shard) poissonStep(n int64) {
	for range n {
		s.poissonAt += s.rng.ExpFloat64() * s.sp.period
	}
	s.nextAt = s.sp.t0 + int64(s.poissonAt)
}

// dispatch releases every slot that is due. The schedule never waits for
// answers: a slot that finds no free connection waits in a bounded queue,
// and one that finds the queue full is dropped and counted.
func (s *shard) dispatch(now int64) {
	sp := s.sp
	if sp.mode == modePlan {
		for s.nextAt+sp.late <= now && s.nextAt < sp.end {
			p := pending{intended: s.nextAt, dispatched: now, obj: s.nextObj, tag: s.nextTag}
			s.plan.Pop()
			s.planNext()
			s.submit(p, now)
		}
		return
	}
	for s.nextAt+sp.late <= now && s.nextAt < sp.end && s.sent < s.quota {
		p := pending{intended: s.nextAt, dispatched: now}
		s.nextSlot += s.stride
		if sp.arrival == Poisson {
			s.poissonStep(s.stride)
		} else {
			s.nextAt = sp.t0 + int64(float64(s.nextSlot)*sp.period)
		}
		s.submit(p, now)
	}
}

// planNext reads the plan's next request into nextAt and nextObj;
// nextAt is past any end when nothing is planned.
func (s *shard) planNext() {
	p, ok := s.plan.Next()
	if !ok {
		s.nextAt = math.MaxInt64
		return
	}
	if p.Obj < 0 || p.Obj >= len(s.sp.reqs) {
		panic(fmt.Sprintf("loadgen: a plan asked for object %d of %d paths", p.Obj, len(s.sp.reqs)))
	}
	s.nextAt, s.nextObj, s.nextTag = s.sp.t0+max(int64(p.At), 0), int32(p.Obj), p.Tag
}

func (s *shard) canSend(now int64) bool {
	return now < s.sp.end && s.sent < s.quota
}

func (s *shard) submit(p pending, now int64) {
	if s.sp.pick != nil {
		// The loop's sends are its slots in order: the draw is the slot's,
		// the same whichever generator sends it.
		p.obj = int32(Draw(s.sp.pick, slotUniform(s.sp.seed, s.first+s.sent*s.stride)))
	}
	s.sent++
	s.m.dispatched++
	record(s.m.lag, p.dispatched-p.intended)
	if c := s.idle.pop(); c != nil {
		s.send(c, p)
		return
	}
	if s.backingOff() {
		// This request becomes the probe, or fails as the last ones did.
		if !s.probing && now >= s.probeAt && s.down > 0 && s.queue.push(p) {
			s.m.recordQueued(s.sp.t0, now)
			c := s.downConn()
			c.probe, s.probing = true, true
			s.startReconnect(c, now)
			return
		}
		d := s.dead
		d.backoff = true
		s.lose(p, d, now)
		return
	}
	if !s.queue.push(p) {
		s.m.dropped++
		s.lose(p, errDetail{kind: errDropped, what: "dropped: all %[1]d connections busy and %[2]d requests already waiting",
			a: int64(len(s.conns)), b: int64(s.queue.n)}, now)
		return
	}
	s.m.recordQueued(s.sp.t0, now)
	s.reopen(now)
}

// payOwed sends closed-loop requests put off while backing off, once a
// connection is free or a probe may start.
func (s *shard) payOwed(now int64) {
	for s.owed > 0 && s.canSend(now) {
		if s.backingOff() && s.idle.size == 0 && (s.probing || now < s.probeAt) {
			return
		}
		s.owed--
		s.submit(pending{intended: now, dispatched: now}, now)
	}
	if !s.canSend(now) {
		s.owed = 0
	}
}

func (s *shard) send(c *conn, p pending) {
	c.req = p
	c.first, c.rx, c.last = 0, 0, 0
	c.woff = 0
	c.resp.reset()
	c.resp.object = p.obj
	s.setState(c, connBusy)
	c.written = nanotime()
	record(s.m.wait, c.written-p.dispatched)
	req := s.sp.reqs[p.obj]
	if c.tc != nil {
		if _, err := c.tc.Write(req); err != nil {
			s.fail(c, errDetail{kind: errIO, what: "tls write", err: err}, c.written)
			return
		}
		if len(c.fc.pending) > 0 {
			s.setOut(c, true)
		}
		return
	}
	s.writeMore(c)
}

func (s *shard) writeMore(c *conn) {
	req := s.sp.reqs[c.req.obj]
	for c.woff < len(req) {
		n, e := rawWrite(c.fd, req[c.woff:])
		switch e {
		case 0:
			c.woff += n
		case unix.EINTR:
		case unix.EAGAIN:
			s.setOut(c, true)
			return
		default:
			s.fail(c, errDetail{kind: errIO, what: "write", errno: e}, nanotime())
			return
		}
	}
	if c.outWait {
		s.setOut(c, false)
	}
}

func (s *shard) onEvent(c *conn, ev uint32) {
	switch c.state {
	case connDown:
		return
	case connConnecting:
		if ev&(unix.EPOLLOUT|unix.EPOLLERR|unix.EPOLLHUP) != 0 {
			s.connected(c, nanotime())
		}
		return
	}
	if ev&unix.EPOLLOUT != 0 && c.state == connBusy {
		if c.tc != nil {
			if done, err := c.fc.flush(); err != nil {
				s.fail(c, errDetail{kind: errIO, what: "tls write", err: err}, nanotime())
				return
			} else if done {
				s.setOut(c, false)
			}
		} else {
			s.writeMore(c)
		}
		if c.state != connBusy {
			return
		}
	}
	if ev&(unix.EPOLLIN|unix.EPOLLRDHUP|unix.EPOLLHUP|unix.EPOLLERR) != 0 {
		if c.tc != nil {
			s.readTLS(c)
		} else {
			s.readPlain(c)
		}
	}
}

// peekRx notes when the first waiting byte of an answer reached the socket.
func (s *shard) peekRx(c *conn) {
	if c.first != 0 || c.state != connBusy {
		return
	}
	if t, ok := s.rx.peek(c.fd); ok {
		c.rx = t - s.realOff
	}
}

func (s *shard) readPlain(c *conn) {
	s.peekRx(c)
	n, e := rawRead(c.fd, s.rbuf)
	now := nanotime()
	switch {
	case e == unix.EAGAIN || e == unix.EINTR:
		return
	case e != 0:
		s.lost(c, errDetail{kind: errIO, what: "read", errno: e}, now)
		return
	case n == 0:
		s.eof(c, now)
		return
	}
	s.received(c, s.rbuf[:n], now)
	s.batchRead = true
}

func (s *shard) readTLS(c *conn) {
	s.peekRx(c)
	for c.tc != nil {
		n, err := c.tc.Read(s.rbuf)
		now := nanotime()
		if n > 0 {
			s.received(c, s.rbuf[:n], now)
			s.batchRead = true
			if c.tc == nil || c.state != connBusy {
				return
			}
		}
		switch {
		case err == nil:
		case err == errWouldBlock:
			return
		case n == 0 && isEOF(err):
			s.eof(c, now)
			return
		default:
			s.lost(c, errDetail{kind: errIO, what: "tls read", err: err}, now)
			return
		}
	}
}

// received feeds bytes read from a connection to its response.
func (s *shard) received(c *conn, p []byte, now int64) {
	if c.state != connBusy {
		// An answer nobody asked for, on an idle connection: a server's
		// 408 before it closes an idle keep-alive connection, say. It is
		// no request's outcome; the connection is closed and stays down
		// until a request needs it.
		s.m.unsolicited++
		s.closeConn(c)
		s.idle.remove(c)
		return
	}
	c.answered = true
	if c.first == 0 {
		// The first byte is stamped with the kernel's receive time of the
		// first waiting segment (SO_TIMESTAMPNS, read with one
		// recvmsg(MSG_PEEK) per answer), else with the batch's wake: the
		// bytes were there by then. Measured with 500 rps of 4 MiB bodies
		// from nginx on this 2-core VM (TestStampDelay, nginx and the test
		// pinned apart): a stamp taken at the read, after the earlier
		// sockets of the batch were read and checked (256 KiB each), was
		// late by p50 26-34 µs, p99 1.2-1.9 ms, max 1.4-2.4 ms for the
		// 4-11% of answers read after others; a stamp at the wake is
		// still late by p50 23 µs (waking the loop), p99 47-194 µs, max
		// 0.1-3.8 ms (answers that arrive while the loop works through a
		// batch wait for the next one). The kernel's stamp leaves
		// neither, for about 3% of the closed loop's requests per
		// CPU-second. It is used only between the write and the wake: a
		// stamp outside (a clock step, or bytes that were waiting before
		// the request, like a 408 on an idle connection) is not this
		// answer's arrival.
		first := s.woke
		if c.rx >= c.written && c.rx <= s.woke {
			record(s.m.rxDelay, s.woke-c.rx)
			first = c.rx
		}
		c.first = max(first, c.written)
		c.rx = 0
		if s.batchRead {
			record(s.m.stampDelay, now-c.first)
		}
		c.last = c.first
	} else {
		// Later bytes have no stamp of their own (one more system call a
		// read): they were there by the wake that read them.
		c.last = max(s.woke, c.first)
	}
	used, done, err := c.resp.feed(p, &s.sp.ex)
	switch {
	case err != nil:
		s.fail(c, s.detail(c, errProtocol), now)
	case done && used < len(p):
		// The answer is complete; what follows answers nothing we asked
		// (a 408 sent as the connection went idle and read together with
		// the answer before it). The answer stands on its own; the extra
		// bytes are counted apart and the connection, whose framing can
		// no longer be trusted, is closed.
		s.m.unsolicited++
		c.resp.close = true
		fallthrough
	case done:
		s.m.bodyBytes += c.resp.bodyRead
		kind := c.resp.verdict(&s.sp.ex)
		if kind == errNone {
			s.finish(c, errDetail{}, now)
		} else {
			s.finish(c, s.detail(c, kind), now)
		}
	}
}

// eof handles a connection the server closed.
func (s *shard) eof(c *conn, now int64) {
	if c.state != connBusy {
		// Closed while idle (a keep-alive timeout): it stays down until a
		// request needs it, so a server that closes every connection at
		// once costs one socket per request, not a reconnect loop.
		s.closeConn(c)
		s.idle.remove(c)
		return
	}
	kind := c.resp.eof(&s.sp.ex)
	c.resp.close = true
	s.m.bodyBytes += c.resp.bodyRead
	if c.first != 0 {
		c.last = max(s.woke, c.first) // a body that ends with the connection ends at its close
	}
	switch kind {
	case errNone:
		s.finish(c, errDetail{}, now)
	case errProtocol:
		s.finish(c, errDetail{kind: errProtocol, what: "connection closed inside the response header"}, now)
	default:
		s.finish(c, s.detail(c, kind), now)
	}
}

// lost handles a reset or failed read.
func (s *shard) lost(c *conn, d errDetail, now int64) {
	if c.state != connBusy {
		s.closeConn(c)
		s.idle.remove(c)
		return
	}
	if c.resp.sawBytes {
		if kind := c.resp.eof(&s.sp.ex); kind != errNone && kind != errIO {
			d = s.detail(c, kind)
		}
	}
	s.fail(c, d, now)
}

// fail ends a request with an error and drops its connection, whose state
// is unknown.
func (s *shard) fail(c *conn, d errDetail, now int64) {
	c.resp.close = true
	s.finish(c, d, now)
}

// finish records a request's outcome (d.kind is errNone for success) and
// puts its connection back to work.
func (s *shard) finish(c *conn, d errDetail, now int64) {
	m := s.m
	m.requests++
	m.lastDone = now
	answered := c.resp.sawBytes
	if st := c.resp.info.Status; st > 0 && st < len(m.status) {
		m.status[st]++
		m.cache[c.resp.info.Cache]++
		m.answered++
		m.recordArrival(s.sp.t0, now)
	}
	if s.g.opts.OnRecord != nil || s.plan != nil {
		s.report(c, d.kind, now)
	}
	switch d.kind {
	case errNone:
		m.ok++
		intended, dispatched := c.req.intended, c.req.dispatched
		record(m.ttfb, c.first-intended)
		record(m.ttfbUnc, c.first-c.written)
		record(m.ttfbDisp, c.first-dispatched)
		record(m.total, now-intended)
		record(m.totalUnc, now-c.written)
		record(m.totalDisp, now-dispatched)
		if s.iv != nil {
			record(s.iv.ttfb, c.first-intended)
			record(s.iv.total, now-intended)
		}
	case errTimeout:
		m.errs[d.kind]++
		s.note(&d)
		s.recordTimeout(c.req.dispatched - c.req.intended)
	default:
		m.errs[d.kind]++
		s.note(&d)
	}
	if c.probe {
		c.probe, s.probing = false, false
	}
	if answered {
		s.alive()
	} else if !c.answered && d.kind == errIO {
		s.died(d, now)
	}
	if c.resp.close {
		s.closeConn(c)
		if answered && s.sending(now) && !s.backingOff() {
			// Closed after an answer (Connection: close): open the next
			// one now, before a request waits for it.
			s.startReconnect(c, now)
		} else {
			s.reopen(now)
		}
	} else {
		s.setState(c, connIdle)
		s.connIdle(c, now)
	}
	if s.sp.mode == modeClosed && s.canSend(now) {
		if s.backingOff() {
			s.owed++
		} else {
			s.submit(pending{intended: now, dispatched: now}, now)
		}
	}
}

// lose records the failure of a request that never reached a connection.
func (s *shard) lose(p pending, d errDetail, now int64) {
	m := s.m
	m.requests++
	m.errs[d.kind]++
	m.lastDone = max(m.lastDone, now)
	s.note(&d)
	if d.kind == errTimeout {
		s.recordTimeout(p.dispatched - p.intended)
	}
	s.reportLost(p, d.kind, now)
	if s.sp.mode == modeClosed {
		s.owed++
	}
}

// note keeps the first few distinct error messages of the pass, counted.
func (s *shard) note(d *errDetail) {
	m := s.m
	for i := range m.nsamples {
		if m.samples[i].d.same(d) {
			m.samples[i].n++
			return
		}
	}
	if m.nsamples < len(m.samples) {
		m.samples[m.nsamples] = sample{d: *d, n: 1}
		m.nsamples++
	}
}

// recordTimeout records a timeout at the timeout value; lag is the
// request's schedule lag, which the from-dispatch figures leave out.
func (s *shard) recordTimeout(lag int64) {
	t := s.sp.timeout
	record(s.m.ttfb, t)
	record(s.m.ttfbUnc, t)
	record(s.m.ttfbDisp, t-lag)
	record(s.m.total, t)
	record(s.m.totalUnc, t)
	record(s.m.totalDisp, t-lag)
	if s.iv != nil {
		record(s.iv.ttfb, t)
		record(s.iv.total, t)
	}
}

// report hands one outcome to Options.OnRecord; c is nil for a request that
// never reached a connection.
func (s *shard) report(c *conn, kind errKind, now int64) {
	rec := Record{}
	var check BodyCheck
	if c != nil {
		rec.Intended = s.g.wallOf(c.req.intended)
		rec.Lag = time.Duration(c.req.dispatched - c.req.intended)
		rec.Object, rec.Tag = int(c.req.obj), c.req.tag
		rec.Status = c.resp.info.Status
		rec.Cache = c.resp.info.Cache
		rec.BodyBytes = c.resp.bodyRead
		check = c.resp.check
		if kind == errNone {
			rec.TTFB = time.Duration(c.first - c.req.intended)
			rec.Total = time.Duration(now - c.req.intended)
		}
	}
	if kind == errTimeout {
		rec.Total = time.Duration(s.sp.timeout)
	}
	if kind != errNone {
		rec.Err = kind.String()
	}
	s.tell(&rec, check, s.arrival(c, kind, now))
}

// arrival is when a request's outcome reached the generator, for a Plan's
// follow-up: the answer's arrival (the first byte's receive stamp for an
// answer read at once, else the wake that read its last bytes), the
// timeout's instant for a timeout, and now for a failure without an
// answer. A follow-up is intended then, as a player would have asked, so
// whatever kept the loop from handling the answer sooner counts against the
// follow-up (its Lag) instead of moving its intended time.
func (s *shard) arrival(c *conn, kind errKind, now int64) int64 {
	switch {
	case kind == errTimeout && c != nil:
		return min(c.req.intended+s.sp.timeout, now)
	case c != nil && c.last != 0:
		return min(c.last, now)
	}
	return now
}

func (s *shard) reportLost(p pending, kind errKind, now int64) {
	if s.g.opts.OnRecord == nil && s.plan == nil {
		return
	}
	rec := Record{Intended: s.g.wallOf(p.intended), Lag: time.Duration(p.dispatched - p.intended), Object: int(p.obj), Tag: p.tag,
		Err: kind.String()}
	at := now
	if kind == errTimeout {
		rec.Total = time.Duration(s.sp.timeout)
		at = min(p.intended+s.sp.timeout, now)
	}
	s.tell(&rec, nil, at)
}

// tell hands an outcome, known at the instant at (see arrival), to the
// pass's plan, which may plan more, and then to Options.OnRecord.
func (s *shard) tell(rec *Record, check BodyCheck, at int64) {
	if s.plan != nil {
		s.plan.Answered(rec, check, time.Duration(at-s.sp.t0))
		s.planNext()
	}
	if s.g.opts.OnRecord != nil {
		s.g.opts.OnRecord(s.id, rec, check)
	}
}

// connIdle gives a free connection the oldest waiting request, or parks it.
func (s *shard) connIdle(c *conn, now int64) {
	if s.queue.n > 0 {
		s.send(c, s.queue.pop())
		return
	}
	s.idle.push(c)
}

// expire ends requests that outlived the timeout, counted from their
// intended send time, queued or in flight.
func (s *shard) expire(now int64) {
	t := s.sp.timeout
	for s.queue.n > 0 && s.queue.peek().intended+t <= now {
		s.lose(s.queue.pop(), errDetail{kind: errTimeout, what: "no free connection within %[1]v of the intended send time",
			a: t, durations: true}, now)
	}
	for _, c := range s.conns {
		switch c.state {
		case connBusy:
			if c.req.intended+t <= now {
				s.fail(c, errDetail{kind: errTimeout, what: "no complete answer within %[1]v of the intended send time",
					a: t, durations: true}, now)
			}
		case connConnecting:
			if c.started+t <= now {
				s.closeConn(c)
				s.connectFailed(c, errDetail{kind: errConnect, what: "connect: no answer within %[1]v", a: t, durations: true}, now)
			}
		}
	}
}

func (s *shard) finished(now int64) bool {
	if s.busy > 0 || s.queue.n > 0 {
		return false
	}
	switch s.sp.mode {
	case modeRate:
		return s.nextAt >= s.sp.end || s.sent >= s.quota
	case modeClosed:
		return !s.canSend(now)
	case modePlan:
		// Nothing in flight can plan more.
		return s.nextAt >= s.sp.end
	}
	return s.sent >= s.quota
}

func (s *shard) waitFor(now int64) int64 {
	w := maxWait
	sp := s.sp
	if sp.mode.paced() && s.nextAt < sp.end && s.sent < s.quota {
		w = min(w, s.nextAt+sp.late-now)
	}
	if s.busy > 0 || s.queue.n > 0 {
		w = min(w, s.expireAt-now)
	}
	if s.iv != nil {
		w = min(w, s.iv.end-now)
	}
	if s.owed > 0 && s.probeAt > now {
		w = min(w, s.probeAt-now)
	}
	return max(w, 0)
}

// interrupt abandons the pass: answers still in flight are not waited for and
// their connections are dropped, since their answers would arrive later.
func (s *shard) interrupt(now int64) {
	s.stopped, s.stopAt = true, now
	for _, c := range s.conns {
		if c.state == connBusy || c.state == connConnecting {
			s.closeConn(c)
		}
	}
	s.queue.reset(s.queue.limit)
	s.owed = 0
}

// pendingQueue is the FIFO of requests waiting for a connection: a ring
// that grows up to its limit and is reused between passes. The limit keeps
// an overload (a rate the server cannot answer) from growing the queue, and
// the time to drain it after the pass, without bound.
type pendingQueue struct {
	buf     []pending
	head, n int
	limit   int
}

func (q *pendingQueue) reset(limit int) {
	q.head, q.n, q.limit = 0, 0, limit
}

// push adds p, or reports false when the queue is at its limit.
func (q *pendingQueue) push(p pending) bool {
	if q.n == len(q.buf) {
		if q.n >= q.limit {
			return false
		}
		buf := make([]pending, min(max(2*len(q.buf), 64), q.limit))
		for i := range q.n {
			buf[i] = q.buf[(q.head+i)%len(q.buf)]
		}
		q.buf, q.head = buf, 0
	}
	q.buf[(q.head+q.n)%len(q.buf)] = p
	q.n++
	return true
}

func (q *pendingQueue) pop() pending {
	p := q.buf[q.head]
	q.head = (q.head + 1) % len(q.buf)
	q.n--
	return p
}

func (q *pendingQueue) peek() *pending { return &q.buf[q.head] }

// idleRing holds the free connections in the order they became free. Sends
// take the one free longest, so every connection of the pool carries its
// share, as a population of clients would, and none sits unused long enough
// for a server's idle or header timeout to close it.
type idleRing struct {
	buf        []*conn
	head, size int
}

func (r *idleRing) reset(n int) {
	if cap(r.buf) < n {
		r.buf = make([]*conn, n)
	}
	r.buf = r.buf[:n]
	r.head, r.size = 0, 0
}

func (r *idleRing) push(c *conn) {
	r.buf[(r.head+r.size)%len(r.buf)] = c
	r.size++
}

func (r *idleRing) pop() *conn {
	if r.size == 0 {
		return nil
	}
	c := r.buf[r.head]
	r.buf[r.head] = nil
	r.head = (r.head + 1) % len(r.buf)
	r.size--
	return c
}

// remove takes out a connection that closed while free (rare).
func (r *idleRing) remove(c *conn) {
	n := r.size
	for i := 0; i < n; i++ {
		x := r.pop()
		if x != c {
			r.push(x)
		}
	}
}

// Popularity is the cumulative distribution of n items' Zipf weights
// 1/(i+1)^s (s 0: uniform), nil for none: Pass.Paths' popularity, and
// any caller's that draws the same way.
func Popularity(n int, s float64) []float64 {
	if n == 0 {
		return nil
	}
	cdf := make([]float64, n)
	sum := 0.0
	for i := range cdf {
		sum += math.Pow(float64(i+1), -s)
		cdf[i] = sum
	}
	for i := range cdf {
		cdf[i] /= sum
	}
	cdf[n-1] = 1
	return cdf
}

// Draw is the index whose cumulative share first passes u (0 ≤ u < 1).
func Draw(cdf []float64, u float64) int {
	lo, hi := 0, len(cdf)-1
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if cdf[mid] > u {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return lo
}

// slotUniform is slot k's draw in [0, 1) for a pass with the given seed:
// a splitmix64 hash of the two, so a slot's object does not depend on
// which generator or event loop sends it.
func slotUniform(seed uint64, k int64) float64 {
	z := seed + uint64(k+1)*0x9e3779b97f4a7c15
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	z ^= z >> 31
	return float64(z>>11) / (1 << 53)
}
