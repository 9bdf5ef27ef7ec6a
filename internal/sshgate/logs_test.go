package sshgate_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/agentproto"
)

// logSource is the stand-in agent's side of agentproto.LogsSubsystem, per
// the contract: the session's user is the instance; one LogsRequest line
// in JSON; the output until the end (exit-status 0) or an error (a line
// on stderr, exit-status 1).
type logSource struct {
	mu    sync.Mutex
	lines map[string][]string // by instance
	more  chan string         // followed output, for every follower
	asked []agentproto.LogsRequest
	users []string
	ended chan struct{} // closed when a follow stream ended
}

func (l *logSource) serve(user string, ch ssh.Channel) {
	defer ch.Close()
	fail := func(msg string) {
		_, _ = io.WriteString(ch.Stderr(), msg+"\n")
		_ = ch.CloseWrite()
		_, _ = ch.SendRequest("exit-status", false, ssh.Marshal(struct{ Status uint32 }{1}))
	}
	line, err := bufio.NewReader(ch).ReadString('\n')
	var req agentproto.LogsRequest
	if err != nil || json.Unmarshal([]byte(line), &req) != nil {
		fail("bad logs request")
		return
	}
	l.mu.Lock()
	l.asked = append(l.asked, req)
	l.users = append(l.users, user)
	out, ok := l.lines[user]
	l.mu.Unlock()
	if !ok {
		fail("instance " + user + " has no container")
		return
	}
	if req.Tail > 0 && len(out) > req.Tail {
		out = out[len(out)-req.Tail:]
	}
	for _, s := range out {
		if _, err := io.WriteString(ch, s+"\n"); err != nil {
			return
		}
	}
	if req.Follow {
		defer close(l.ended)
		for s := range l.more {
			if _, err := io.WriteString(ch, s+"\n"); err != nil {
				return // the gateway went away
			}
		}
	}
	_ = ch.CloseWrite()
	_, _ = ch.SendRequest("exit-status", false, ssh.Marshal(struct{ Status uint32 }{0}))
}

func newLogSource() *logSource {
	return &logSource{
		lines: map[string][]string{instA: {"booting", "epoch 1 loss 0.9", "epoch 2 loss 0.5"}, instB: {"b's secret"}},
		more:  make(chan string),
		ended: make(chan struct{}),
	}
}

