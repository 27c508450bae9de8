// Package testnet holds the loopback TCP servers that the tests and
// benchmarks of exec and netproxy share: a server that hands each
// connection to a function, and a bare relay. Only tests import it.
package testnet

import (
	"io"
	"net"
	"net/netip"
	"testing"
)

// Serve runs handle for every connection to a listener on 127.0.0.1, and
// closes the connection when handle returns. The listener closes when
// the test ends.
func Serve(tb testing.TB, handle func(net.Conn)) netip.AddrPort {
	tb.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				handle(c)
			}()
		}
	}()
	return netip.MustParseAddrPort(l.Addr().String())
}

// Relay relays each connection to target, both ways, with io.Copy and
// nothing in between (each side's end passed on as a half close): the
// floor of a proxy in user space on this machine.
func Relay(tb testing.TB, target netip.AddrPort) netip.AddrPort {
	tb.Helper()
	return Serve(tb, func(c net.Conn) {
		r, err := net.Dial("tcp", target.String())
		if err != nil {
			return
		}
		defer r.Close()
		done := make(chan struct{})
		go func() {
			_, _ = io.Copy(c, r)
			closeWrite(c)
			close(done)
		}()
		_, _ = io.Copy(r, c)
		closeWrite(r)
		<-done
	})
}

// closeWrite ends c's sending side, or all of c where it cannot half
// close.
func closeWrite(c net.Conn) {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
		return
	}
	_ = c.Close()
}
