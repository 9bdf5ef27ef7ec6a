package app

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/outbound"
	"github.com/gpurent/gpurent/internal/store/storetest"
)

// logSink is a slog handler that hands each record's message to a channel.
type logSink struct{ msgs chan string }

func (h logSink) Enabled(context.Context, slog.Level) bool { return true }
func (h logSink) Handle(_ context.Context, r slog.Record) error {
	msg := r.Message
	r.Attrs(func(a slog.Attr) bool {
		msg += " " + a.Key + "=" + a.Value.String()
		return true
	})
	select {
	case h.msgs <- msg:
	default:
	}
	return nil
}
func (h logSink) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h logSink) WithGroup(string) slog.Handler      { return h }

// TestWebhookSSRF: a customer's webhook cannot reach the control plane's
// own machine. A loopback receiver is refused when it is set (through the
// API, also by a name that means this machine and under the demo's http
// policy), and a loopback URL already stored (as one whose name was
// re-pointed after it was set would be) is refused at delivery: the
// receiver never gets a request.
func TestWebhookSSRF(t *testing.T) {
	ctx := context.Background()
	var hits atomic.Int32
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	defer receiver.Close()
	port := receiver.URL[strings.LastIndex(receiver.URL, ":")+1:]
	logs := make(chan string, 1000)
	s, err := StartServer(ctx, ServerConfig{Store: storetest.SQLite(t), Listen: "127.0.0.1:0", JoinToken: "join-ssrf",
		BcryptCost: 4, HostTimeout: time.Hour, Logger: slog.New(logSink{logs}), Webhooks: outbound.Policy{AllowHTTP: true}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	c := customers(t, s, 1)[0]
	for _, u := range []string{receiver.URL + "/hook", "http://localhost:" + port + "/hook", "http://[::1]:" + port + "/",
		"https://169.254.169.254/latest/meta-data/", "https://10.0.0.1/hook", "http://2130706433:" + port + "/"} {
		if _, err := c.SetWebhook(ctx, u); !gpurent.IsCode(err, gpurent.CodeInvalid) {
			t.Errorf("webhook %s: %v, want it refused as invalid", u, err)
		}
	}
	me, err := c.Me(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if hook, _ := s.Store.WebhookURL(ctx, me.ID); hook != "" {
		t.Fatalf("a refused webhook was stored: %q", hook)
	}
	if _, err := c.SetWebhook(ctx, "https://hooks.example.com/gpurent"); err != nil {
		t.Fatalf("a public https webhook: %v", err)
	}
	// Delivery checks every dialled address: a stored loopback URL is
	// refused when it is dialled.
	if err := s.Store.SetWebhookURL(ctx, me.ID, "http://localhost:"+port+"/hook"); err != nil {
		t.Fatal(err)
	}
	s.Wallet.Notice(ctx, me.ID, "test", "an alert")
	deadline := time.After(30 * time.Second)
	for {
		select {
		case m := <-logs:
			if !strings.HasPrefix(m, "webhook not delivered") {
				continue
			}
			if !strings.Contains(m, "refused") {
				t.Fatalf("delivery failed otherwise: %s", m)
			}
		case <-deadline:
			t.Fatal("the delivery was not refused")
		}
		break
	}
	if n := hits.Load(); n != 0 {
		t.Fatalf("the loopback receiver got %d requests", n)
	}
}

// TestConsoleWebhookRefused: the console's billing form refuses a loopback
// webhook with its own words, in Chinese and in English.
func TestConsoleWebhookRefused(t *testing.T) {
	ctx := context.Background()
	s, err := StartServer(ctx, ServerConfig{Store: storetest.SQLite(t), Listen: "127.0.0.1:0", JoinToken: "join-ssrf",
		BcryptCost: 4, HostTimeout: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	const email, password = "hooks@ssrf.example", "a-password-1"
	if _, err := s.Auth.CreateAccount(ctx, email, "hooks", password, gpurent.RoleCustomer, 0); err != nil {
		t.Fatal(err)
	}
	csrf := strings.Repeat("c", 43)
	post := func(path string, form url.Values, session string) *http.Response {
		t.Helper()
		form.Set("_csrf", csrf)
		req, _ := http.NewRequest(http.MethodPost, s.URL+path, strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.AddCookie(&http.Cookie{Name: "gpurent_csrf", Value: csrf})
		if session != "" {
			req.AddCookie(&http.Cookie{Name: "gpurent_session", Value: session})
		}
		resp, err := from("127.0.0.1").Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	resp := post("/login", url.Values{"email": {email}, "password": {password}}, "")
	resp.Body.Close()
	session := ""
	for _, c := range resp.Cookies() {
		if c.Name == "gpurent_session" {
			session = c.Value
		}
	}
	if session == "" {
		t.Fatalf("no session after signing in: %d", resp.StatusCode)
	}
	for lang, want := range map[string]string{"zh": "Webhook 必须是公网上的 https:// 地址", "en": "The webhook must be a public https:// address"} {
		resp := post("/billing/webhook?lang="+lang, url.Values{"webhook": {"https://127.0.0.1:8443/hook"}}, session)
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(b), want) {
			t.Errorf("%s: %d, want 400 with %q", lang, resp.StatusCode, want)
		}
	}
	acc, err := s.Store.AccountByEmail(ctx, email)
	if err != nil {
		t.Fatal(err)
	}
	if hook, _ := s.Store.WebhookURL(ctx, acc.ID); hook != "" {
		t.Fatalf("a refused webhook was stored: %q", hook)
	}
}
