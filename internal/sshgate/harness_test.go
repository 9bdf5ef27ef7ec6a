package sshgate_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/sshgate"
	"github.com/gpurent/gpurent/internal/testtier"
	"golang.org/x/crypto/ssh"
)

// testTimeout bounds every external command and every wait of these tests.
const testTimeout = 60 * time.Second

func newKey(t testing.TB) (ed25519.PrivateKey, ssh.Signer) {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	s, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	return priv, s
}

func newSigner(t testing.TB) ssh.Signer {
	_, s := newKey(t)
	return s
}

// writeKey stores priv where OpenSSH's -i can read it.
func writeKey(t testing.TB, dir, name string, priv ed25519.PrivateKey) string {
	t.Helper()
	block, err := ssh.MarshalPrivateKey(priv, name)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, pem.EncodeToMemory(block), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// memDirectory is the Directory the lead implements over the store, kept in
// memory here: accounts' keys and instances with their state.
type memDirectory struct {
	mu        sync.Mutex
	keys      map[string]string // marshalled public key → account
	instances map[string]*memInstance
	used      map[string]int // marshalled public key → KeyUsed calls
}

// KeyUsed counts the gateway's reports of a key's proven use.
func (d *memDirectory) KeyUsed(_ context.Context, _ string, key ssh.PublicKey) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.used == nil {
		d.used = map[string]int{}
	}
	d.used[string(key.Marshal())]++
	return nil
}

func (d *memDirectory) usedCount(key ssh.PublicKey) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.used[string(key.Marshal())]
}

type memInstance struct {
	account string
	running bool
	addr    string
	hostKey ssh.PublicKey
}

func (d *memDirectory) AccountForKey(_ context.Context, _ string, key ssh.PublicKey) (string, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if a, ok := d.keys[string(key.Marshal())]; ok {
		return a, nil
	}
	return "", gpurent.Errorf(gpurent.CodeNotFound, "unknown key")
}

func (d *memDirectory) Target(_ context.Context, account, instance string) (sshgate.Target, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	in, ok := d.instances[instance]
	if !ok {
		return sshgate.Target{}, gpurent.Errorf(gpurent.CodeNotFound, "instance %s not found", instance)
	}
	if in.account != account {
		// A store would rather say not_found; forbidden must look the same.
		return sshgate.Target{}, gpurent.Errorf(gpurent.CodeForbidden, "instance %s belongs to another account", instance)
	}
	if !in.running {
		return sshgate.Target{}, gpurent.Errorf(gpurent.CodeConflict, "instance %s is not running: it is stopped", instance)
	}
	return sshgate.Target{Addr: in.addr, HostKey: in.hostKey, InstanceID: instance, AccountID: account}, nil
}

// auditLog collects the gateway's records.
type auditLog struct {
	mu      sync.Mutex
	records []sshgate.Record
	changed chan struct{}
}

func (l *auditLog) add(_ context.Context, r sshgate.Record) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.records = append(l.records, r)
	close(l.changed)
	l.changed = make(chan struct{})
}

// wait returns the first record that match accepts, waiting for it.
func (l *auditLog) wait(t testing.TB, what string, match func(sshgate.Record) bool) sshgate.Record {
	t.Helper()
	deadline := time.NewTimer(testTimeout)
	defer deadline.Stop()
	for {
		l.mu.Lock()
		for _, r := range l.records {
			if match(r) {
				l.mu.Unlock()
				return r
			}
		}
		ch := l.changed
		l.mu.Unlock()
		select {
		case <-ch:
		case <-deadline.C:
			l.mu.Lock()
			defer l.mu.Unlock()
			t.Fatalf("no audit record %s among %+v", what, l.records)
		}
	}
}

const (
	accountA = "acc-a"
	accountB = "acc-b"
	instA    = "i-running"
	instStop = "i-stopped"
	instB    = "i-of-b"
	instDown = "i-host-down"
	instBad  = "i-bad-hostkey"
)

// harness is a gateway on 127.0.0.1:0 in front of a stand-in agent, with
// three customers' keys on disk: the owner (account A), account B, and a key
// nobody registered.
type harness struct {
	t          testing.TB
	dir        string
	gw         *sshgate.Gateway
	addr       string
	port       string
	agent      *standInAgent
	directory  *memDirectory
	audit      *auditLog
	knownHosts string
	ownerKey   string
	otherKey   string
	strangeKey string
	ownerSig   ssh.Signer
	// gwClientKey is the gateway's key toward agents; benchmarks use it to
	// reach the agent without the gateway.
	gwClientKey ssh.Signer
	cancel      context.CancelFunc
	served      chan error
}

