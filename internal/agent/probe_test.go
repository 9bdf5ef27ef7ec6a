package agent_test

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"testing"

	"github.com/gpurent/gpurent/internal/agent"
)

// TestProbe: the latency probe answers GET and HEAD with an empty,
// uncached 204 that any origin may read, refuses other methods, and stops
// with its context.
func TestProbe(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { agent.ServeProbe(ctx, l, slog.New(slog.DiscardHandler)); close(done) }()
	url := "http://" + l.Addr().String() + agent.ProbePath
	for _, method := range []string{"GET", "HEAD", "POST"} {
		req, _ := http.NewRequest(method, url+"?t=1", nil)
		req.Header.Set("Origin", "https://console.example")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		want := http.StatusNoContent
		if method == "POST" {
			want = http.StatusMethodNotAllowed
		}
		if resp.StatusCode != want || resp.Header.Get("Access-Control-Allow-Origin") != "*" ||
			resp.Header.Get("Timing-Allow-Origin") != "*" || resp.Header.Get("Cache-Control") != "no-store" {
			t.Errorf("%s: %d %v", method, resp.StatusCode, resp.Header)
		}
	}
	cancel()
	<-done
	if _, err := http.Get(url); err == nil {
		t.Error("the probe still answers after its context ended")
	}
}
