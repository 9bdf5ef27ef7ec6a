package browser

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"golang.org/x/crypto/ssh"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/app"
	"github.com/gpurent/gpurent/internal/mail/smtptest"
	"github.com/gpurent/gpurent/internal/wallet"
)

// acctEval is the value of a JavaScript expression in the page (a promise
// is awaited).
func acctEval[T any](t *testing.T, ctx context.Context, expr string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatalf("evaluate %s: %v", expr, err)
	}
	return v
}

// acctSubmit sets a form's fields (as a script could, past maxlength) and
// submits it with its button, then waits for the next page's element.
func acctSubmit(t *testing.T, ctx context.Context, what, form string, fields map[string]string, button, waitFor string) {
	t.Helper()
	run(t, ctx, what+": the form", chromedp.WaitVisible(chromedp.CSS(form)))
	for name, v := range fields {
		acctEval[bool](t, ctx, `(() => { document.querySelector(`+strconv.Quote(form+` [name="`+name+`"]`)+`).value = `+strconv.Quote(v)+`; return true; })()`)
	}
	// Mark this document, so that the wait below is for the next page and
	// never satisfied by an element of this one.
	acctEval[bool](t, ctx, `(() => { window.__acctOld = true; return true; })()`)
	run(t, ctx, what, chromedp.Click(chromedp.CSS(button)))
	poll(t, ctx, what+": the next page", `window.__acctOld !== true && document.readyState === "complete"`)
	run(t, ctx, what+": the answer", chromedp.WaitVisible(chromedp.CSS(waitFor)))
}

// acctFormError submits a form that must be refused and answers the error
// the page shows.
func acctFormError(t *testing.T, ctx context.Context, page, form string, fields map[string]string, button string) string {
	t.Helper()
	run(t, ctx, "open "+page, nav(page), chromedp.WaitVisible(chromedp.CSS(form)))
	acctSubmit(t, ctx, "submit "+form+" with bad input", form, fields, button, "#form-error")
	return text(t, ctx, "#form-error")
}

// acctPostForeign posts to path with the page's CSRF token, as the
// signed-in user of ctx (the way a curious customer would try another's
// ids), and answers the page title that comes back.
func acctPostForeign(t *testing.T, ctx context.Context, path string) string {
	t.Helper()
	acctEval[bool](t, ctx, `(() => { const f = document.createElement('form'); f.method = 'post'; f.action = `+strconv.Quote(path)+`;
	const i = document.createElement('input'); i.type = 'hidden'; i.name = '_csrf'; i.value = document.querySelector('input[name=_csrf]').value;
	f.appendChild(i); document.body.appendChild(f); f.submit(); return true; })()`)
	run(t, ctx, "wait for the answer to "+path, chromedp.WaitVisible(chromedp.CSS("#error-title")))
	return text(t, ctx, "#error-title")
}

// acctNewKey is a fresh ed25519 public key in authorized_keys form and
// its fingerprint.
func acctNewKey(t *testing.T, comment string) (string, string) {
	t.Helper()
	pub, _, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	k, err := ssh.NewPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(ssh.MarshalAuthorizedKey(k))) + " " + comment, ssh.FingerprintSHA256(k)
}