// TestLogsThroughGateway: the gateway asks the instance's agent for its
// logs over its own key with the contract's request, answers the output,
// ends at the stream's end, follows until the reader goes, and refuses
// what Directory refuses (another account's instance, a stopped one)
// without reaching the agent.
func TestLogsThroughGateway(t *testing.T) {
	h := newHarness(t, nil)
	h.agent.logs = newLogSource()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()

	since := time.Date(2026, 12, 2, 3, 4, 5, 0, time.UTC)
	r, err := h.gw.Logs(ctx, accountA, instA, agentproto.LogsRequest{Tail: 2, Since: since})
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(r)
	r.Close()
	if err != nil || string(b) != "epoch 1 loss 0.9\nepoch 2 loss 0.5\n" {
		t.Fatalf("tail 2: %q %v", b, err)
	}
	src := h.agent.logs
	src.mu.Lock()
	if len(src.asked) != 1 || src.asked[0].Tail != 2 || !src.asked[0].Since.Equal(since) || src.asked[0].Follow || src.users[0] != instA {
		t.Errorf("the agent was asked %+v as %v", src.asked, src.users)
	}
	src.mu.Unlock()

	// Follow: what comes later arrives; closing the reader ends the
	// agent's stream.
	r, err = h.gw.Logs(ctx, accountA, instA, agentproto.LogsRequest{Follow: true})
	if err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(r)
	for _, want := range []string{"booting", "epoch 1 loss 0.9", "epoch 2 loss 0.5"} {
		if got, err := br.ReadString('\n'); err != nil || got != want+"\n" {
			t.Fatalf("followed %q %v, want %q", got, err, want)
		}
	}
	src.more <- "epoch 3 loss 0.2"
	if got, err := br.ReadString('\n'); err != nil || got != "epoch 3 loss 0.2\n" {
		t.Fatalf("new output %q %v", got, err)
	}
	r.Close()
	deadline := time.After(testTimeout)
	for done := false; !done; {
		select {
		case src.more <- "after the reader went":
		case <-src.ended:
			done = true
		case <-deadline:
			t.Fatal("the agent's follow stream did not end after the reader closed")
		}
	}

	// The agent's error is the reader's last error.
	src.mu.Lock()
	delete(src.lines, instA)
	src.mu.Unlock()
	r, err = h.gw.Logs(ctx, accountA, instA, agentproto.LogsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = io.ReadAll(r)
	r.Close()
	if err == nil || !strings.Contains(err.Error(), "has no container") {
		t.Errorf("the agent's error came back as %v", err)
	}

	// Refused before the agent: another account's instance, a stopped one.
	src.mu.Lock()
	n := len(src.asked)
	src.mu.Unlock()
	if _, err := h.gw.Logs(ctx, accountA, instB, agentproto.LogsRequest{}); !gpurent.IsCode(err, gpurent.CodeForbidden) &&
		!gpurent.IsCode(err, gpurent.CodeNotFound) {
		t.Errorf("another account's instance: %v", err)
	}
	if _, err := h.gw.Logs(ctx, accountA, instStop, agentproto.LogsRequest{}); !gpurent.IsCode(err, gpurent.CodeConflict) {
		t.Errorf("a stopped instance: %v", err)
	}
	if _, err := h.gw.Logs(ctx, accountA, instDown, agentproto.LogsRequest{}); !gpurent.IsCode(err, gpurent.CodeUnavailable) {
		t.Errorf("an unreachable host: %v", err)
	}
	src.mu.Lock()
	if len(src.asked) != n {
		t.Errorf("refused asks reached the agent: %+v", src.asked[n:])
	}
	src.mu.Unlock()

	// An agent without the subsystem: a clear error.
	h.agent.logs = nil
	if _, err := h.gw.Logs(ctx, accountA, instA, agentproto.LogsRequest{}); !gpurent.IsCode(err, gpurent.CodeUnavailable) ||
		!strings.Contains(err.Error(), "serves no logs") {
		t.Errorf("an agent without logs: %v", err)
	}
}

// TestCustomerCannotAskForLogsSubsystem: a customer's SSH session may not
// ask the agent for the platform's logs subsystem (it would read any
// instance's logs the agent serves to the gateway's key): the gateway
// refuses it, in any spelling of the namespace, without relaying it.
func TestCustomerCannotAskForLogsSubsystem(t *testing.T) {
	h := newHarness(t, nil)
	h.agent.logs = newLogSource()
	c := h.mustGoClient(h.ownerSig, instA)
	for _, name := range []string{agentproto.LogsSubsystem, strings.ToUpper(agentproto.LogsSubsystem), "other@gpurent.dev"} {
		s, err := c.NewSession()
		if err != nil {
			t.Fatal(err)
		}
		err = s.RequestSubsystem(name)
		s.Close()
		if err == nil {
			t.Errorf("the gateway relayed a customer's request for subsystem %q", name)
		}
	}
	// A malformed subsystem request is refused too.
	ch, reqs, err := c.OpenChannel("session", nil)
	if err != nil {
		t.Fatal(err)
	}
	go ssh.DiscardRequests(reqs)
	if ok, err := ch.SendRequest("subsystem", true, []byte{0, 0}); ok && err == nil {
		t.Error("a malformed subsystem request was accepted")
	}
	ch.Close()
	if n := h.agent.logsAsked.Load(); n != 0 {
		t.Errorf("the agent was asked for the logs subsystem %d times through customers' sessions", n)
	}
	// sftp still goes through.
	s, err := c.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.RequestSubsystem("sftp"); err != nil {
		t.Errorf("sftp refused: %v", err)
	}
}

// TestLogsContextEndsAnyTime: a caller's context that ends while Logs is
// still setting the stream up (a browser that went away) closes the
// stream cleanly: no race (run under -race; a CI run caught one between
// the close on the context's end and the registration of that close), no
// leaked agent connection.
func TestLogsContextEndsAnyTime(t *testing.T) {
	h := newHarness(t, nil)
	h.agent.logs = newLogSource()
	for i := range 40 {
		ctx, cancel := context.WithCancel(context.Background())
		go func() {
			time.Sleep(time.Duration(i%8) * 100 * time.Microsecond)
			cancel()
		}()
		r, err := h.gw.Logs(ctx, accountA, instA, agentproto.LogsRequest{})
		if err == nil {
			_, _ = io.Copy(io.Discard, r)
			r.Close()
		}
		cancel()
	}
	// The pool still serves: a fresh read works.
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	r, err := h.gw.Logs(ctx, accountA, instA, agentproto.LogsRequest{Tail: 1})
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(r)
	r.Close()
	if err != nil || string(b) != "epoch 2 loss 0.5\n" {
		t.Fatalf("after the cancelled reads: %q %v", b, err)
	}
}