func newHarness(t testing.TB, tune func(*sshgate.Config)) *harness {
	t.Helper()
	dir := t.TempDir()
	h := &harness{t: t, dir: dir, audit: &auditLog{changed: make(chan struct{})}}
	hostKey, err := sshgate.LoadOrCreateHostKey(filepath.Join(dir, "gateway", "host_key"))
	if err != nil {
		t.Fatal(err)
	}
	clientKey := newSigner(t)
	h.gwClientKey = clientKey
	h.agent = startAgent(t, clientKey.PublicKey())

	ownerPriv, ownerSig := newKey(t)
	otherPriv, otherSig := newKey(t)
	strangePriv, _ := newKey(t)
	h.ownerSig = ownerSig
	h.ownerKey = writeKey(t, dir, "owner", ownerPriv)
	h.otherKey = writeKey(t, dir, "other", otherPriv)
	h.strangeKey = writeKey(t, dir, "stranger", strangePriv)

	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedAddr := closed.Addr().String()
	closed.Close()
	agentKey := h.agent.hostKey.PublicKey()
	h.directory = &memDirectory{
		keys: map[string]string{
			string(ownerSig.PublicKey().Marshal()): accountA,
			string(otherSig.PublicKey().Marshal()): accountB,
		},
		instances: map[string]*memInstance{
			instA:    {account: accountA, running: true, addr: h.agent.addr(), hostKey: agentKey},
			instStop: {account: accountA, running: false, addr: h.agent.addr(), hostKey: agentKey},
			instB:    {account: accountB, running: true, addr: h.agent.addr(), hostKey: agentKey},
			instDown: {account: accountA, running: true, addr: closedAddr, hostKey: agentKey},
			instBad:  {account: accountA, running: true, addr: h.agent.addr(), hostKey: newSigner(t).PublicKey()},
		},
	}
	cfg := sshgate.Config{
		HostKey:   hostKey,
		ClientKey: clientKey,
		Directory: h.directory,
		Audit:     h.audit.add,
		Logger:    slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug})),
	}
	if _, bench := t.(*testing.B); bench {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if tune != nil {
		tune(&cfg)
	}
	h.gw, err = sshgate.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	h.addr = ln.Addr().String()
	_, h.port, _ = net.SplitHostPort(h.addr)
	h.knownHosts = filepath.Join(dir, "known_hosts")
	line := fmt.Sprintf("[127.0.0.1]:%s %s", h.port, ssh.MarshalAuthorizedKey(hostKey.PublicKey()))
	if err := os.WriteFile(h.knownHosts, []byte(line), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel = cancel
	h.served = make(chan error, 1)
	go func() { h.served <- h.gw.Serve(ctx, ln) }()
	t.Cleanup(func() { h.stop() })
	return h
}

// stop ends Serve and checks it returned cleanly.
func (h *harness) stop() {
	if h.cancel == nil {
		return
	}
	h.cancel()
	h.cancel = nil
	select {
	case err := <-h.served:
		if err != nil {
			h.t.Errorf("Serve: %v", err)
		}
	case <-time.After(testTimeout):
		h.t.Errorf("Serve did not return after its context ended")
	}
	h.gw.Close()
}

// testWriter sends the gateway's logs to the test log.
type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// opts are the OpenSSH options every command uses: only our key and known
// hosts, no agent, no prompts.
func (h *harness) opts(key string) []string {
	return []string{
		"-F", "/dev/null",
		"-i", key,
		"-o", "IdentitiesOnly=yes",
		"-o", "IdentityAgent=none",
		"-o", "BatchMode=yes",
		"-o", "StrictHostKeyChecking=yes",
		"-o", "UserKnownHostsFile=" + h.knownHosts,
		"-o", "GlobalKnownHostsFile=/dev/null",
		"-o", "UpdateHostKeys=no",
		"-o", "ConnectTimeout=20",
	}
}

type result struct {
	stdout, stderr string
	code           int
}

// run runs an OpenSSH tool (ssh, scp, sftp) bounded in time.
func (h *harness) run(stdin string, tool string, args ...string) result {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, tool, args...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if ctx.Err() != nil {
		h.t.Fatalf("%s %v did not finish in %v; stderr: %s", tool, args, testTimeout, errb.String())
	}
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		h.t.Fatalf("%s: %v", tool, err)
	}
	return result{out.String(), errb.String(), code}
}

// ssh runs `ssh -p port instance@127.0.0.1 args...` with key.
func (h *harness) ssh(key, instance, stdin string, args ...string) result {
	h.t.Helper()
	all := append(h.opts(key), "-p", h.port, instance+"@127.0.0.1")
	return h.run(stdin, "ssh", append(all, args...)...)
}

// goClient logs in to the gateway with the Go SSH client.
func (h *harness) goClient(signer ssh.Signer, instance string) (*ssh.Client, error) {
	return ssh.Dial("tcp", h.addr, &ssh.ClientConfig{
		User:            instance,
		Auth:            []ssh.AuthMethod{ssh.PublicKeys(signer)},
		HostKeyCallback: ssh.FixedHostKey(h.gw.HostKey()),
		Timeout:         testTimeout,
	})
}

func (h *harness) mustGoClient(signer ssh.Signer, instance string) *ssh.Client {
	h.t.Helper()
	c, err := h.goClient(signer, instance)
	if err != nil {
		h.t.Fatalf("log in to %s: %v", instance, err)
	}
	h.t.Cleanup(func() { c.Close() })
	return c
}

// requireOpenSSH fails the test when the OpenSSH client is missing (in the
// fast tier it skips it).
func requireOpenSSH(t testing.TB) {
	t.Helper()
	testtier.Require(t, "the OpenSSH client")
	for _, tool := range []string{"ssh", "scp", "sftp"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is missing: these tests need the OpenSSH client (Debian package openssh-client); `make test` installs it", tool)
		}
	}
}