// TestAccountPages: a new customer's account page in Chinese and English;
// an API token shown once, copied, listed and revoked; an SSH key added
// with its fingerprint and a bad key refused in the page's language; an
// academic application; another customer gets the 404 page for the first
// one's token and key; a password change and a password reset through the
// link, each followed by a sign-in with the new password.
func TestAccountPages(t *testing.T) {
	st := startSite(t)
	bg := context.Background()
	ctx := browser(t)
	const email, pw = "li.wei@account.example", "first-password-1"
	signup(t, ctx, st.url, email, "李伟", pw, "zh")
	acc, err := st.s.Store.AccountByEmail(bg, email)
	if err != nil {
		t.Fatal(err)
	}

	// The profile, in both languages.
	run(t, ctx, "open the account page", nav(st.url+"/account"), chromedp.WaitVisible(chromedp.CSS("#profile")))
	if h, e, role := text(t, ctx, "h1"), text(t, ctx, "#profile-email"), text(t, ctx, "#profile-role"); h != "账户" || e != email || role != "客户" {
		t.Fatalf("zh profile: h1 %q, e-mail %q, role %q", h, e, role)
	}
	if msg := acctEval[string](t, ctx, `(document.querySelector('#tokens-error') || {}).textContent || ''`); msg != "" {
		t.Fatalf("the account page cannot list API tokens: %s", msg)
	}
	if got := text(t, ctx, "#academic-status"); got != "未认证" {
		t.Fatalf("zh academic status %q", got)
	}
	shot(t, ctx, "account-zh")
	run(t, ctx, "switch to English", chromedp.Click(chromedp.CSS("#lang-switch")), chromedp.WaitVisible(chromedp.CSS("#profile")))
	if h, role := text(t, ctx, "h1"), text(t, ctx, "#profile-role"); h != "Account" || role != "Customer" {
		t.Fatalf("en profile: h1 %q, role %q", h, role)
	}

	// An API token: a name is required; the secret shows once and works
	// until it is revoked.
	if got := acctFormError(t, ctx, st.url+"/account?lang=en", "#token-form", map[string]string{"name": " "}, "#token-submit"); got != "Token name is required" {
		t.Fatalf("token without a name: %q", got)
	}
	if got := acctFormError(t, ctx, st.url+"/account?lang=zh", "#token-form", map[string]string{"name": strings.Repeat("长", 101)}, "#token-submit"); got != "令牌名称 最多 100 个字符" {
		t.Fatalf("zh token name too long: %q", got)
	}
	run(t, ctx, "open the account page in English", nav(st.url+"/account?lang=en"), chromedp.WaitVisible(chromedp.CSS("#token-form")))
	acctSubmit(t, ctx, "create a token", "#token-form", map[string]string{"name": "ci-laptop"}, "#token-submit", "#new-token")
	secret := text(t, ctx, "#new-token")
	if !strings.HasPrefix(secret, "gpr_") {
		t.Fatalf("the new token shows %q", secret)
	}
	if got, err := st.s.Auth.Authenticate(bg, secret); err != nil || got.ID != acc.ID {
		t.Fatalf("the shown token does not sign in as the customer: %v", err)
	}
	run(t, ctx, "copy the token", chromedp.Click(chromedp.CSS("#new-token-copy")))
	acctWait(t, ctx, "the copy button says it copied", `document.querySelector('#new-token-copy').getAttribute('data-done') === '1'`)
	run(t, ctx, "open the account page again", nav(st.url+"/account"), chromedp.WaitVisible(chromedp.CSS("#token-list")))
	if n := acctEval[int](t, ctx, `document.querySelectorAll('#new-token').length`); n != 0 {
		t.Fatal("the token's secret shows a second time")
	}
	if name := text(t, ctx, "#token-list .token-name"); name != "ci-laptop" {
		t.Fatalf("token list shows %q", name)
	}
	if body := text(t, ctx, "#tokens"); strings.Contains(body, secret) || strings.Contains(body, "gpr_") {
		t.Fatal("the token list shows a secret")
	}
	shot(t, ctx, "account-en")
	toks, err := st.s.Auth.ListAPITokens(bg, acc)
	if err != nil || len(toks) != 1 {
		t.Fatalf("tokens %v, %v", toks, err)
	}
	if c := acctEval[string](t, ctx, `document.querySelector('#revoke-`+toks[0].ID+`').form.getAttribute('data-confirm')`); c == "" {
		t.Fatal("revoking asks no confirmation")
	}
	acctEval[bool](t, ctx, `(() => { window.confirm = () => true; return true; })()`)
	run(t, ctx, "revoke the token", chromedp.Click(chromedp.CSS("#revoke-"+toks[0].ID)), chromedp.WaitVisible(chromedp.CSS("#tokens-none")))
	if _, err := st.s.Auth.Authenticate(bg, secret); !gpurent.IsCode(err, gpurent.CodeUnauthorized) {
		t.Fatalf("a revoked token still signs in: %v", err)
	}

	// SSH keys: a bad key is refused in the page's language; a good one
	// shows its fingerprint.
	for _, c := range []struct{ lang, key, want string }{
		{"zh", "ssh-ed25519 not-a-key", "这不是 OpenSSH 公钥"},
		{"en", "ssh-ed25519 not-a-key", "That is not an OpenSSH public key"},
		{"en", "-----BEGIN OPENSSH PRIVATE KEY-----", "That is a private key!"},
		{"zh", "", "公钥 为必填项"},
	} {
		got := acctFormError(t, ctx, st.url+"/account?lang="+c.lang, "#key-form", map[string]string{"key": c.key}, "#key-submit")
		if !strings.HasPrefix(got, c.want) {
			t.Fatalf("%s: bad key %q: error %q, want it to start %q", c.lang, c.key, got, c.want)
		}
	}
	key, fp := acctNewKey(t, "li@laptop")
	run(t, ctx, "open the account page", nav(st.url+"/account?lang=zh"), chromedp.WaitVisible(chromedp.CSS("#key-form")))
	acctSubmit(t, ctx, "add a key", "#key-form", map[string]string{"key": key}, "#key-submit", "#key-list")
	if got := text(t, ctx, "#key-list .key-fp"); got != fp {
		t.Fatalf("fingerprint %q, want %q", got, fp)
	}
	if got := text(t, ctx, ".flash"); got != "公钥已添加。" {
		t.Fatalf("notice %q", got)
	}

	// Academic verification: with a proof, then pending.
	acctSubmit(t, ctx, "apply for academic prices", "#academic-form",
		map[string]string{"institution": "电子科技大学", "proof": "学生证 2024xxxx"}, "#academic-submit", "#academic-latest")
	if got := text(t, ctx, "#academic-latest"); !strings.Contains(got, "审核中") || !strings.Contains(got, "电子科技大学") {
		t.Fatalf("latest application: %q", got)
	}
	if n := acctEval[int](t, ctx, `document.querySelectorAll('#academic-form').length`); n != 0 {
		t.Fatal("a second application is offered while one is pending")
	}

	// Another customer: the first one's token and key answer 404.
	keys, err := st.s.SSHKeys.List(bg, acc)
	if err != nil || len(keys) != 1 {
		t.Fatalf("keys %v, %v", keys, err)
	}
	_, other, err := st.s.Auth.CreateAPIToken(bg, acc, "server")
	if err != nil {
		t.Fatal(err)
	}
	ctx2 := browser(t)
	signup(t, ctx2, st.url, "mallory@account.example", "Mallory", "mallory-password", "zh")
	run(t, ctx2, "open the account page", nav(st.url+"/account"), chromedp.WaitVisible(chromedp.CSS("#token-form")))
	if got := acctPostForeign(t, ctx2, "/account/ssh-keys/"+keys[0].ID+"/delete"); got != "页面不存在" {
		t.Fatalf("another customer deleting the key: %q", got)
	}
	run(t, ctx2, "back to the account page", nav(st.url+"/account"), chromedp.WaitVisible(chromedp.CSS("#token-form")))
	if got := acctPostForeign(t, ctx2, "/account/tokens/"+other.ID+"/revoke"); got != "页面不存在" {
		t.Fatalf("another customer revoking the token: %q", got)
	}
	if keys, _ := st.s.SSHKeys.List(bg, acc); len(keys) != 1 {
		t.Fatal("another customer deleted the key")
	}
	if toks, _ := st.s.Auth.ListAPITokens(bg, acc); len(toks) != 1 {
		t.Fatal("another customer revoked the token")
	}

	// Change the password: a wrong current one and a mismatch are refused
	// in the page's language; then the new one signs in.
	for _, c := range []struct {
		lang, current, p1, p2, want string
	}{
		{"zh", "wrong-password", "second-password-2", "second-password-2", "当前密码不正确"},
		{"en", "wrong-password", "second-password-2", "second-password-2", "The current password is wrong"},
		{"en", pw, "second-password-2", "second-password-3", "The passwords differ"},
		{"zh", pw, "short", "short", "密码至少 8 个字符"},
	} {
		got := acctFormError(t, ctx, st.url+"/account?lang="+c.lang, "#password-form",
			map[string]string{"current": c.current, "password": c.p1, "password2": c.p2}, "#password-submit")
		if got != c.want {
			t.Fatalf("%s: change password: %q, want %q", c.lang, got, c.want)
		}
	}
	const pw2 = "second-password-2"
	run(t, ctx, "open the account page", nav(st.url+"/account?lang=en"), chromedp.WaitVisible(chromedp.CSS("#password-form")))
	acctSubmit(t, ctx, "change the password", "#password-form",
		map[string]string{"current": pw, "password": pw2, "password2": pw2}, "#password-submit", ".flash")
	if got := text(t, ctx, ".flash"); got != "Your password is changed." {
		t.Fatalf("notice %q", got)
	}
	run(t, ctx, "sign out", chromedp.Click(chromedp.CSS("#logout")), chromedp.WaitVisible(chromedp.CSS("#login-form")))
	login(t, ctx, st.url, email, pw2, "en")

	// Forgot password: the same answer for any address; a bad address is
	// refused in the page's language.
	ctx3 := browser(t)
	for _, c := range []struct{ lang, want string }{{"zh", "邮箱格式不正确"}, {"en", "That is not an e-mail address"}} {
		got := acctFormError(t, ctx3, st.url+"/password/forgot?lang="+c.lang, "#forgot-form", map[string]string{"email": "not-an-address"}, "#forgot-submit")
		if got != c.want {
			t.Fatalf("%s forgot with a bad address: %q", c.lang, got)
		}
	}
	var answers []string
	for _, addr := range []string{email, "nobody@account.example"} {
		run(t, ctx3, "open the forgot page", nav(st.url+"/password/forgot?lang=en"), chromedp.WaitVisible(chromedp.CSS("#forgot-form")))
		acctSubmit(t, ctx3, "ask for a link", "#forgot-form", map[string]string{"email": addr}, "#forgot-submit", ".flash")
		answers = append(answers, text(t, ctx3, ".flash"))
	}
	if answers[0] != answers[1] || !strings.HasPrefix(answers[0], "If an account exists") {
		t.Fatalf("forgot answers differ or say too much: %q", answers)
	}

	// Reset through the link: the page names the account, refuses a
	// mismatch, sets the password, ends every session, and the link works
	// once.
	link, err := st.s.Auth.RequestPasswordReset(bg, email)
	if err != nil || link == "" {
		t.Fatalf("reset secret %q, %v", link, err)
	}
	resetURL := st.url + "/password/reset?lang=zh&token=" + link
	run(t, ctx3, "open the reset link", nav(resetURL), chromedp.WaitVisible(chromedp.CSS("#reset-form")))
	if got := text(t, ctx3, "#reset-for"); !strings.Contains(got, email) {
		t.Fatalf("the reset page names %q", got)
	}
	acctSubmit(t, ctx3, "reset with a mismatch", "#reset-form", map[string]string{"password": "third-password-3", "password2": "third-password-4"},
		"#reset-submit", "#form-error")
	if got := text(t, ctx3, "#form-error"); got != "两次输入的密码不一致" {
		t.Fatalf("reset mismatch: %q", got)
	}
	const pw3 = "third-password-3"
	acctSubmit(t, ctx3, "reset", "#reset-form", map[string]string{"password": pw3, "password2": pw3}, "#reset-submit", "#reset-signin")
	run(t, ctx, "the first browser's session ended", nav(st.url+"/account"), chromedp.WaitVisible(chromedp.CSS("#login-form")))
	run(t, ctx3, "the link again", nav(resetURL), chromedp.WaitVisible(chromedp.CSS("#reset-again")))
	if got := text(t, ctx3, "#form-error"); got != "重置链接无效、已使用或已过期，请重新申请。" {
		t.Fatalf("a used link: %q", got)
	}
	login(t, ctx3, st.url, email, pw3, "zh")
	run(t, ctx3, "signed in with the reset password", nav(st.url+"/account"), chromedp.WaitVisible(chromedp.CSS("#profile")))
}

