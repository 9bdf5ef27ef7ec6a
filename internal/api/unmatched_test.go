package api

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/gpurent/gpurent/internal/apiv1"
)

// withConsole is a server with a stand-in console mounted at "/": it
// answers every path with an HTML page, as the console's own 404 and "page
// expired" pages do. No route's handler runs in these tests, so the server
// needs no services.
func withConsole() *Server {
	page := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.WriteHeader(http.StatusForbidden)
		_, _ = io.WriteString(w, "<html>page expired</html>")
	})
	return New(Config{Console: page})
}

// fillWildcards puts a value in every {wildcard} segment of a path pattern.
func fillWildcards(pattern string) string {
	segs := strings.Split(pattern, "/")
	for i, seg := range segs {
		if strings.HasPrefix(seg, "{") && strings.HasSuffix(seg, "}") {
			segs[i] = "w1"
		}
	}
	return strings.Join(segs, "/")
}

// allowedByPath gathers, per path pattern of Routes, the methods it is
// served under, HEAD included where GET is (the mux serves HEAD there).
func allowedByPath(s *Server) map[string][]string {
	out := map[string][]string{}
	for _, rt := range s.Routes() {
		if rt.Method == "*" {
			continue
		}
		out[rt.Path] = append(out[rt.Path], rt.Method)
		if rt.Method == http.MethodGet {
			out[rt.Path] = append(out[rt.Path], http.MethodHead)
		}
	}
	for p := range out {
		slices.Sort(out[p])
	}
	return out
}

// checkProblem fails unless w is a problem+json answer with status.
func checkProblem(t *testing.T, what string, w *httptest.ResponseRecorder, status int) apiv1.Problem {
	t.Helper()
	if w.Code != status || w.Header().Get("Content-Type") != contentProblem {
		t.Fatalf("%s: %d %s, want %d %s: %.200s", what, w.Code, w.Header().Get("Content-Type"), status, contentProblem, w.Body.String())
	}
	var p apiv1.Problem
	if err := json.Unmarshal(w.Body.Bytes(), &p); err != nil || p.Status != status {
		t.Fatalf("%s: body %q (%v)", what, w.Body.String(), err)
	}
	return p
}

// TestEveryRouteAnswersOtherMethods405 sends every method a route is not
// served under to every route of Routes, with and without a console
// mounted: each is a problem+json 405 whose Allow lists exactly the
// path's methods, never a console page.
func TestEveryRouteAnswersOtherMethods405(t *testing.T) {
	for _, tc := range []struct {
		name string
		srv  *Server
	}{{"without a console", newEnv(t).srv}, {"with a console", withConsole()}} {
		t.Run(tc.name, func(t *testing.T) {
			h := tc.srv.Handler()
			byPath := allowedByPath(tc.srv)
			if len(byPath) < 50 {
				t.Fatalf("only %d paths in Routes", len(byPath))
			}
			for path, allowed := range byPath {
				concrete := fillWildcards(path)
				for _, m := range []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete, http.MethodOptions} {
					if slices.Contains(allowed, m) {
						continue
					}
					w := httptest.NewRecorder()
					h.ServeHTTP(w, httptest.NewRequest(m, concrete, strings.NewReader("{}")))
					what := m + " " + concrete
					if m == http.MethodHead {
						// A HEAD answer has no body to read.
						if w.Code != http.StatusMethodNotAllowed || w.Header().Get("Content-Type") != contentProblem {
							t.Fatalf("%s: %d %s", what, w.Code, w.Header().Get("Content-Type"))
						}
					} else {
						checkProblem(t, what, w, http.StatusMethodNotAllowed)
					}
					got := strings.Split(w.Header().Get("Allow"), ", ")
					slices.Sort(got)
					if !slices.Equal(got, allowed) {
						t.Errorf("%s: Allow %q, want %q", what, w.Header().Get("Allow"), strings.Join(allowed, ", "))
					}
				}
			}
		})
	}
}

// TestUnknownAPIPathsNeverReachTheConsole: with a console mounted, an
// unknown path under /api/ or /agent/ is a problem+json 404 (not the
// console's page), a known one under another method a 405 (not the
// console's "page expired"), and every other path is still the console's.
func TestUnknownAPIPathsNeverReachTheConsole(t *testing.T) {
	h := withConsole().Handler()
	serve := func(method, path string) *httptest.ResponseRecorder {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(method, path, strings.NewReader("{}")))
		return w
	}
	for _, path := range []string{"/api/v1/nope", "/api/v2/wallet", "/api/", "/agent/v1/nope", "/agent/v1/"} {
		for _, m := range []string{http.MethodGet, http.MethodPost} {
			p := checkProblem(t, m+" "+path, serve(m, path), http.StatusNotFound)
			if p.Code != "not_found" || !strings.Contains(p.Detail, path) {
				t.Errorf("%s %s: %+v", m, path, p)
			}
		}
	}
	w := serve(http.MethodPut, "/api/v1/wallet")
	checkProblem(t, "PUT /api/v1/wallet", w, http.StatusMethodNotAllowed)
	if got := w.Header().Get("Allow"); got != "GET, HEAD" {
		t.Errorf("PUT /api/v1/wallet: Allow %q", got)
	}
	w = serve(http.MethodDelete, "/agent/v1/report")
	checkProblem(t, "DELETE /agent/v1/report", w, http.StatusMethodNotAllowed)
	if got := w.Header().Get("Allow"); got != "POST" {
		t.Errorf("DELETE /agent/v1/report: Allow %q", got)
	}
	// The console keeps the rest, its own 404s and refusals included.
	for _, path := range []string{"/", "/nope", "/instances", "/apiary", "/agents"} {
		for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodPut} {
			if w := serve(m, path); w.Code != http.StatusForbidden || !strings.HasPrefix(w.Header().Get("Content-Type"), "text/html") {
				t.Errorf("%s %s: %d %s, want the console's page", m, path, w.Code, w.Header().Get("Content-Type"))
			}
		}
	}
}
