package browser

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestEmailVerificationByMail: a new account's page says its address is
// unverified (zh/en) and offers a resend button; the button mails a link
// (through a real SMTP server on loopback) under the public URL; opening
// it signed in verifies the address; the link works once.
func TestEmailVerificationByMail(t *testing.T) {
	bg := context.Background()
	s, relay := startMailServer(t)
	if _, err := s.Auth.Register(bg, "xu@std.uestc.edu.cn", "徐", "verify-password-1"); err != nil {
		t.Fatal(err)
	}
	ctx := browser(t)
	login(t, ctx, s.URL, "xu@std.uestc.edu.cn", "verify-password-1", "zh")
	run(t, ctx, "open the account page", nav(s.URL+"/account?lang=zh"), chromedp.WaitVisible(chromedp.CSS("#email-unverified")))
	if got := text(t, ctx, "#email-unverified"); got != "未验证" {
		t.Fatalf("zh badge %q", got)
	}
	run(t, ctx, "open the account page in English", nav(s.URL+"/account?lang=en"), chromedp.WaitVisible(chromedp.CSS("#email-unverified")))
	if got := text(t, ctx, "#email-unverified"); got != "unverified" {
		t.Fatalf("en badge %q", got)
	}
	acctSubmit(t, ctx, "resend the verification mail", "#email-form", nil, "#email-resend", ".flash")
	if got := text(t, ctx, ".flash"); !strings.HasPrefix(got, "A verification link was sent") {
		t.Fatalf("notice %q", got)
	}
	msgs := relay.Wait(t, 1, 30*time.Second)
	m := msgs[0]
	if m.Header.Get("X-RcptTo") != "xu@std.uestc.edu.cn" || m.Subject != "Verify your gpurent e-mail address" {
		t.Fatalf("mail to %q, subject %q:\n%s", m.Header.Get("X-RcptTo"), m.Subject, m.Body)
	}
	local := mailedLink(t, m.Body, s.URL, "/account/email/confirm?token=")
	run(t, ctx, "open the mailed link", nav(local+"&lang=en"), chromedp.WaitVisible(chromedp.CSS("#email-verified")))
	if got := text(t, ctx, ".flash"); got != "Your e-mail address is verified." {
		t.Fatalf("notice %q", got)
	}
	// Used once.
	run(t, ctx, "open the mailed link again", nav(local+"&lang=en"), chromedp.WaitVisible(chromedp.CSS("#form-error")))
	if got := text(t, ctx, "#form-error"); !strings.Contains(got, "used") {
		t.Fatalf("a used link: %q", got)
	}
}
