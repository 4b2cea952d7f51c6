package loadgen

import (
	"net"
	"strconv"
	"time"
	"unsafe"
	_ "unsafe" // for go:linkname

	"golang.org/x/sys/unix"
)

// nanotime is the runtime's monotonic clock: one vDSO call, no wall clock.
//
//go:linkname nanotime runtime.nanotime
func nanotime() int64

// The event loop runs on a locked OS thread and calls the kernel directly,
// with raw system calls: the Go runtime never sees the thread enter or leave
// one. Reads and writes are on non-blocking sockets and never block, and
// entersyscall/exitsyscall around each would cost more than the calls.
//
// The wait blocks. A loop runs one goroutine for a whole pass without
// passing through the scheduler, so every 10 ms the runtime's monitor
// (sysmon) finds the same goroutine on the loop's P. In an ordinary system
// call the loop lets sysmon take that P and hand it to other goroutines
// while it waits: what an unpinned generator sharing its process with
// servers (the inproc runtime, tests) needs, since the servers would
// otherwise have only the spare P. But after taking a P sysmon goes back to
// checking every 20 µs for a millisecond or more, and where the whole
// process is pinned to the generator's CPU it runs there. Measured with
// live-audience at 1000 viewers: sysmon ran ~4,000 times a second for 4.5 %
// of that CPU, beside 13-18 % for the loop, and the loop was switched out
// ~450 times a second; with raw waits, ~100 and 0.3 %, and ~60. So a loop
// pinned to a CPU of its own (Options.CPUs) waits with a raw system call:
// its P is never taken, sysmon's preemption request is a signal that ends
// the wait with EINTR, and the loop yields at its next function call like
// any running goroutine (a stop-the-world for the garbage collector reaches
// it the same way; without signals, GODEBUG=asyncpreemptoff=1, it waits for
// the wait's end, at most maxWait). The generator keeps one P more than it
// has loops (see New), so the rest of the process runs on the spare P.

func rawRead(fd int, p []byte) (int, unix.Errno) {
	n, _, e := unix.RawSyscall(unix.SYS_READ, uintptr(fd), uintptr(unsafe.Pointer(unsafe.SliceData(p))), uintptr(len(p)))
	return int(n), e
}

func rawWrite(fd int, p []byte) (int, unix.Errno) {
	n, _, e := unix.RawSyscall(unix.SYS_WRITE, uintptr(fd), uintptr(unsafe.Pointer(unsafe.SliceData(p))), uintptr(len(p)))
	return int(n), e
}

// epollWait waits up to d (negative: forever) with nanosecond precision
// (epoll_pwait2, Linux 5.11+), as a raw system call if raw.
func epollWait(epfd int, events []unix.EpollEvent, d int64, raw bool) (int, unix.Errno) {
	var ts *unix.Timespec // nil: no timeout
	if d >= 0 {
		t := unix.NsecToTimespec(d)
		ts = &t
	}
	var n uintptr
	var e unix.Errno
	if raw {
		n, _, e = unix.RawSyscall6(unix.SYS_EPOLL_PWAIT2, uintptr(epfd),
			uintptr(unsafe.Pointer(unsafe.SliceData(events))), uintptr(len(events)), uintptr(unsafe.Pointer(ts)), 0, 0)
	} else {
		n, _, e = unix.Syscall6(unix.SYS_EPOLL_PWAIT2, uintptr(epfd),
			uintptr(unsafe.Pointer(unsafe.SliceData(events))), uintptr(len(events)), uintptr(unsafe.Pointer(ts)), 0, 0)
	}
	return int(n), e
}