// acctWait waits until the JavaScript expression is true in the page.
func acctWait(t *testing.T, ctx context.Context, what, expr string) {
	t.Helper()
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](expr, chromedp.WithPollingTimeout(20*time.Second))); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// TestBillingPages: the wallet, a voucher an operator made redeemed (a bad
// code refused in both languages), spend limits (a bad amount refused in
// both languages, a good one stored), the webhook, the ledger, this
// month's statement and its CSV, and another customer's view of none of
// it.
func TestBillingPages(t *testing.T) {
	st := startSite(t)
	bg := context.Background()
	ctx := browser(t)
	const email = "wang.fang@billing.example"
	signup(t, ctx, st.url, email, "王芳", "billing-password-1", "zh")
	acc, err := st.s.Store.AccountByEmail(bg, email)
	if err != nil {
		t.Fatal(err)
	}
	v, err := st.s.Wallet.CreateVoucher(bg, st.ops, 50_000, gpurent.VoucherCash, time.Now().Add(24*time.Hour), 5)
	if err != nil {
		t.Fatal(err)
	}

	run(t, ctx, "open billing", nav(st.url+"/billing"), chromedp.WaitVisible(chromedp.CSS("#wallet")))
	if h, bal := text(t, ctx, "h1"), text(t, ctx, "#wallet-spendable"); h != "费用" || bal != "¥0.00" {
		t.Fatalf("zh billing: h1 %q, spendable %q", h, bal)
	}
	if got := text(t, ctx, "#wallet-runway"); got != "无按量实例在消耗" {
		t.Fatalf("runway %q", got)
	}

	// Vouchers: a malformed code, an unknown code, then the operator's.
	for _, c := range []struct{ lang, code, want string }{
		{"zh", "abc", "兑换码为 12 位字母和数字，如 7KQ2-M9XD-4RTB"},
		{"en", "abc", "A voucher code is 12 letters and digits, like 7KQ2-M9XD-4RTB"},
		{"en", "0000-0000-0000", "No voucher has this code: check it and try again"},
		{"zh", "", "兑换码 为必填项"},
	} {
		if got := acctFormError(t, ctx, st.url+"/billing?lang="+c.lang, "#voucher-form", map[string]string{"code": c.code}, "#voucher-submit"); got != c.want {
			t.Fatalf("%s voucher %q: %q, want %q", c.lang, c.code, got, c.want)
		}
	}
	run(t, ctx, "open billing", nav(st.url+"/billing?lang=zh"), chromedp.WaitVisible(chromedp.CSS("#voucher-form")))
	acctSubmit(t, ctx, "redeem the voucher", "#voucher-form", map[string]string{"code": strings.ToLower(v.Code)}, "#voucher-submit", ".flash")
	if got := text(t, ctx, "#wallet-spendable"); got != "¥500.00" {
		t.Fatalf("after the voucher: spendable %q", got)
	}
	// A fresh page, so that the notice waited for is the new one.
	run(t, ctx, "open billing again", nav(st.url+"/billing?lang=zh"), chromedp.WaitVisible(chromedp.CSS("#voucher-form")),
		chromedp.WaitNotPresent(chromedp.CSS(".flash")))
	acctSubmit(t, ctx, "redeem the voucher again", "#voucher-form", map[string]string{"code": v.Code}, "#voucher-submit", ".flash")
	if got := text(t, ctx, ".flash"); got != "你已兑换过这张代金券。" {
		t.Fatalf("a second redemption: %q", got)
	}
	if op, row := text(t, ctx, "#ledger-list .ledger-op"), text(t, ctx, "#ledger-list .ledger-row"); op != "充值" || !strings.Contains(row, "¥500.00") {
		t.Fatalf("ledger row %q (%q)", row, op)
	}

	// The ledger pages by 50, newest first: 50 operator credits push the
	// voucher to the second page.
	for i := range 50 {
		if _, _, err := st.s.Wallet.Credit(bg, st.ops, acc.ID, int64(100+i), "goodwill", "acct-credit-"+strconv.Itoa(i)); err != nil {
			t.Fatal(err)
		}
	}
	run(t, ctx, "open billing", nav(st.url+"/billing?lang=zh"), chromedp.WaitVisible(chromedp.CSS("#ledger-older")))
	if n := acctEval[int](t, ctx, `document.querySelectorAll('#ledger-list .ledger-row').length`); n != 50 {
		t.Fatalf("first ledger page has %d rows", n)
	}
	if row := text(t, ctx, "#ledger-list .ledger-row"); !strings.Contains(row, "¥1.49") {
		t.Fatalf("newest row %q, want the last credit", row)
	}
	run(t, ctx, "older entries", chromedp.Click(chromedp.CSS("#ledger-older")), chromedp.WaitVisible(chromedp.CSS("#ledger-newest")))
	if n, row := acctEval[int](t, ctx, `document.querySelectorAll('#ledger-list .ledger-row').length`), text(t, ctx, "#ledger-list .ledger-row"); n != 1 || !strings.Contains(row, "voucher") {
		t.Fatalf("second ledger page: %d rows, first %q", n, row)
	}

	// Spend limits: bad amounts refused in the page's language.
	for _, c := range []struct{ lang, daily, monthly, want string }{
		{"zh", "12.345", "0", "每日上限（元，0 为不限） 最多两位小数"},
		{"en", "12.345", "0", "Daily cap (CNY, 0: none) takes at most two decimals"},
		{"en", "100", "-5", "Monthly cap (CNY, 0: none) cannot be negative"},
		{"zh", "一百", "0", "每日上限（元，0 为不限） 必须是金额，如 100 或 99.50"},
	} {
		got := acctFormError(t, ctx, st.url+"/billing?lang="+c.lang, "#limits-form", map[string]string{"daily": c.daily, "monthly": c.monthly}, "#limits-submit")
		if got != c.want {
			t.Fatalf("%s limits %q/%q: %q, want %q", c.lang, c.daily, c.monthly, got, c.want)
		}
		if typed := acctEval[string](t, ctx, `document.querySelector('#limits-form [name=daily]').value`); typed != c.daily {
			t.Fatalf("the form lost what was typed: %q", typed)
		}
	}
	run(t, ctx, "open billing", nav(st.url+"/billing?lang=en"), chromedp.WaitVisible(chromedp.CSS("#limits-form")))
	acctSubmit(t, ctx, "set limits", "#limits-form", map[string]string{"daily": "100", "monthly": "2,000.50"}, "#limits-submit", ".flash")
	if d, m := text(t, ctx, "#limit-daily"), text(t, ctx, "#limit-monthly"); d != "¥100.00" || m != "¥2,000.50" {
		t.Fatalf("limits shown %q, %q", d, m)
	}
	l, err := st.s.Wallet.Limits(bg, acc)
	if err != nil || l.DailyFen != 10_000 || l.MonthlyFen != 200_050 || l.StopRunning {
		t.Fatalf("limits stored %+v, %v", l, err)
	}

	// The webhook.
	if got := acctFormError(t, ctx, st.url+"/billing?lang=zh", "#webhook-form", map[string]string{"webhook": "ftp://hooks.example/x"}, "#webhook-submit"); got != "Webhook 必须是 http:// 或 https:// 开头的网址" {
		t.Fatalf("bad webhook: %q", got)
	}
	run(t, ctx, "open billing", nav(st.url+"/billing?lang=en"), chromedp.WaitVisible(chromedp.CSS("#webhook-form")))
	acctSubmit(t, ctx, "set the webhook", "#webhook-form", map[string]string{"webhook": "https://hooks.example/gpurent"}, "#webhook-submit", ".flash")
	if _, hook, err := st.s.Wallet.Events(bg, acc, 1); err != nil || hook != "https://hooks.example/gpurent" {
		t.Fatalf("webhook %q, %v", hook, err)
	}
	shot(t, ctx, "billing-en")
	run(t, ctx, "billing in Chinese", nav(st.url+"/billing?lang=zh"), chromedp.WaitVisible(chromedp.CSS("#wallet")))
	shot(t, ctx, "billing-zh")

	// This month's statement, as a page and as CSV with the API's columns.
	month := text(t, ctx, "#statement-this-link")
	month = strings.TrimSuffix(month, " 账单")
	run(t, ctx, "open the statement", chromedp.Click(chromedp.CSS("#statement-this-link")), chromedp.WaitVisible(chromedp.CSS("#statement-total")))
	if got := text(t, ctx, "#statement-total"); got != "¥0.00" {
		t.Fatalf("statement total %q", got)
	}
	csv := acctEval[string](t, ctx, `fetch('/billing/statements/`+month+`.csv').then(r => r.text().then(b => r.status + ' ' + r.headers.get('content-type') + '\n' + b))`)
	wantHead := "200 text/csv; charset=utf-8\nmonth,instance_id,instance_name,gpu_type,gpus,window,rate_fen_per_hour,units,seconds,exact_fen,amount_fen,price_permille\n"
	if !strings.HasPrefix(csv, wantHead) || !strings.Contains(csv, month+",,,,,total,,,,,0,") {
		t.Fatalf("CSV of %s:\n%s", month, csv)
	}
	if got := acctEval[int](t, ctx, `fetch('/billing/statements/1999-01.csv').then(r => r.status)`); got != 404 {
		t.Fatalf("a month before the account: %d", got)
	}

	// Another customer sees only their own wallet.
	ctx2 := browser(t)
	signup(t, ctx2, st.url, "zhao@billing.example", "Zhao", "zhao-password-1", "en")
	run(t, ctx2, "open billing", nav(st.url+"/billing"), chromedp.WaitVisible(chromedp.CSS("#wallet")))
	if got := text(t, ctx2, "#wallet-spendable"); got != "¥0.00" {
		t.Fatalf("another customer's spendable %q", got)
	}
	if n := acctEval[int](t, ctx2, `document.querySelectorAll('#ledger-list').length`); n != 0 {
		t.Fatal("another customer sees ledger entries")
	}
}

