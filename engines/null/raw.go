package null

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// The event loop's sockets are non-blocking, so its reads and writes never
// wait in the kernel: they are made as raw system calls, without telling
// the Go scheduler (unix.Read would hand the thread's P off and take it
// back around every call, a cost paid twice per request).

func rawRead(fd int, p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	n, _, e := unix.RawSyscall(unix.SYS_READ, uintptr(fd), uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
	if e != 0 {
		return 0, e
	}
	return int(n), nil
}

// rawWritev writes the pieces in iov (set from bufs, at most len(iov)).
func rawWritev(fd int, bufs [][]byte, iov []unix.Iovec) (int, error) {
	k := 0
	for _, b := range bufs {
		if k == len(iov) {
			break
		}
		if len(b) == 0 {
			continue
		}
		iov[k].Base = &b[0]
		iov[k].SetLen(len(b))
		k++
	}
	if k == 0 {
		return 0, nil
	}
	n, _, e := unix.RawSyscall(unix.SYS_WRITEV, uintptr(fd), uintptr(unsafe.Pointer(&iov[0])), uintptr(k))
	clear(iov[:k]) // no pointer into an answer outlives the call
	if e != 0 {
		return 0, e
	}
	return int(n), nil
}

// pollNow returns the events ready now, without blocking: while the loop
// is busy it finds the next events without entering the scheduler; only an
// idle loop blocks in unix.EpollWait, which lets the runtime use its P.
func pollNow(ep int, events []unix.EpollEvent) int {
	n, _, e := unix.RawSyscall6(unix.SYS_EPOLL_PWAIT, uintptr(ep), uintptr(unsafe.Pointer(&events[0])), uintptr(len(events)), 0, 0, 0)
	if e != 0 {
		return 0
	}
	return int(n)
}
