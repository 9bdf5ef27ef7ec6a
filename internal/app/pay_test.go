package app

import (
	"bytes"
	"context"
	"errors"
	"html"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/apiv1"
	"github.com/gpurent/gpurent/internal/cli"
	"github.com/gpurent/gpurent/internal/client"
	"github.com/gpurent/gpurent/internal/store/storetest"
)

// TestPackageRefusalEverywhere: a daily A100 package the wallet cannot pay
// is refused with one answer through the API (402, payment_required, the
// service's detail), the CLI (that detail and the code) and the console's
// rent form (402, "余额不足：" in Chinese and "Not enough balance:" in
// English above the same detail), and nothing is rented.
func TestPackageRefusalEverywhere(t *testing.T) {
	ctx := context.Background()
	s, err := StartServer(ctx, ServerConfig{Store: storetest.SQLite(t), Listen: "127.0.0.1:0", JoinToken: "join-race",
		BcryptCost: 4, HostTimeout: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	registerHosts(t, s, "pay", "a100-80g-sxm", 1)
	email := "payer@race.example"
	anon := client.New(s.URL, "", nil)
	if _, err := anon.Register(ctx, apiv1.RegisterRequest{Email: email, Name: "payer", Password: "pay-password"}); err != nil {
		t.Fatal(err)
	}
	login, err := anon.Login(ctx, apiv1.LoginRequest{Email: email, Password: "pay-password"})
	if err != nil {
		t.Fatal(err)
	}
	c := client.New(s.URL, login.Token, nil)
	// ¥100 is far from an A100 day (¥690).
	op, err := s.Auth.CreateAccount(ctx, "ops@pay.example", "ops", "ops-password-1", gpurent.RoleOperator, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Wallet.Credit(ctx, op, email, 10_000, "pay test", "seed"); err != nil {
		t.Fatal(err)
	}

	_, err = c.CreateInstance(ctx, apiv1.CreateInstanceRequest{GPUType: "a100-80g-sxm", GPUCount: 1, Image: "busybox", Plan: "daily"}, "")
	var apiErr *client.APIError
	if !errors.As(err, &apiErr) || apiErr.Code() != gpurent.CodePaymentRequired || apiErr.Problem.Status != http.StatusPaymentRequired {
		t.Fatalf("API rent of an unpaid package: %v", err)
	}
	detail := apiErr.Problem.Detail
	for _, want := range []string{"¥100.00", "¥690.00", "top up"} {
		if !strings.Contains(detail, want) {
			t.Errorf("API detail %q lacks %q", detail, want)
		}
	}

	// The CLI prints the same detail with its code.
	env := cli.Env{ConfigDir: t.TempDir(), PollInterval: 100 * time.Millisecond,
		Getenv: func(k string) string { return map[string]string{cli.EnvServer: s.URL, cli.EnvToken: login.Token}[k] }}
	root := cli.NewRootWith(env)
	var out, errb bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errb)
	root.SetIn(strings.NewReader(""))
	cctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if code := cli.Execute(cctx, root, []string{"rent", "--gpu", "a100-80g-sxm", "--image", "busybox", "--plan", "daily"}); code == 0 {
		t.Fatalf("CLI rent of an unpaid package succeeded: %s", out.String())
	}
	if got := errb.String(); !strings.Contains(got, detail) || !strings.Contains(got, "payment_required") {
		t.Errorf("CLI said %q, want the API's detail %q and the code", got, detail)
	}

	// The console's rent form, in both languages.
	csrf := strings.Repeat("c", 43)
	for lang, head := range map[string]string{"zh": "余额不足：", "en": "Not enough balance:"} {
		form := url.Values{"gpu": {"a100-80g-sxm"}, "count": {"1"}, "plan": {"daily"}, "image": {"busybox"}, "volume": {"50"}, "_csrf": {csrf}}
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.URL+"/rent?lang="+lang, strings.NewReader(form.Encode()))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.AddCookie(&http.Cookie{Name: "gpurent_session", Value: login.Token})
		req.AddCookie(&http.Cookie{Name: "gpurent_csrf", Value: csrf})
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		resp.Body.Close()
		page := html.UnescapeString(string(body))
		if resp.StatusCode != http.StatusPaymentRequired || !strings.Contains(page, head) || !strings.Contains(page, detail) {
			t.Errorf("console (%s): status %d; want 402 with %q and %q", lang, resp.StatusCode, head, detail)
		}
	}
	list, err := c.ListInstances(ctx, false)
	if err != nil || len(list.Instances) != 0 {
		t.Fatalf("instances after the refusals: %v %v", list, err)
	}
}