// TestBillingBankTopUp: with the bank-transfer provider configured, a
// top-up shows the reference to quote (a bad amount refused in both
// languages), and the operator's confirmation lands in the wallet. It needs
// no agents: a control plane alone.
func TestBillingBankTopUp(t *testing.T) {
	bg := context.Background()
	dir := t.TempDir()
	s, err := app.StartServer(bg, app.ServerConfig{DSN: dir + "/gpurent.db", Listen: "127.0.0.1:0",
		BcryptCost: 4, PaymentProviders: []wallet.PaymentProvider{wallet.NewBankTransferProvider("ICBC Chengdu Hi-tech, gpurent Ltd, 6222 0000 1111")}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	ctx := browser(t)
	signup(t, ctx, s.URL, "chen@topup.example", "陈", "topup-password-1", "zh")
	for _, c := range []struct{ lang, amount, want string }{
		{"zh", "0.50", "金额（元） 至少为 ¥1.00"},
		{"en", "0.50", "Amount (CNY) must be at least ¥1.00"},
		{"en", "10.001", "Amount (CNY) takes at most two decimals"},
		{"zh", "20000000", "金额（元） 不能超过 ¥10,000,000.00"},
	} {
		if got := acctFormError(t, ctx, s.URL+"/billing?lang="+c.lang, "#topup-form", map[string]string{"amount": c.amount}, "#topup-submit"); got != c.want {
			t.Fatalf("%s top-up of %q: %q, want %q", c.lang, c.amount, got, c.want)
		}
	}
	run(t, ctx, "open billing", nav(s.URL+"/billing?lang=en"), chromedp.WaitVisible(chromedp.CSS("#topup-form")))
	acctSubmit(t, ctx, "top up", "#topup-form", map[string]string{"amount": "1000"}, "#topup-submit", "#payment-ref")
	ref := text(t, ctx, "#payment-ref")
	if !strings.HasPrefix(ref, "BT") || !strings.Contains(text(t, ctx, "#payment"), "Transfer ¥1,000.00") {
		t.Fatalf("payment shown: %q / %q", ref, text(t, ctx, "#payment"))
	}
	if _, err := s.Wallet.ConfirmPayment(bg, wallet.BankTransferName, ref, 100_000); err != nil {
		t.Fatal(err)
	}
	run(t, ctx, "open billing", nav(s.URL+"/billing"), chromedp.WaitVisible(chromedp.CSS("#wallet")))
	if got := text(t, ctx, "#wallet-spendable"); got != "¥1,000.00" {
		t.Fatalf("after the confirmed transfer: %q", got)
	}
}

// acctLinkLog keeps the reset links the console logs (its delivery when no
// mail sender is configured).
type acctLinkLog struct {
	mu    *sync.Mutex
	links *[]string
}

func (l acctLinkLog) Enabled(context.Context, slog.Level) bool { return true }
func (l acctLinkLog) WithAttrs([]slog.Attr) slog.Handler       { return l }
func (l acctLinkLog) WithGroup(string) slog.Handler            { return l }
func (l acctLinkLog) Handle(_ context.Context, r slog.Record) error {
	if r.Level < slog.LevelWarn {
		return nil
	}
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "link" {
			l.mu.Lock()
			*l.links = append(*l.links, a.Value.String())
			l.mu.Unlock()
		}
		return true
	})
	return nil
}

