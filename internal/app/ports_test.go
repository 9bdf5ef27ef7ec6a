package app

import (
	"context"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestPortsDomainAtStartUp: a ports domain that would share cookies with
// the console's host name is refused at start-up; a console on a loopback
// address gets *.localhost port hosts by default, one elsewhere gets no
// port links until the operator names a ports domain; the console's own
// host never serves /p/.
func TestPortsDomainAtStartUp(t *testing.T) {
	start := func(publicURL, domain string) (*Server, error) {
		dir := t.TempDir()
		return StartServer(context.Background(), ServerConfig{DSN: filepath.Join(dir, "gpurent.db"), Listen: "127.0.0.1:0",
			JoinToken: "join-ports", BcryptCost: 4, SSHListen: "127.0.0.1:0", KeyDir: filepath.Join(dir, "keys"),
			PublicURL: publicURL, PortsDomain: domain, Logger: testLogger(), HostTimeout: time.Hour})
	}
	for _, tc := range []struct{ publicURL, domain string }{
		{"https://cloud.example.com", "cloud.example.com"},
		{"https://cloud.example.com", "CLOUD.example.com"},
		{"https://cloud.example.com", "example.com"},
		{"https://cloud.example.com", "ports.cloud.example.com"},
		{"http://localhost:8080", "localhost"},
		{"https://cloud.example.com", "10.0.0.1"},
		{"https://cloud.example.com", "*.ports.example"},
	} {
		if s, err := start(tc.publicURL, tc.domain); err == nil {
			s.Close()
			t.Errorf("console %s with ports domain %q: started", tc.publicURL, tc.domain)
		} else if !strings.Contains(err.Error(), "ports domain") {
			t.Errorf("console %s with ports domain %q: %v", tc.publicURL, tc.domain, err)
		}
	}

	s, err := start("https://cloud.example.com", "ports.example-usercontent.com")
	if err != nil {
		t.Fatal(err)
	}
	if want := "https://<instance>-<port>.ports.example-usercontent.com"; s.PortsPattern != want {
		t.Errorf("ports pattern %q, want %q", s.PortsPattern, want)
	}
	s.Close()

	s, err = start("https://cloud.example.com", "")
	if err != nil {
		t.Fatal(err)
	}
	if s.PortsPattern != "" {
		t.Errorf("a public console without --ports-domain serves ports on %q", s.PortsPattern)
	}
	s.Close()

	s, err = start("", "")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if want := "http://<instance>-<port>.localhost:" + s.URL[strings.LastIndex(s.URL, ":")+1:]; s.PortsPattern != want {
		t.Errorf("ports pattern %q, want %q", s.PortsPattern, want)
	}
	for _, path := range []string{"/p/i-abc/8888/", "/p/i-abc/8888/?gpurent_token=x"} {
		resp, err := http.Get(s.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound || !strings.Contains(string(body), "own host names") {
			t.Errorf("GET %s on the console's host: %d %s", path, resp.StatusCode, body)
		}
	}
	// A port host gets the proxy alone: no console page, no API.
	for _, path := range []string{"/", "/login", "/api/v1/gpu-types", "/healthz"} {
		req, _ := http.NewRequest("GET", s.URL+path, nil)
		req.Host = "i-abc-8888.localhost"
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized || resp.Header.Get("Set-Cookie") != "" || !strings.Contains(string(body), "gpurent: ") {
			t.Errorf("GET %s on a port host: %d %q %s", path, resp.StatusCode, resp.Header.Get("Set-Cookie"), body)
		}
		req.Host = "localhost"
		if resp, err = http.DefaultClient.Do(req); err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound || resp.Header.Get("Set-Cookie") != "" {
			t.Errorf("GET %s on the bare ports domain: %d", path, resp.StatusCode)
		}
	}
}
