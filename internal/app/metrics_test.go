package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/api"
	"github.com/gpurent/gpurent/internal/apiv1"
	"github.com/gpurent/gpurent/internal/client"
	"github.com/gpurent/gpurent/internal/store/storetest"
)

func getMetrics(t *testing.T, url, token string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestMetricsOperatorOnly: the control plane's /metrics (every host, GPU
// UUID and per-GPU use) answers anonymous visitors 401 and customers 403
// and serves operators; --metrics-listen serves them apart.
func TestMetricsOperatorOnly(t *testing.T) {
	ctx := context.Background()
	s, err := StartServer(ctx, ServerConfig{Store: storetest.SQLite(t), Listen: "127.0.0.1:0", JoinToken: "join-race",
		BcryptCost: 4, HostTimeout: time.Hour, MetricsListen: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	registerHosts(t, s, "metrics", "rtx4090-24g", 1)
	token := func(email string, role gpurent.Role) string {
		if _, err := s.Auth.CreateAccount(ctx, email, "someone", "a-password-1", role, 0); err != nil {
			t.Fatal(err)
		}
		login, err := client.New(s.URL, "", nil).Login(ctx, apiv1.LoginRequest{Email: email, Password: "a-password-1"})
		if err != nil {
			t.Fatal(err)
		}
		return login.Token
	}
	customer, operator := token("c@metrics.example", gpurent.RoleCustomer), token("ops@metrics.example", gpurent.RoleOperator)
	if code, body := getMetrics(t, s.URL+"/metrics", ""); code != http.StatusUnauthorized || strings.Contains(body, "GPU-") {
		t.Errorf("anonymous: %d", code)
	}
	if code, body := getMetrics(t, s.URL+"/metrics", customer); code != http.StatusForbidden || strings.Contains(body, "GPU-") {
		t.Errorf("a customer: %d", code)
	}
	if code, body := getMetrics(t, s.URL+"/metrics", operator); code != http.StatusOK || !strings.Contains(body, "gpurent_build_info") {
		t.Errorf("an operator: %d", code)
	}
	if s.MetricsURL == "" {
		t.Fatal("no metrics listener")
	}
	if code, body := getMetrics(t, s.MetricsURL, ""); code != http.StatusOK || !strings.Contains(body, "gpurent_build_info") {
		t.Errorf("the metrics listener: %d", code)
	}
	if code, _ := getMetrics(t, strings.TrimSuffix(s.MetricsURL, "/metrics")+"/api/v1/gpu-types", ""); code != http.StatusNotFound {
		t.Errorf("the metrics listener serves the API: %d", code)
	}
}

// TestSlowRequestsClosed: the control plane closes a connection whose
// request header or body never finishes (slowloris), under its read
// timeouts (small ones here).
func TestSlowRequestsClosed(t *testing.T) {
	s, err := StartServer(context.Background(), ServerConfig{Store: storetest.SQLite(t), Listen: "127.0.0.1:0", JoinToken: "join-slow",
		BcryptCost: 4, HTTPTimeouts: api.Timeouts{ReadHeader: 200 * time.Millisecond, Read: 300 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, start := range []string{
		"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: a",
		"POST /api/v1/auth/login HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"email\":",
	} {
		c, err := net.Dial("tcp", strings.TrimPrefix(s.URL, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprint(c, start)
		_ = c.SetReadDeadline(time.Now().Add(60 * time.Second))
		_, err = io.Copy(io.Discard, c)
		c.Close()
		if errors.Is(err, os.ErrDeadlineExceeded) {
			t.Errorf("%q: the connection stayed open", start)
		}
	}
}