// TestPasswordForgotLink: without a mail sender, the forgot form logs the
// reset link (at WARN, with the address) for an operator to pass on, and
// nothing for an unknown address; the logged link sets a new password.
func TestPasswordForgotLink(t *testing.T) {
	bg := context.Background()
	var mu sync.Mutex
	var links []string
	s, err := app.StartServer(bg, app.ServerConfig{DSN: t.TempDir() + "/gpurent.db", Listen: "127.0.0.1:0",
		BcryptCost: 4, Logger: slog.New(acctLinkLog{mu: &mu, links: &links})})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if _, err := s.Auth.Register(bg, "zhou@reset.example", "周", "forgotten-password"); err != nil {
		t.Fatal(err)
	}
	logged := func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), links...)
	}
	ctx := browser(t)
	for _, addr := range []string{"nobody@reset.example", "ZHOU@reset.example"} {
		run(t, ctx, "open the forgot page", nav(s.URL+"/password/forgot"), chromedp.WaitVisible(chromedp.CSS("#forgot-form")))
		acctSubmit(t, ctx, "ask for a link for "+addr, "#forgot-form", map[string]string{"email": addr}, "#forgot-submit", ".flash")
		if got := text(t, ctx, ".flash"); got != "如果该邮箱注册过账户，重置链接已经发出，请查收邮件。" {
			t.Fatalf("answer for %s: %q", addr, got)
		}
		if addr == "nobody@reset.example" && len(logged()) != 0 {
			t.Fatalf("a link was made for an unknown address: %v", logged())
		}
	}
	got := logged()
	if len(got) != 1 || !strings.HasPrefix(got[0], s.URL+"/password/reset?token=") {
		t.Fatalf("logged links %v", got)
	}
	run(t, ctx, "open the logged link", nav(got[0]+"&lang=en"), chromedp.WaitVisible(chromedp.CSS("#reset-form")))
	acctSubmit(t, ctx, "set a new password", "#reset-form", map[string]string{"password": "remembered-password", "password2": "remembered-password"},
		"#reset-submit", "#reset-signin")
	if got := text(t, ctx, ".flash"); !strings.HasPrefix(got, "Your password is set") {
		t.Fatalf("after the reset: %q", got)
	}
	login(t, ctx, s.URL, "zhou@reset.example", "remembered-password", "zh")
}

