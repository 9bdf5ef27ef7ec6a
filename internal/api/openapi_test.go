package api

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"sort"
	"strings"
	"testing"

	"github.com/gpurent/gpurent"
)

// openAPIRoutes lists the (METHOD, path) pairs openapi.json documents.
func openAPIRoutes(t *testing.T, doc map[string]any) map[string]bool {
	t.Helper()
	paths, ok := doc["paths"].(map[string]any)
	if !ok {
		t.Fatal("openapi.json has no paths")
	}
	out := map[string]bool{}
	for p, item := range paths {
		ops, ok := item.(map[string]any)
		if !ok {
			t.Fatalf("path %s is not an object", p)
		}
		for m := range ops {
			switch m {
			case "get", "put", "post", "delete", "patch", "head", "options":
				out[strings.ToUpper(m)+" "+p] = true
			}
		}
	}
	return out
}

func loadOpenAPI(t *testing.T) map[string]any {
	t.Helper()
	var doc map[string]any
	if err := json.Unmarshal(openAPIDoc, &doc); err != nil {
		t.Fatalf("openapi.json is not JSON: %v", err)
	}
	if v, _ := doc["openapi"].(string); !strings.HasPrefix(v, "3.1") {
		t.Fatalf("openapi version %q, want 3.1.x", v)
	}
	return doc
}

// TestOpenAPIMatchesRoutes holds the document to Routes both ways, and
// calls every documented operation on a live server with real ids.
func TestOpenAPIMatchesRoutes(t *testing.T) {
	doc := loadOpenAPI(t)
	documented := openAPIRoutes(t, doc)

	e := newEnv(t)
	registered := map[string]bool{}
	for _, rt := range e.srv.Routes() {
		if rt.Method == "*" {
			continue // a mounted prefix (port links), no operation
		}
		registered[rt.Method+" "+rt.Path] = true
	}
	for r := range registered {
		if !documented[r] {
			t.Errorf("route %s is registered but not in openapi.json", r)
		}
	}
	for r := range documented {
		if !registered[r] {
			t.Errorf("openapi.json documents %s, which is not registered", r)
		}
	}

	// Every documented operation answers, with real ids, something other
	// than 404 or 405.
	h := e.host("gpu-a", 2)
	op := e.operator()
	in := e.rent(op, 1)
	app, err := e.st.ListAcademicApplications(context.Background(), gpurent.AcademicFilter{})
	if err != nil || len(app) != 0 {
		t.Fatalf("academic applications before: %v %v", app, err)
	}
	appl := &gpurent.AcademicApplication{AccountID: op.acc.ID, Method: gpurent.AcademicProof, Institution: "UESTC", Proof: "card"}
	if err := e.st.CreateAcademicApplication(context.Background(), appl); err != nil {
		t.Fatal(err)
	}
	// A benchmark job to read and cancel: the host's GPU that is not rented.
	bj := &gpurent.BenchJob{HostID: h.id, GPUIDs: []string{"GPU-gpu-a-01"}, GPUType: "h100-80g-sxm", Reason: gpurent.BenchManual, Tier: "t1"}
	if err := e.st.CreateBenchJob(context.Background(), bj); err != nil {
		t.Fatalf("benchmark job: %v", err)
	}
	ops := make([]string, 0, len(documented))
	for r := range documented {
		ops = append(ops, r)
	}
	// Deletes last, so the instance lives through the others.
	sort.Slice(ops, func(i, j int) bool {
		di, dj := strings.HasPrefix(ops[i], "DELETE"), strings.HasPrefix(ops[j], "DELETE")
		if di != dj {
			return dj
		}
		return ops[i] < ops[j]
	})
	for _, r := range ops {
		method, path, _ := strings.Cut(r, " ")
		concrete := path
		switch {
		case strings.HasPrefix(path, "/api/v1/instances/{id}"):
			concrete = strings.Replace(strings.Replace(path, "{id}", in.ID, 1), "{port}", "8888", 1)
		case strings.HasPrefix(path, "/api/v1/images/{name}"):
			concrete = strings.Replace(path, "{name}", "nope:1", 1)
		case path == "/api/v1/ssh-keys/{id}":
			concrete = "/api/v1/ssh-keys/key-nope"
		case strings.HasPrefix(path, "/api/v1/hosts/{id}"):
			concrete = strings.Replace(path, "{id}", h.id, 1)
		case strings.HasPrefix(path, "/api/v1/accounts/{id}"):
			concrete = strings.Replace(path, "{id}", op.acc.ID, 1)
		case strings.HasPrefix(path, "/api/v1/payments/{provider}"):
			concrete = strings.Replace(strings.Replace(path, "{provider}", "fake", 1), "{id}", "fake_nope", 1)
		case path == "/api/v1/zones/{id}/probe":
			concrete = strings.Replace(path, "{id}", testZone, 1)
		case path == "/api/v1/statements/{month}":
			concrete = "/api/v1/statements/2026-11"
		case strings.HasPrefix(path, "/api/v1/academic/applications/{id}"):
			concrete = strings.Replace(path, "{id}", appl.ID, 1)
		case path == "/api/v1/bench/jobs/{id}":
			concrete = strings.Replace(path, "{id}", bj.ID, 1)
		case path == "/api/v1/join-tokens/{id}":
			_, jt, err := e.fleet.MintJoinToken(context.Background(), testZone, "", 0, "")
			if err != nil {
				t.Fatal(err)
			}
			concrete = strings.Replace(path, "{id}", jt.ID, 1)
		case strings.HasPrefix(path, "/api/v1/gpus/{uuid}"):
			concrete = strings.Replace(path, "{uuid}", "GPU-gpu-a-01", 1)
		}
		if strings.Contains(concrete, "{") {
			t.Fatalf("no id for %s in this test: add one", path)
		}
		token := op.token
		if strings.HasPrefix(path, "/agent/") {
			token = h.token
		}
		hr := httptest.NewRequest(method, concrete, nil)
		if _, pattern := e.srv.mux.Handler(hr); pattern != r {
			t.Errorf("%s %s matches pattern %q, want %q", method, concrete, pattern, r)
			continue
		}
		w := e.do(req{method: method, path: concrete, token: token, body: "{}"})
		if w.Code == 404 || w.Code == 405 {
			t.Errorf("%s %s answered %d: %s", method, concrete, w.Code, w.Body.String())
		}
	}
}

