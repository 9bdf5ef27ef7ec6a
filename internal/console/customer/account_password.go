package customer

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/auth"
	"github.com/gpurent/gpurent/internal/console/web"
)

// passwordMessages are the password pages' messages.
func passwordMessages() map[string]web.Pair {
	return map[string]web.Pair{
		"password.forgot.title":  {"找回密码", "Forgot your password"},
		"password.forgot.intro":  {"输入注册邮箱，我们会发送一个重置密码的链接（1 小时内有效）。", "Enter your sign-in e-mail and we will send a link to set a new password (valid for an hour)."},
		"password.forgot.submit": {"发送重置链接", "Send the link"},
		"password.forgot.sent":   {"如果该邮箱注册过账户，重置链接已经发出，请查收邮件。", "If an account exists for that address, a link was sent to it. Check your mail."},
		"password.reset.title":   {"设置新密码", "Set a new password"},
		"password.reset.for":     {"账户：%s", "Account: %s"},
		"password.reset.submit":  {"设置新密码", "Set the password"},
		"password.reset.bad":     {"重置链接无效、已使用或已过期，请重新申请。", "This link is unknown, used or expired: ask for a new one."},
		"password.reset.again":   {"重新申请重置链接", "Ask for a new link"},
		"password.reset.done":    {"密码已更新，所有设备上的登录已退出。请用新密码登录。", "Your password is set and every sign-in has ended. Sign in with the new password."},
		"password.reset.signin":  {"去登录", "Sign in"},
		"password.mail.subject":  {"重置 gpurent 密码", "Reset your gpurent password"},
		"password.mail.body": {"有人（希望是你本人）为账户 %s 申请了重置密码。\n\n请在 1 小时内打开下面的链接设置新密码：\n%s\n\n链接只能使用一次。如果不是你本人申请，请忽略这封邮件，密码不会改变。",
			"Someone (we hope you) asked to reset the password of the account %s.\n\nOpen this link within an hour to set a new one:\n%s\n\nThe link works once. If you did not ask, ignore this mail: your password stays as it is."},
	}
}

// passwordForm is the password pages' data.
type passwordForm struct {
	Email string
	// Token is the reset secret the form carries; Invalid says the link
	// cannot be used; Done that the password is set.
	Token   string
	Invalid bool
	Done    bool
	Sent    bool
}

func (s *Pages) passwordForgotPage(w http.ResponseWriter, r *http.Request, p *web.Page) {
	p.Title = p.T("password.forgot.title")
	f := passwordForm{Sent: r.URL.Query().Get("sent") == "1"}
	if f.Sent {
		p.Flash = p.T("password.forgot.sent")
	}
	s.site.Render(w, r, p, "password_forgot", f)
}

// passwordForgot sends a reset link when the address has an account, and
// answers the same either way; the link is delivered in the background, so
// the mail system's delay does not tell either.
func (s *Pages) passwordForgot(w http.ResponseWriter, r *http.Request, p *web.Page) {
	p.Title = p.T("password.forgot.title")
	f := passwordForm{Email: strings.TrimSpace(r.PostFormValue("email"))}
	again := func(status int, msg string) {
		p.Error = msg
		s.site.RenderStatus(w, r, p, status, "password_forgot", f)
	}
	if f.Email == "" {
		again(http.StatusBadRequest, p.T("common.required", p.T("login.email")))
		return
	}
	addr, err := auth.NormalizeEmail(f.Email)
	if err != nil {
		again(http.StatusBadRequest, p.T("signup.bad_email"))
		return
	}
	if ok, wait := s.limit.Address(s.site.ClientIP(r)); !ok {
		again(http.StatusTooManyRequests, p.T("err.too_many", minutes(wait)))
		return
	}
	if ok, wait := s.limit.Key("reset:" + addr); !ok {
		again(http.StatusTooManyRequests, p.T("err.too_many", minutes(wait)))
		return
	}
	secret, err := s.cfg.Auth.RequestPasswordReset(r.Context(), addr)
	if err != nil {
		s.site.Fail(w, r, p, err)
		return
	}
	if secret != "" {
		s.sendResetLink(p, addr, s.resetLink(r, secret))
	}
	http.Redirect(w, r, "/password/forgot?sent=1", http.StatusSeeOther)
}

// resetLink is the reset page's address with the secret: under the
// configured public URL (never the request's Host header, which a caller
// chooses, unless none is configured).
func (s *Pages) resetLink(r *http.Request, secret string) string {
	base := strings.TrimRight(s.cfg.PublicURL, "/")
	if base == "" {
		scheme := "http"
		if r.TLS != nil || s.cfg.SecureCookies {
			scheme = "https"
		}
		base = scheme + "://" + r.Host
		s.log.Warn("console: no public URL configured; the reset link names the request's host", "host", r.Host)
	}
	return base + "/password/reset?token=" + url.QueryEscape(secret)
}

// sendResetLink mails the link, in the page's language, in the
// background, so that the answer takes as long whether or not the address
// has an account; without a mailer it logs the link for an operator to
// pass on.
func (s *Pages) sendResetLink(p *web.Page, email, link string) {
	if s.cfg.Mailer == nil {
		s.log.Warn("console: password reset requested; no mail server is configured, pass this link on", "email", email, "link", link)
		return
	}
	subject, body := p.T("password.mail.subject"), p.T("password.mail.body", email, link)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := s.cfg.Mailer.Send(ctx, email, subject, body); err != nil {
			s.log.Error("console: sending a password-reset link failed", "email", email, "err", err)
		} else {
			s.log.Info("console: password-reset link sent", "email", email)
		}
	}()
}

