//go:build linux

package access_test

import (
	"bufio"
	"net"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/gpurent/gpurent/internal/access"
)

// TestLimitsPerAddressAndInstance: connections that never authenticate
// (a container that reaches the server) hold only their address's few
// handshake slots, and one instance's connections and channels only its
// own share, so the gateway still reaches every instance.
func TestLimitsPerAddressAndInstance(t *testing.T) {
	t.Parallel()
	f := newFixture(t, func(c *access.Config) {
		c.MaxHandshakesPerAddr = 3
		c.MaxConnectionsPerInstance = 2
		c.MaxChannelsPerInstance = 3
		c.HandshakeTimeout = 10 * time.Minute // the held handshakes never time out during the test
	})
	other := f.runInstance()

	// A "container" at 127.0.0.2 opens connections and never authenticates.
	stranger := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2)}, Timeout: 20 * time.Second}
	banner := func(nc net.Conn) (string, error) {
		_ = nc.SetReadDeadline(time.Now().Add(30 * time.Second))
		return bufio.NewReader(nc).ReadString('\n')
	}
	for i := range 3 {
		nc, err := stranger.Dial("tcp", f.addr.String())
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		// The banner says the server took this connection's slot.
		if line, err := banner(nc); err != nil || !strings.HasPrefix(line, "SSH-2.0-") {
			t.Fatalf("held connection %d: banner %q, %v", i, line, err)
		}
	}
	nc, err := stranger.Dial("tcp", f.addr.String())
	if err != nil {
		t.Fatal(err)
	}
	if line, err := banner(nc); err == nil {
		t.Errorf("a 4th unauthenticated connection from one address got %q; want it closed", line)
	}
	nc.Close()

	// The gateway (another address) still gets in, twice per instance.
	a1 := goClient(t, f, f.instance)
	a2 := goClient(t, f, f.instance)
	for i, c := range []*ssh.Client{a1, a2} {
		if _, err := c.NewSession(); err != nil {
			t.Fatalf("session on connection %d to the instance: %v", i+1, err)
		}
	}
	// A third connection to the same instance is closed at once.
	if a3, err := goDial(t, f, f.addr.String(), f.instance); err == nil {
		if _, err := a3.NewSession(); err == nil {
			t.Errorf("a 3rd connection to one instance opened a session; want it refused")
		}
	}
	// Channels: the instance holds 2 of its 3; a 3rd opens, a 4th not.
	if _, err := a2.NewSession(); err != nil {
		t.Fatalf("3rd channel of the instance: %v", err)
	}
	if _, err := a2.NewSession(); err == nil || !strings.Contains(err.Error(), "too many channels") {
		t.Errorf("4th channel of the instance: %v; want too many channels", err)
	}
	// Another instance is not starved by any of it.
	b := goClient(t, f, other)
	s, err := b.NewSession()
	if err != nil {
		t.Fatalf("session to another instance: %v", err)
	}
	out, err := s.Output("echo other")
	if err != nil || string(out) != "other\n" {
		t.Errorf("command in another instance: %q %v", out, err)
	}
}
