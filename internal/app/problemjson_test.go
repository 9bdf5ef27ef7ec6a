package app

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gpurent/gpurent/internal/apiv1"
)

// TestAPIAnswersOnlyProblemJSON: with the real console mounted at "/", an
// unknown path under /api/ or /agent/ is a problem+json 404 and a known one
// under another method a problem+json 405 with Allow (never the console's
// 404 page or its "page expired"), for every route of API.Routes, while
// the console keeps its own paths.
func TestAPIAnswersOnlyProblemJSON(t *testing.T) {
	dir := t.TempDir()
	s, err := StartServer(context.Background(), ServerConfig{DSN: filepath.Join(dir, "gpurent.db"), Listen: "127.0.0.1:0",
		BcryptCost: 4, PollWait: 50 * time.Millisecond, HostTimeout: time.Hour, HostDownAfter: time.Hour,
		BillingInterval: time.Minute, OperationsInterval: time.Hour, KeyDir: filepath.Join(dir, "keys")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	send := func(method, path string) (*http.Response, apiv1.Problem) {
		t.Helper()
		req, err := http.NewRequest(method, s.URL+path, strings.NewReader("{}"))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		var p apiv1.Problem
		if resp.Header.Get("Content-Type") == "application/problem+json" {
			if err := json.Unmarshal(body, &p); err != nil {
				t.Fatalf("%s %s: problem %q: %v", method, path, body, err)
			}
		}
		return resp, p
	}
	for _, path := range []string{"/api/v1/nope", "/agent/v1/nope"} {
		if resp, p := send("GET", path); resp.StatusCode != 404 || p.Status != 404 || p.Code != "not_found" {
			t.Errorf("GET %s: %d %s %+v", path, resp.StatusCode, resp.Header.Get("Content-Type"), p)
		}
	}
	if resp, p := send("PUT", "/api/v1/wallet"); resp.StatusCode != 405 || p.Status != 405 || resp.Header.Get("Allow") != "GET, HEAD" {
		t.Errorf("PUT /api/v1/wallet: %d %s Allow %q %+v", resp.StatusCode, resp.Header.Get("Content-Type"), resp.Header.Get("Allow"), p)
	}

	allowed := map[string][]string{}
	for _, rt := range s.API.Routes() {
		if rt.Method != "*" {
			allowed[rt.Path] = append(allowed[rt.Path], rt.Method)
		}
	}
	for path, methods := range allowed {
		if slices.Contains(methods, "GET") {
			methods = append(methods, "HEAD")
		}
		slices.Sort(methods)
		concrete := path
		for strings.Contains(concrete, "{") {
			i, j := strings.Index(concrete, "{"), strings.Index(concrete, "}")
			concrete = concrete[:i] + "x1" + concrete[j+1:]
		}
		for _, m := range []string{"GET", "POST", "PUT", "PATCH", "DELETE"} {
			if slices.Contains(methods, m) {
				continue
			}
			resp, p := send(m, concrete)
			got := strings.Split(resp.Header.Get("Allow"), ", ")
			slices.Sort(got)
			if resp.StatusCode != 405 || p.Status != 405 || !slices.Equal(got, methods) {
				t.Errorf("%s %s: %d %s Allow %q, want 405 problem+json Allow %q", m, concrete, resp.StatusCode,
					resp.Header.Get("Content-Type"), resp.Header.Get("Allow"), strings.Join(methods, ", "))
			}
		}
	}

	// The console's own paths are still its pages.
	for _, path := range []string{"/", "/login", "/nope"} {
		resp, _ := send("GET", path)
		if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") {
			t.Errorf("GET %s: %d %s, want a console page", path, resp.StatusCode, resp.Header.Get("Content-Type"))
		}
	}
}
