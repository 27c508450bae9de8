package testnet

import (
	"io"
	"net"
	"testing"
)

// What the client sends reaches the server through the relay, the
// server's answer comes back, and each side's end is passed on: the
// server reads to EOF, the client then reads the answer to EOF.
func TestRelay(t *testing.T) {
	t.Parallel()
	srv := Serve(t, func(c net.Conn) {
		got, err := io.ReadAll(c)
		if err != nil {
			return
		}
		_, _ = c.Write(append([]byte("got "), got...))
	})
	c, err := net.Dial("tcp", Relay(t, srv).String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write([]byte("hello")); err != nil {
		t.Fatal(err)
	}
	if err := c.(*net.TCPConn).CloseWrite(); err != nil {
		t.Fatal(err)
	}
	answer, err := io.ReadAll(c)
	if err != nil || string(answer) != "got hello" {
		t.Fatalf("through the relay: %q, %v", answer, err)
	}
}
