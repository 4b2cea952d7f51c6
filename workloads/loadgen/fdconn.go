package loadgen

import (
	"errors"
	"io"
	"net"
	"time"

	"golang.org/x/sys/unix"
)

// fdConn lets crypto/tls run over one of the event loop's non-blocking
// sockets. While blocking is set (the handshake) it waits for the socket
// itself; afterwards a read that would block returns errWouldBlock, which
// crypto/tls treats as temporary: it keeps the partial record and the loop
// calls Read again when epoll says the socket is readable. Writes that would
// block are kept in pending and flushed when the socket is writable.
type fdConn struct {
	fd       int
	blocking bool
	deadline int64 // nanotime; 0 for none
	pending  []byte
	remote   net.Addr
}

type wouldBlock struct{}

func (wouldBlock) Error() string   { return "operation would block" }
func (wouldBlock) Timeout() bool   { return true }
func (wouldBlock) Temporary() bool { return true }

var errWouldBlock net.Error = wouldBlock{}

func isEOF(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
}

func (c *fdConn) Read(p []byte) (int, error) {
	for {
		n, e := rawRead(c.fd, p)
		switch {
		case e == 0 && n == 0:
			return 0, io.EOF
		case e == 0:
			return n, nil
		case e == unix.EINTR:
			continue
		case e == unix.EAGAIN:
			if !c.blocking {
				return 0, errWouldBlock
			}
			if err := waitFD(c.fd, unix.POLLIN, c.deadlineOr()); err != nil {
				return 0, err
			}
		default:
			return 0, e
		}
	}
}

func (c *fdConn) Write(p []byte) (int, error) {
	if len(c.pending) > 0 && !c.blocking {
		c.pending = append(c.pending, p...)
		return len(p), nil
	}
	done := 0
	for done < len(p) {
		n, e := rawWrite(c.fd, p[done:])
		switch {
		case e == 0:
			done += n
		case e == unix.EINTR:
		case e == unix.EAGAIN:
			if !c.blocking {
				c.pending = append(c.pending, p[done:]...)
				return len(p), nil
			}
			if err := waitFD(c.fd, unix.POLLOUT, c.deadlineOr()); err != nil {
				return done, err
			}
		default:
			return done, e
		}
	}
	return done, nil
}

// flush writes what an earlier Write could not; it reports whether all went.
func (c *fdConn) flush() (bool, error) {
	for len(c.pending) > 0 {
		n, e := rawWrite(c.fd, c.pending)
		switch {
		case e == 0:
			c.pending = c.pending[:copy(c.pending, c.pending[n:])]
		case e == unix.EINTR:
		case e == unix.EAGAIN:
			return false, nil
		default:
			return false, e
		}
	}
	return true, nil
}

func (c *fdConn) deadlineOr() int64 {
	if c.deadline == 0 {
		return nanotime() + int64(DefaultTimeout)
	}
	return c.deadline
}

func (c *fdConn) Close() error                     { return nil } // the loop owns the descriptor
func (c *fdConn) LocalAddr() net.Addr              { return nil }
func (c *fdConn) RemoteAddr() net.Addr             { return c.remote }
func (c *fdConn) SetReadDeadline(time.Time) error  { return nil }
func (c *fdConn) SetWriteDeadline(time.Time) error { return nil }
func (c *fdConn) SetDeadline(t time.Time) error {
	if t.IsZero() {
		c.deadline = 0
	} else {
		c.deadline = nanotime() + int64(time.Until(t))
	}
	return nil
}

var _ net.Conn = (*fdConn)(nil)
