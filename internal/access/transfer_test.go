//go:build linux

package access_test

import (
	"context"
	"crypto/subtle"
	"encoding/binary"
	"errors"
	"io"
	"os"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/gpurent/gpurent/internal/access"
)

// echoTransfers admits op/secret and serves transfer channels by echoing
// what they carry, then failing with exit-status 3 and a message.
type echoTransfers struct{}

func (echoTransfers) Authorize(user string, password []byte) (string, bool) {
	ok := user == "op1" && subtle.ConstantTimeCompare(password, []byte("secret")) == 1
	return "grant-" + user, ok
}

func (echoTransfers) ServeChannel(ctx context.Context, grant string, nch ssh.NewChannel) {
	if grant != "grant-op1" || string(nch.ExtraData()) != "volume live" {
		_ = nch.Reject(ssh.Prohibited, "unexpected "+grant+" "+string(nch.ExtraData()))
		return
	}
	ch, reqs, err := nch.Accept()
	if err != nil {
		return
	}
	go ssh.DiscardRequests(reqs)
	_, _ = io.Copy(ch, ch)
	_, _ = ch.Stderr().Write([]byte("boom"))
	_, _ = ch.SendRequest("exit-status", false, binary.BigEndian.AppendUint32(nil, 3))
	_ = ch.Close()
}

func passwordClient(f *fixture, user, password string) (*ssh.Client, error) {
	hostKeys, err := os.ReadFile(f.knownHosts)
	if err != nil {
		f.t.Fatal(err)
	}
	_, _, hostKey, _, _, err := ssh.ParseKnownHosts(hostKeys)
	if err != nil {
		f.t.Fatal(err)
	}
	return ssh.Dial("tcp", f.addr.String(), &ssh.ClientConfig{
		User: user, Auth: []ssh.AuthMethod{ssh.Password(password)},
		HostKeyCallback: ssh.FixedHostKey(hostKey), Timeout: 20 * time.Second,
	})
}

// With Transfers set, a password login decided by it may open transfer
// channels only, each audited with its bytes, exit status and message; a
// key login (the gateway's) still cannot open one.
func TestTransferLogins(t *testing.T) {
	t.Parallel()
	f := newFixture(t, func(c *access.Config) { c.Transfers = echoTransfers{} })

	if _, err := passwordClient(f, "op1", "wrong"); err == nil {
		t.Fatalf("a wrong transfer password logged in")
	}
	if _, err := passwordClient(f, f.instance, "secret"); err == nil {
		t.Fatalf("a password login as an instance succeeded")
	}
	c, err := passwordClient(f, "op1", "secret")
	if err != nil {
		t.Fatalf("transfer login: %v", err)
	}
	defer c.Close()
	if _, err := c.NewSession(); err == nil {
		t.Errorf("a transfer login opened a session")
	}
	ch, reqs, err := c.OpenChannel(access.TransferChannelType, []byte("volume live"))
	if err != nil {
		t.Fatalf("open a transfer channel: %v", err)
	}
	status := make(chan uint32, 1)
	go func() {
		for q := range reqs {
			if q.Type == "exit-status" && len(q.Payload) == 4 {
				status <- binary.BigEndian.Uint32(q.Payload)
			}
		}
		close(status)
	}()
	if _, err := ch.Write([]byte("hello")); err != nil {
		t.Fatal(err)
	}
	_ = ch.CloseWrite()
	got, _ := io.ReadAll(ch)
	msg, _ := io.ReadAll(ch.Stderr())
	if string(got) != "hello" || string(msg) != "boom" || <-status != 3 {
		t.Errorf("transfer channel echoed %q, said %q; want hello, boom, exit 3", got, msg)
	}
	e := f.waitEvent("the transfer's end", func(e access.Event) bool {
		return e.Kind == access.KindTransfer && !e.End.IsZero() && e.Err == "boom"
	})
	if e.Instance != "op1" || e.Command != "volume live" || e.ExitCode != 3 || e.BytesIn != 5 || e.BytesOut != 9 || e.KeyFingerprint != "" {
		t.Errorf("audit of the transfer = %+v", e)
	}
	f.waitEvent("the refused password", func(e access.Event) bool {
		return e.Kind == access.KindTransfer && e.Instance == "op1" && e.Err != "" && e.Command == ""
	})
	f.waitEvent("the refused session", func(e access.Event) bool {
		return e.Kind == access.KindTransfer && e.Command == "session" && e.Err != ""
	})

	// The gateway's key login cannot open a transfer channel.
	kc := goClientAt(t, f, f.addr.String(), f.instance)
	_, _, err = kc.OpenChannel(access.TransferChannelType, []byte("volume live"))
	var oce *ssh.OpenChannelError
	if !errors.As(err, &oce) || oce.Reason != ssh.UnknownChannelType {
		t.Errorf("transfer channel on a key login: %v, want refused as an unknown type", err)
	}
}

// Without Transfers no password login is offered at all.
func TestNoPasswordWithoutTransfers(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	if c, err := passwordClient(f, f.instance, "anything"); err == nil {
		c.Close()
		t.Fatalf("a password login succeeded without Transfers")
	}
}