// TestOpenAPIRefsResolve checks every $ref names a component that exists.
func TestOpenAPIRefsResolve(t *testing.T) {
	doc := loadOpenAPI(t)
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			if ref, ok := x["$ref"].(string); ok {
				parts := strings.Split(strings.TrimPrefix(ref, "#/"), "/")
				var cur any = doc
				for _, p := range parts {
					m, ok := cur.(map[string]any)
					if !ok || m[p] == nil {
						t.Errorf("$ref %s does not resolve", ref)
						return
					}
					cur = m[p]
				}
			}
			for _, c := range x {
				walk(c)
			}
		case []any:
			for _, c := range x {
				walk(c)
			}
		}
	}
	walk(doc)
}

func TestOpenAPIServed(t *testing.T) {
	e := newEnv(t)
	w := e.do(req{method: "GET", path: "/api/v1/openapi.json"})
	if w.Code != 200 || w.Header().Get("Content-Type") != contentJSON || w.Body.Len() != len(openAPIDoc) {
		t.Fatalf("openapi.json: %d %s, %d bytes", w.Code, w.Header().Get("Content-Type"), w.Body.Len())
	}
}

// TestOpenAPIOperationsDeclareSecurityAndTags holds, without the linters'
// toolchain, what Redocly and Spectral hold the document to first: every
// operation says how it is authenticated (security, an empty list for a
// public one) and every tag it uses is declared at the top.
func TestOpenAPIOperationsDeclareSecurityAndTags(t *testing.T) {
	doc := loadOpenAPI(t)
	declared := map[string]bool{}
	tags, _ := doc["tags"].([]any)
	for _, tag := range tags {
		m, _ := tag.(map[string]any)
		name, _ := m["name"].(string)
		if desc, _ := m["description"].(string); desc == "" {
			t.Errorf("tag %q has no description", name)
		}
		declared[name] = true
	}
	paths, _ := doc["paths"].(map[string]any)
	for route := range openAPIRoutes(t, doc) {
		method, path, _ := strings.Cut(route, " ")
		item, _ := paths[path].(map[string]any)
		op, _ := item[strings.ToLower(method)].(map[string]any)
		if _, ok := op["security"].([]any); !ok {
			t.Errorf("%s has no security entry: [{\"bearer\": []}], or [] for a public route", route)
		}
		used, _ := op["tags"].([]any)
		for _, tag := range used {
			if name, _ := tag.(string); !declared[name] {
				t.Errorf("%s uses tag %q, which the document's tags do not declare", route, name)
			}
		}
	}
}
