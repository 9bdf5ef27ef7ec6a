package api

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"
	"time"

	"github.com/gpurent/gpurent/internal/agentproto"
)

// closedEventually reads c until the server ends the connection; the
// deadline only bounds a failing test.
func closedEventually(t *testing.T, c net.Conn, what string) {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(60 * time.Second))
	_, err := io.Copy(io.Discard, c)
	if errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("%s: the server kept the connection open", what)
	}
}

// TestServerTimeouts: with the server's timeouts (small ones here), a
// request header that never ends and a body that never comes are closed;
// an agent's long poll that outlasts the write timeout still gets its
// whole answer, and so does an upgraded connection (a websocket through
// the port proxy) that outlives the read and write timeouts.
func TestServerTimeouts(t *testing.T) {
	e := newEnvWith(t, envOpts{pollWait: 1500 * time.Millisecond})
	h := e.host("gpu-slow", 1)
	// Behind the API, where the console is, a handler that takes over an
	// upgraded connection and echoes a line once the timeouts are past.
	upgraded := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Upgrade") == "" {
			http.NotFound(w, r)
			return
		}
		conn, rw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			t.Errorf("hijack: %v", err)
			return
		}
		defer conn.Close()
		time.Sleep(500 * time.Millisecond) // past the read and write timeouts
		if _, err := rw.WriteString("HTTP/1.1 101 Switching Protocols\r\nUpgrade: echo\r\nConnection: Upgrade\r\n\r\n"); err != nil {
			return
		}
		if rw.Flush() != nil {
			return
		}
		line, err := rw.ReadString('\n')
		if err != nil {
			return
		}
		_, _ = rw.WriteString("echo " + line)
		_ = rw.Flush()
	})
	api := New(Config{Auth: e.auth, Rental: e.rental, Fleet: e.fleet, Store: e.st, Console: upgraded})
	srv := httptest.NewUnstartedServer(api.Handler())
	Timeouts{ReadHeader: 200 * time.Millisecond, Read: 300 * time.Millisecond, Write: 100 * time.Millisecond}.Apply(srv.Config)
	srv.Start()
	defer srv.Close()
	addr := srv.Listener.Addr().String()

	dial := func() net.Conn {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	// Slowloris: a header that never finishes.
	c := dial()
	fmt.Fprintf(c, "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: a")
	closedEventually(t, c, "an unfinished header")
	// A body announced and never sent.
	c = dial()
	fmt.Fprintf(c, "POST /api/v1/auth/login HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"email\":")
	closedEventually(t, c, "an unfinished body")

	// A long poll outlasts the write timeout and gets its answer.
	d := decode[agentproto.Desired](t, e.do(req{method: "GET", path: agentproto.PathDesired + "?after=0", token: h.token}), 200)
	c = dial()
	fmt.Fprintf(c, "GET %s?after=%d HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n\r\n", agentproto.PathDesired, d.Generation, h.token)
	_ = c.SetReadDeadline(time.Now().Add(60 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("the long poll's answer: %v", err)
	}
	var got agentproto.Desired
	if err := json.NewDecoder(resp.Body).Decode(&got); err != nil || resp.StatusCode != 200 || got.HostID != h.id {
		t.Fatalf("the long poll's answer: %d %+v %v", resp.StatusCode, got, err)
	}
	// An upgraded connection lives on.
	c = dial()
	fmt.Fprintf(c, "GET /ws HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: echo\r\n\r\n")
	_ = c.SetReadDeadline(time.Now().Add(60 * time.Second))
	br := bufio.NewReader(c)
	resp, err = http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("the upgrade: %v %v", resp, err)
	}
	fmt.Fprintf(c, "hello\n")
	if line, err := br.ReadString('\n'); err != nil || line != "echo hello\n" {
		t.Fatalf("the upgraded connection answered %q, %v", line, err)
	}
	// Requests are served as ever.
	r, err := http.Get(srv.URL + "/healthz")
	if err != nil || r.StatusCode != 200 {
		t.Fatalf("healthz: %v %v", r, err)
	}
	r.Body.Close()
}
