//go:build linux

package federation

import (
	"net"
	"net/netip"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// rawAcceptor accepts a TCP listener's connections as bare descriptors,
// through the runtime's poller, so that a ConnLimiter can refuse one
// before the runtime, TLS or HTTP/2 allocate anything for it. It holds a
// duplicate of the listener's descriptor as a pollable *os.File (a
// listener's own syscall.RawConn cannot wait for readability: its Read
// returns EINVAL), so the listening socket lives until both are closed
// (ConnLimiter.Close).
type rawAcceptor struct {
	f  *os.File
	rc syscall.RawConn
}

// newRawAcceptor returns the raw acceptor of lis, or nil if lis is not a
// *net.TCPListener or its descriptor cannot be duplicated (then the
// ConnLimiter screens the net.Conns of lis.Accept instead).
func newRawAcceptor(lis net.Listener) *rawAcceptor {
	tl, ok := lis.(*net.TCPListener)
	if !ok {
		return nil
	}
	sc, err := tl.SyscallConn()
	if err != nil {
		return nil
	}
	dup := -1
	if sc.Control(func(fd uintptr) { dup, _ = unix.FcntlInt(fd, unix.F_DUPFD_CLOEXEC, 0) }) != nil || dup < 0 {
		return nil
	}
	if unix.SetNonblock(dup, true) != nil {
		unix.Close(dup)
		return nil
	}
	f := os.NewFile(uintptr(dup), "listener") // non-blocking: registered with the poller
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return nil
	}
	return &rawAcceptor{f: f, rc: rc}
}

// close closes the duplicate descriptor, waking a blocked accept.
func (r *rawAcceptor) close() error { return r.f.Close() }

// accept waits for the next connection and returns its descriptor
// (blocking mode, close-on-exec) and the peer's address. An error is the
// listener's (closed) or accept4's (as an *os.SyscallError, whose
// Temporary tells the gRPC server to back off and retry, e.g. on EMFILE).
func (r *rawAcceptor) accept() (int, netip.AddrPort, error) {
	for {
		var fd int
		var sa unix.Sockaddr
		var aerr error
		err := r.rc.Read(func(lfd uintptr) bool {
			for {
				fd, sa, aerr = unix.Accept4(int(lfd), unix.SOCK_CLOEXEC)
				switch aerr {
				case unix.EINTR, unix.ECONNABORTED, unix.EAFNOSUPPORT:
					// Interrupted, or a connection gone before it was
					// accepted, or one whose address unix.Accept4 cannot
					// read (it closed the descriptor): the next one.
					continue
				case unix.EAGAIN:
					return false // wait until the listener is readable
				}
				return true
			}
		})
		switch {
		case err != nil:
			return -1, netip.AddrPort{}, err
		case aerr != nil:
			return -1, netip.AddrPort{}, os.NewSyscallError("accept4", aerr)
		}
		switch sa := sa.(type) {
		case *unix.SockaddrInet4:
			return fd, netip.AddrPortFrom(netip.AddrFrom4(sa.Addr), uint16(sa.Port)), nil
		case *unix.SockaddrInet6:
			// Unmapped: a dual-stack listener's IPv4 peers are IPv4.
			return fd, netip.AddrPortFrom(netip.AddrFrom16(sa.Addr).Unmap(), uint16(sa.Port)), nil
		}
		unix.Close(fd) // not an IP connection: cannot come from a TCP listener
	}
}

// refuse resets (SO_LINGER 0: no TIME_WAIT socket is left behind) and
// closes a refused connection's descriptor.
func (r *rawAcceptor) refuse(fd int) {
	unix.SetsockoptLinger(fd, unix.SOL_SOCKET, unix.SO_LINGER, &unix.Linger{Onoff: 1, Linger: 0})
	unix.Close(fd)
}

// conn makes an admitted descriptor a net.Conn (a *net.TCPConn, with the
// runtime's defaults: no Nagle delay, TCP keep-alive), closing fd.
func (r *rawAcceptor) conn(fd int) (net.Conn, error) {
	f := os.NewFile(uintptr(fd), "")
	defer f.Close()
	return net.FileConn(f)
}
