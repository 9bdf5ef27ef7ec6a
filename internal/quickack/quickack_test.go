package quickack_test

import (
	"io"
	"net"
	"testing"

	"github.com/gpurent/gpurent/internal/quickack"
)

// TestWrapPassesDataThrough: a wrapped TCP connection reads what was sent,
// before and after done; a connection without a socket is left as is.
func TestWrapPassesDataThrough(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		c.Write([]byte("handshake"))
		c.Write([]byte("+session"))
	}()
	nc, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	w, done := quickack.Wrap(nc)
	buf := make([]byte, len("handshake"))
	if _, err := io.ReadFull(w, buf); err != nil || string(buf) != "handshake" {
		t.Fatalf("during the handshake: %q %v", buf, err)
	}
	done()
	rest, err := io.ReadAll(w)
	if err != nil || string(rest) != "+session" {
		t.Fatalf("after it: %q %v", rest, err)
	}
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	if got, _ := quickack.Wrap(a); got != a {
		t.Errorf("a pipe was wrapped")
	}
}
