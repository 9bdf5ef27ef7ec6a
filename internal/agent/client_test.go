package agent

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/agentproto"
	"github.com/gpurent/gpurent/internal/apiv1"
	"github.com/gpurent/gpurent/internal/client"
)

// TestCallErrors: the agent's calls go through internal/client; what it
// says of a failure names the path and the status, keeps the status for
// the retry rule (permanent) and the problem's code, and a failure with
// no answer, or an unreadable answer, is the control plane unavailable.
func TestCallErrors(t *testing.T) {
	agents := make(chan string, 8)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		agents <- r.Header.Get("User-Agent")
		switch r.URL.Path {
		case agentproto.PathReport:
			w.Header().Set("Content-Type", "application/problem+json")
			w.WriteHeader(http.StatusConflict)
			_ = json.NewEncoder(w).Encode(apiv1.Problem{Status: 409, Code: "conflict", Detail: "host h-1 is cordoned"})
		case agentproto.PathBench:
			w.Header().Set("Content-Type", "text/plain")
			w.WriteHeader(http.StatusBadGateway)
			_, _ = io.WriteString(w, "upstream gone")
		case agentproto.PathDesired:
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"host_id": `)
		default:
			w.WriteHeader(http.StatusTooManyRequests)
		}
	}))
	defer srv.Close()
	h := newHost(t, newControlPlane(t))
	cfg := h.config(h.runtime())
	cfg.ServerURL = srv.URL
	a, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()

	_, err = a.call(ctx, "POST", agentproto.PathReport, "tok", requestTimeout, agentproto.Report{}, nil)
	if want := "control plane answered " + agentproto.PathReport + " with 409 Conflict: host h-1 is cordoned"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("409: %v, want %q", err, want)
	}
	if !gpurent.IsCode(err, gpurent.CodeConflict) || client.StatusOf(err) != 409 || !permanent(err) {
		t.Errorf("409: code %s, status %d, permanent %v; want conflict, 409, permanent", gpurent.ErrorCode(err), client.StatusOf(err), permanent(err))
	}
	if ua := <-agents; ua != "gpurent-agent/test" {
		t.Errorf("User-Agent %q", ua)
	}

	_, err = a.call(ctx, "POST", agentproto.PathBench, "tok", requestTimeout, nil, nil)
	if want := "unavailable: control plane answered " + agentproto.PathBench + " with 502 Bad Gateway: upstream gone: HTTP 502"; err == nil || err.Error() != want {
		t.Errorf("502: %v, want %q", err, want)
	}
	if !gpurent.IsCode(err, gpurent.CodeUnavailable) || client.StatusOf(err) != 502 || permanent(err) {
		t.Errorf("502: code %s, status %d, permanent %v; want unavailable, 502, retried", gpurent.ErrorCode(err), client.StatusOf(err), permanent(err))
	}

	_, err = a.call(ctx, "GET", "/agent/v1/other", "tok", requestTimeout, nil, nil)
	if client.StatusOf(err) != 429 || permanent(err) {
		t.Errorf("429: status %d, permanent %v; want 429, retried", client.StatusOf(err), permanent(err))
	}

	var d agentproto.Desired
	got, err := a.call(ctx, "GET", agentproto.PathDesired, "tok", longPollTimeout, nil, &d)
	if got || !gpurent.IsCode(err, gpurent.CodeUnavailable) || !strings.Contains(err.Error(), "unreadable") || permanent(err) {
		t.Errorf("bad JSON: %v, %v; want an unreadable answer, unavailable", got, err)
	}

	srv.Close()
	_, err = a.call(ctx, "POST", agentproto.PathReport, "tok", requestTimeout, nil, nil)
	if !gpurent.IsCode(err, gpurent.CodeUnavailable) || !strings.Contains(err.Error(), "control plane unreachable") || client.StatusOf(err) != 0 {
		t.Errorf("closed server: %v; want the control plane unreachable", err)
	}
}
