package browser

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestSignInPagesBothLanguages: the sign-in and sign-up pages in Chinese
// (the default) and English, their form errors in the page's language,
// and a wrong password refused without saying which part was wrong.
func TestSignInPagesBothLanguages(t *testing.T) {
	st := startSite(t)
	ctx := browser(t)
	run(t, ctx, "open the sign-in page", nav(st.url+"/login"), chromedp.WaitVisible(chromedp.CSS("#login-form")))
	if h := text(t, ctx, "h1"); h != "登录" {
		t.Fatalf("default language: h1 %q, want 登录", h)
	}
	run(t, ctx, "switch to English", chromedp.Click(chromedp.CSS("#lang-switch")), chromedp.WaitVisible(chromedp.CSS("#login-form")))
	if h := text(t, ctx, "h1"); h != "Sign in" {
		t.Fatalf("after the switch: h1 %q, want Sign in", h)
	}
	// A sign-up with passwords that differ: refused in the page's language.
	for _, c := range []struct{ lang, want string }{{"zh", "两次输入的密码不一致"}, {"en", "The passwords differ"}} {
		run(t, ctx, "sign up with mismatched passwords",
			nav(st.url+"/signup?lang="+c.lang),
			chromedp.SendKeys(chromedp.CSS(`#signup-form input[name=email]`), "x@lab.example"),
			chromedp.SendKeys(chromedp.CSS(`#signup-form input[name=name]`), "X"),
			chromedp.SendKeys(chromedp.CSS(`#signup-form input[name=password]`), "password-one"),
			chromedp.SendKeys(chromedp.CSS(`#signup-form input[name=password2]`), "password-two"),
			chromedp.Click(chromedp.CSS("#signup-submit")),
			chromedp.WaitVisible(chromedp.CSS("#form-error")))
		if got := text(t, ctx, "#form-error"); got != c.want {
			t.Fatalf("%s: form error %q, want %q", c.lang, got, c.want)
		}
	}
	run(t, ctx, "wrong password",
		nav(st.url+"/login?lang=en"),
		chromedp.SendKeys(chromedp.CSS(`#login-form input[name=email]`), opsEmail),
		chromedp.SendKeys(chromedp.CSS(`#login-form input[name=password]`), "not-the-password"),
		chromedp.Click(chromedp.CSS("#login-submit")),
		chromedp.WaitVisible(chromedp.CSS("#form-error")))
	if got := text(t, ctx, "#form-error"); got != "Wrong e-mail or password" {
		t.Fatalf("wrong password: %q", got)
	}
	shot(t, ctx, "login-en")
	login(t, ctx, st.url, opsEmail, opsPassword, "zh")
	body := text(t, ctx, "header")
	if !strings.Contains(body, opsEmail) {
		t.Fatalf("signed in, the header does not say who: %q", body)
	}
}