func (s *Pages) passwordResetPage(w http.ResponseWriter, r *http.Request, p *web.Page) {
	p.Title = p.T("password.reset.title")
	if r.URL.Query().Get("done") == "1" {
		p.Flash = p.T("password.reset.done")
		s.site.Render(w, r, p, "password_reset", passwordForm{Done: true})
		return
	}
	f := passwordForm{Token: r.URL.Query().Get("token")}
	email, err := s.cfg.Auth.CheckReset(r.Context(), f.Token)
	if err != nil {
		s.passwordResetError(w, r, p, f, err)
		return
	}
	f.Email = email
	s.site.Render(w, r, p, "password_reset", f)
}

func (s *Pages) passwordReset(w http.ResponseWriter, r *http.Request, p *web.Page) {
	p.Title = p.T("password.reset.title")
	f := passwordForm{Token: r.PostFormValue("token")}
	email, err := s.cfg.Auth.CheckReset(r.Context(), f.Token)
	if err != nil {
		s.passwordResetError(w, r, p, f, err)
		return
	}
	f.Email = email
	if msg := newPasswordProblem(p, r.PostFormValue("password"), r.PostFormValue("password2")); msg != "" {
		p.Error = msg
		s.site.RenderStatus(w, r, p, http.StatusBadRequest, "password_reset", f)
		return
	}
	if ok, wait := s.limit.Address(s.site.ClientIP(r)); !ok {
		p.Error = p.T("err.too_many", minutes(wait))
		s.site.RenderStatus(w, r, p, http.StatusTooManyRequests, "password_reset", f)
		return
	}
	if err := s.cfg.Auth.ResetPassword(r.Context(), f.Token, r.PostFormValue("password")); err != nil {
		s.passwordResetError(w, r, p, f, err)
		return
	}
	s.site.ClearSession(w)
	http.Redirect(w, r, "/password/reset?done=1", http.StatusSeeOther)
}

// passwordResetError answers a refused reset: an unusable link, a password
// the service refuses, or the error page.
func (s *Pages) passwordResetError(w http.ResponseWriter, r *http.Request, p *web.Page, f passwordForm, err error) {
	switch gpurent.ErrorCode(err) {
	case gpurent.CodeUnauthorized:
		p.Error = p.T("password.reset.bad")
		s.site.RenderStatus(w, r, p, http.StatusBadRequest, "password_reset", passwordForm{Invalid: true})
	case gpurent.CodeInvalid:
		p.FormError(err)
		s.site.RenderStatus(w, r, p, http.StatusBadRequest, "password_reset", f)
	default:
		s.site.Fail(w, r, p, err)
	}
}

// newPasswordProblem checks a new password typed twice; it answers the
// problem in the page's language, or "".
func newPasswordProblem(p *web.Page, pw, pw2 string) string {
	switch {
	case len(pw) < auth.MinPasswordBytes:
		return p.T("signup.short", auth.MinPasswordBytes)
	case len(pw) > auth.MaxPasswordBytes:
		return p.T("account.pw.long", auth.MaxPasswordBytes)
	case pw != pw2:
		return p.T("signup.mismatch")
	}
	return ""
}

// accountChangePassword changes the password after checking the current
// one, then signs this browser in again (the change ends every session).
func (s *Pages) accountChangePassword(w http.ResponseWriter, r *http.Request, p *web.Page) {
	f := acctForm{Method: string(gpurent.AcademicProof)}
	current, pw := r.PostFormValue("current"), r.PostFormValue("password")
	if current == "" {
		s.accountAgain(w, r, p, http.StatusBadRequest, f, p.T("common.required", p.T("account.pw.current")))
		return
	}
	if msg := newPasswordProblem(p, pw, r.PostFormValue("password2")); msg != "" {
		s.accountAgain(w, r, p, http.StatusBadRequest, f, msg)
		return
	}
	// Guessing the current password from a stolen session is a login
	// attempt like any other.
	if ok, wait := s.limit.Login(p.Account.Email, s.site.ClientIP(r)); !ok {
		s.accountAgain(w, r, p, http.StatusTooManyRequests, f, p.T("err.too_many", minutes(wait)))
		return
	}
	err := s.cfg.Auth.ChangePassword(r.Context(), p.Account, current, pw)
	if gpurent.IsCode(err, gpurent.CodeUnauthorized) {
		s.accountAgain(w, r, p, http.StatusBadRequest, f, p.T("account.pw.wrong"))
		return
	}
	if err != nil {
		s.accountServiceError(w, r, p, f, err)
		return
	}
	secret, _, _, err := s.cfg.Auth.Login(r.Context(), p.Account.Email, pw)
	if err != nil {
		s.site.ClearSession(w)
		http.Redirect(w, r, "/login?next=%2Faccount", http.StatusSeeOther)
		return
	}
	s.site.SetSession(w, secret, s.cfg.SessionTTL)
	http.Redirect(w, r, "/account?done=password", http.StatusSeeOther)
}
