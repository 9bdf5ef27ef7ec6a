package client_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/apiv1"
	"github.com/gpurent/gpurent/internal/client"
)

// The agent's API goes through Do: a per-call bearer, a per-call timeout,
// the answer bound, and errors that keep the status.

func TestDoPerCallToken(t *testing.T) {
	rec := newRecorder(t)
	rec.answer(200, map[string]int{"generation": 3})
	c := client.NewWith(rec.srv.URL, "", nil, client.Options{UserAgent: "gpurent-agent/test"})
	var out struct{ Generation int }
	got, err := c.Do(context.Background(), client.Call{Method: "POST", Path: "/agent/v1/report?x=1",
		Body: map[string]string{"host_id": "h-1"}, Token: "tok-2"}, &out)
	if err != nil || !got || out.Generation != 3 {
		t.Fatalf("Do = %v, %v, %+v; want decoded generation 3", got, err, out)
	}
	s := rec.last(t)
	if s.Auth != "Bearer tok-2" || s.Path != "/agent/v1/report" || s.Query != "x=1" || s.ContentType != "application/json" ||
		!strings.Contains(string(s.Body), `"host_id":"h-1"`) {
		t.Fatalf("server got %+v", s)
	}

	// A call's token replaces the client's; none leaves it.
	rec.answer(200, nil)
	withToken := client.New(rec.srv.URL, "cli-token", nil)
	if _, err := withToken.Do(context.Background(), client.Call{Method: "GET", Path: "/x", Token: "agent-token"}, nil); err != nil {
		t.Fatal(err)
	}
	if a := rec.last(t).Auth; a != "Bearer agent-token" {
		t.Fatalf("Authorization %q, want the call's token", a)
	}
	rec.answer(200, nil)
	if _, err := c.Do(context.Background(), client.Call{Method: "POST", Path: "/agent/v1/register"}, nil); err != nil {
		t.Fatal(err)
	}
	if a := rec.last(t).Auth; a != "" {
		t.Fatalf("Authorization %q sent with no token", a)
	}
}

func TestDoUserAgent(t *testing.T) {
	agents := make(chan string, 2)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		agents <- r.Header.Get("User-Agent")
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()
	for _, c := range []struct {
		c    *client.Client
		want string
	}{
		{client.NewWith(srv.URL, "", nil, client.Options{UserAgent: "gpurent-agent/1.2"}), "gpurent-agent/1.2"},
		{client.New(srv.URL, "", nil), "gpurent-client"},
	} {
		var out struct{}
		got, err := c.c.Do(context.Background(), client.Call{Method: "POST", Path: "/agent/v1/bench"}, &out)
		if err != nil || got {
			t.Fatalf("Do of a 204 = %v, %v; want nothing decoded, no error", got, err)
		}
		if ua := <-agents; ua != c.want {
			t.Fatalf("User-Agent %q, want %q", ua, c.want)
		}
	}
}

func TestDoTimeoutIsANetworkError(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select { // a long poll that never answers in time
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)
	c := client.New(srv.URL, "", nil)
	_, err := c.Do(context.Background(), client.Call{Method: "GET", Path: "/agent/v1/desired", Timeout: 50 * time.Millisecond}, nil)
	var netErr *client.NetworkError
	if !errors.As(err, &netErr) || !gpurent.IsCode(err, gpurent.CodeUnavailable) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Do past its timeout = %T %v, want a NetworkError (unavailable) caused by the deadline", err, err)
	}
	if client.StatusOf(err) != 0 {
		t.Fatalf("StatusOf a call with no answer = %d, want 0", client.StatusOf(err))
	}

	// The caller's context ending is the caller's error, as for the
	// typed methods.
	ctx, cancel := context.WithCancel(context.Background())
	go func() { time.Sleep(20 * time.Millisecond); cancel() }()
	_, err = c.Do(ctx, client.Call{Method: "GET", Path: "/agent/v1/desired", Timeout: time.Minute}, nil)
	if !errors.Is(err, context.Canceled) || errors.As(err, &netErr) {
		t.Fatalf("Do with its context canceled = %T %v, want context.Canceled", err, err)
	}
}

func TestDoErrorsKeepTheStatus(t *testing.T) {
	rec := newRecorder(t)
	c := client.New(rec.srv.URL, "", nil)
	for _, tc := range []struct {
		status int
		code   gpurent.Code
	}{
		{401, gpurent.CodeUnauthorized},
		{404, gpurent.CodeNotFound},
		{409, gpurent.CodeConflict},
		{503, gpurent.CodeUnavailable},
	} {
		rec.answer(tc.status, apiv1.Problem{Status: tc.status, Detail: "no", Code: string(tc.code)})
		_, err := c.Do(context.Background(), client.Call{Method: "POST", Path: "/agent/v1/report"}, nil)
		if client.StatusOf(err) != tc.status || !gpurent.IsCode(err, tc.code) {
			t.Errorf("answer %d: err %v (status %d), want status %d and code %s", tc.status, err, client.StatusOf(err), tc.status, tc.code)
		}
		// Kept through a caller's wrapping too.
		if w := gpurent.WrapError(gpurent.CodeInternal, err, "wrapped"); client.StatusOf(w) != tc.status {
			t.Errorf("answer %d: wrapped status %d", tc.status, client.StatusOf(w))
		}
	}
	if client.StatusOf(errors.New("local")) != 0 || client.StatusOf(nil) != 0 {
		t.Error("StatusOf an error that is no answer is not 0")
	}
}

func TestDoBoundsTheAnswer(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"pad":"`)
		chunk := strings.Repeat("x", 1<<20)
		for range 33 { // 33 MiB: over the 32 MiB bound
			if _, err := io.WriteString(w, chunk); err != nil {
				return
			}
		}
		_, _ = io.WriteString(w, `"}`)
	}))
	defer srv.Close()
	var out struct{ Pad string }
	got, err := client.New(srv.URL, "", nil).Do(context.Background(), client.Call{Method: "GET", Path: "/agent/v1/desired"}, &out)
	if got || err == nil || !strings.Contains(err.Error(), "larger than") || client.StatusOf(err) != 200 {
		t.Fatalf("Do of a 33 MiB answer = %v, %v; want refused as larger than the bound", got, err)
	}
	if out.Pad != "" {
		t.Fatal("the oversized answer was decoded")
	}
}