// TestPasswordResetByMail: with a mail server configured (a real SMTP
// server on loopback), the forgot form mails the link in the page's
// language to the account's address, under the public URL, and nothing
// to an unknown address; the mailed link sets a new password once.
func TestPasswordResetByMail(t *testing.T) {
	bg := context.Background()
	s, relay := startMailServer(t)
	if _, err := s.Auth.Register(bg, "li@mail.example", "李", "forgotten-password"); err != nil {
		t.Fatal(err)
	}
	ctx := browser(t)
	for _, addr := range []string{"nobody@mail.example", "Li@Mail.example"} {
		run(t, ctx, "open the forgot page", nav(s.URL+"/password/forgot?lang=en"), chromedp.WaitVisible(chromedp.CSS("#forgot-form")))
		acctSubmit(t, ctx, "ask for a link for "+addr, "#forgot-form", map[string]string{"email": addr}, "#forgot-submit", ".flash")
		if got := text(t, ctx, ".flash"); !strings.HasPrefix(got, "If an account exists for that address") {
			t.Fatalf("answer for %s: %q", addr, got)
		}
	}
	relay.Wait(t, 1, 30*time.Second)
	time.Sleep(300 * time.Millisecond) // a second (wrong) mail would be here by now
	msgs := relay.Messages(t)
	if len(msgs) != 1 {
		t.Fatalf("%d mails sent, want one (none for the unknown address)", len(msgs))
	}
	m := msgs[0]
	if m.Header.Get("X-RcptTo") != "li@mail.example" || m.Subject != "Reset your gpurent password" ||
		!strings.Contains(m.Body, "li@mail.example") || !strings.Contains(m.Header.Get("From"), "noreply@gpu.console.example") {
		t.Fatalf("mail to %q, subject %q, from %q:\n%s", m.Header.Get("X-RcptTo"), m.Subject, m.Header.Get("From"), m.Body)
	}
	local := mailedLink(t, m.Body, s.URL, "/password/reset?token=")
	run(t, ctx, "open the mailed link", nav(local+"&lang=zh"), chromedp.WaitVisible(chromedp.CSS("#reset-form")))
	acctSubmit(t, ctx, "set a new password", "#reset-form", map[string]string{"password": "mailed-password-1", "password2": "mailed-password-1"},
		"#reset-submit", "#reset-signin")
	login(t, ctx, s.URL, "li@mail.example", "mailed-password-1", "en")
	// Used once: the link now only offers to ask for a new one.
	run(t, ctx, "open the mailed link again", nav(local), chromedp.WaitVisible(chromedp.CSS("#reset-again")))
	if got := acctEval[bool](t, ctx, `document.querySelector("#reset-form") !== null`); got {
		t.Fatal("a used link still offers the reset form")
	}
}