// threadCPU is the calling thread's user+system CPU time.
func threadCPU() time.Duration {
	var ru unix.Rusage
	if unix.Getrusage(unix.RUSAGE_THREAD, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// cpuSetBits is how many CPUs an affinity mask can name: a larger number
// would be dropped from it silently.
const cpuSetBits = 8 * int(unsafe.Sizeof(unix.CPUSet{}))

// currentCPU is the CPU the calling thread runs on (-1 if unknown).
func currentCPU() int {
	var cpu uint32
	if _, _, e := unix.RawSyscall(unix.SYS_GETCPU, uintptr(unsafe.Pointer(&cpu)), 0, 0); e != 0 {
		return -1
	}
	return int(cpu)
}

// processCPU is the whole process's user+system CPU time.
func processCPU() time.Duration {
	var ru unix.Rusage
	if unix.Getrusage(unix.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// preciseTimers asks the kernel to wake this thread within 1 ns of its
// deadlines instead of the default 50 µs timer slack.
func preciseTimers() {
	_ = unix.Prctl(unix.PR_SET_TIMERSLACK, 1, 0, 0, 0)
}

func sockaddr(ip net.IP, port string) (unix.Sockaddr, int, error) {
	p, err := strconv.Atoi(port)
	if err != nil {
		return nil, 0, err
	}
	if ip4 := ip.To4(); ip4 != nil {
		sa := &unix.SockaddrInet4{Port: p}
		copy(sa.Addr[:], ip4)
		return sa, unix.AF_INET, nil
	}
	sa := &unix.SockaddrInet6{Port: p}
	copy(sa.Addr[:], ip.To16())
	return sa, unix.AF_INET6, nil
}

// copySockaddr returns a copy of an address made by sockaddr.
func copySockaddr(sa unix.Sockaddr) unix.Sockaddr {
	switch a := sa.(type) {
	case *unix.SockaddrInet4:
		c := *a
		return &c
	case *unix.SockaddrInet6:
		c := *a
		return &c
	}
	return sa
}

// startConnect opens a non-blocking socket and starts connecting; done is
// true when the connection completed at once.
func startConnect(sa unix.Sockaddr, family int) (fd int, done bool, err error) {
	fd, err = unix.Socket(family, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, false, err
	}
	_ = unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_NODELAY, 1)
	// The kernel stamps every segment it receives for this socket; rxPeek
	// reads the stamp of the first waiting byte (see received).
	_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_TIMESTAMPNS, 1)
	err = unix.Connect(fd, sa)
	switch err {
	case nil:
		return fd, true, nil
	case unix.EINPROGRESS:
		return fd, false, nil
	}
	unix.Close(fd)
	return -1, false, err
}

// connectResult reads the outcome of a non-blocking connect.
func connectResult(fd int) error {
	v, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_ERROR)
	if err != nil {
		return err
	}
	if v != 0 {
		return unix.Errno(v)
	}
	return nil
}

// waitFD polls one descriptor for events until the deadline (ns, nanotime).
func waitFD(fd int, events int16, deadline int64) error {
	for {
		left := deadline - nanotime()
		if left <= 0 {
			return unix.ETIMEDOUT
		}
		ms := int((left + 999_999) / 1_000_000)
		fds := []unix.PollFd{{Fd: int32(fd), Events: events}}
		n, err := unix.Poll(fds, ms)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return err
		}
		if n > 0 {
			return nil
		}
	}
}

// dialBlocking connects before the run starts, waiting up to timeout.
func dialBlocking(sa unix.Sockaddr, family int, timeout time.Duration) (int, error) {
	fd, done, err := startConnect(sa, family)
	if err != nil {
		return -1, err
	}
	if !done {
		if err := waitFD(fd, unix.POLLOUT, nanotime()+int64(timeout)); err != nil {
			unix.Close(fd)
			return -1, err
		}
		if err := connectResult(fd); err != nil {
			unix.Close(fd)
			return -1, err
		}
	}
	return fd, nil
}

// rxPeek reads the kernel's receive time of the first byte waiting in a
// socket (SO_TIMESTAMPNS, CLOCK_REALTIME nanoseconds) without consuming it:
// one recvmsg of one byte with MSG_PEEK, which only looks at the first
// queued segment. Its buffers live in the shard, so it allocates nothing.
type rxPeek struct {
	b   [1]byte
	iov unix.Iovec
	msg unix.Msghdr
	oob [64]byte
}

func (p *rxPeek) peek(fd int) (int64, bool) {
	p.iov.Base = &p.b[0]
	p.iov.SetLen(1)
	p.msg = unix.Msghdr{Iov: &p.iov, Iovlen: 1, Control: &p.oob[0]}
	p.msg.SetControllen(len(p.oob))
	_, _, e := unix.RawSyscall(unix.SYS_RECVMSG, uintptr(fd), uintptr(unsafe.Pointer(&p.msg)), unix.MSG_PEEK|unix.MSG_DONTWAIT)
	if e != 0 {
		return 0, false
	}
	n := int(p.msg.Controllen)
	for off := 0; off+unix.SizeofCmsghdr <= n; {
		h := (*unix.Cmsghdr)(unsafe.Pointer(&p.oob[off]))
		l := int(h.Len)
		if l < unix.SizeofCmsghdr || off+l > n {
			break
		}
		if h.Level == unix.SOL_SOCKET && h.Type == unix.SCM_TIMESTAMPNS && l >= unix.SizeofCmsghdr+int(unsafe.Sizeof(unix.Timespec{})) {
			ts := (*unix.Timespec)(unsafe.Pointer(&p.oob[off+unix.SizeofCmsghdr]))
			return ts.Nano(), true
		}
		off += (l + 7) &^ 7
	}
	return 0, false
}
