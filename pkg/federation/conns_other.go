//go:build !linux

package federation

import (
	"net"
	"net/netip"
)

// rawAcceptor accepts bare descriptors on Linux only (conns_linux.go);
// elsewhere a ConnLimiter screens the net.Conns of its listener's Accept.
type rawAcceptor struct{}

func newRawAcceptor(net.Listener) *rawAcceptor { return nil }

func (*rawAcceptor) accept() (int, netip.AddrPort, error) { panic("unreachable") }
func (*rawAcceptor) refuse(int)                           {}
func (*rawAcceptor) conn(int) (net.Conn, error)           { panic("unreachable") }
func (*rawAcceptor) close() error                         { return nil }