// mailPublicURL is the public URL of startMailServer's control plane.
const mailPublicURL = "http://gpu.console.example"

// startMailServer starts a control plane whose console mails through a
// real SMTP server on loopback, under mailPublicURL.
func startMailServer(t *testing.T) (*app.Server, *smtptest.Server) {
	t.Helper()
	relay := smtptest.Start(t, smtptest.Options{})
	s, err := app.StartServer(context.Background(), app.ServerConfig{DSN: t.TempDir() + "/gpurent.db", Listen: "127.0.0.1:0",
		BcryptCost: 4, PublicURL: mailPublicURL,
		MailURL: "smtp://" + relay.Addr + "?from=" + "gpurent%20%3Cnoreply%40gpu.console.example%3E"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, relay
}

// mailedLink finds the link under mailPublicURL+path in a mail's body and
// answers it on the console's listener (the browser reaches the console
// there, not at the public name).
func mailedLink(t *testing.T, body, listener, path string) string {
	t.Helper()
	for _, line := range strings.Split(body, "\r\n") {
		if strings.HasPrefix(line, mailPublicURL+path) {
			return listener + strings.TrimPrefix(line, mailPublicURL)
		}
	}
	t.Fatalf("no link under %s in the mail:\n%s", mailPublicURL+path, body)
	return ""
}
