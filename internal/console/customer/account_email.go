package customer

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/gpurent/gpurent/internal/console/web"
)

// emailMessages are the e-mail verification's messages.
func emailMessages() map[string]web.Pair {
	return map[string]web.Pair{
		"account.email.status":     {"邮箱验证", "E-mail verification"},
		"account.email.verified":   {"已验证", "verified"},
		"account.email.unverified": {"未验证", "unverified"},
		"account.email.resend":     {"发送验证邮件", "Send the verification mail"},
		"account.done.email_sent":  {"验证邮件已发出（48 小时内有效），请查收。", "A verification link was sent (valid for 48 hours). Check your mail."},
		"account.done.email_ok":    {"邮箱已验证。", "Your e-mail address is verified."},
		"account.email.bad":        {"验证链接无效、已使用、已过期或属于其他账户，请重新发送。", "This verification link is unknown, used, expired or another account's: send a new one."},
		"email.mail.subject":       {"验证你的 gpurent 邮箱", "Verify your gpurent e-mail address"},
		"email.mail.body": {"请在 48 小时内登录后打开下面的链接，验证账户 %s 的邮箱：\n%s\n\n链接只能使用一次。如果不是你本人注册，请忽略这封邮件。",
			"Sign in and open this link within 48 hours to verify the address of the account %s:\n%s\n\nThe link works once. If you did not sign up, ignore this mail."},
	}
}

// accountSendVerification mails a verification link to the signed-in
// account's address (the resend button), in the background.
func (s *Pages) accountSendVerification(w http.ResponseWriter, r *http.Request, p *web.Page) {
	acc := p.Account
	if ok, wait := s.limit.Key("verify:" + acc.Email); !ok {
		p.Error = p.T("err.too_many", minutes(wait))
		s.accountRender(w, r, p, http.StatusTooManyRequests, acctForm{}, nil)
		return
	}
	secret, err := s.cfg.Auth.RequestEmailVerification(p.Context(), acc)
	if err != nil {
		s.site.Fail(w, r, p, err)
		return
	}
	if secret == "" { // verified already
		http.Redirect(w, r, "/account?done=email_ok", http.StatusSeeOther)
		return
	}
	link := strings.TrimSuffix(s.resetLink(r, secret), "/password/reset?token="+url.QueryEscape(secret)) +
		"/account/email/confirm?token=" + url.QueryEscape(secret)
	if s.cfg.Mailer == nil {
		s.log.Warn("console: e-mail verification requested; no mail server is configured, pass this link on", "email", acc.Email, "link", link)
	} else {
		subject, body, to := p.T("email.mail.subject"), p.T("email.mail.body", acc.Email, link), acc.Email
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			if err := s.cfg.Mailer.Send(ctx, to, subject, body); err != nil {
				s.log.Error("console: sending an e-mail verification link failed", "email", to, "err", err)
			}
		}()
	}
	http.Redirect(w, r, "/account?done=email_sent", http.StatusSeeOther)
}

// accountConfirmEmail confirms the signed-in account's address with the
// link's token.
func (s *Pages) accountConfirmEmail(w http.ResponseWriter, r *http.Request, p *web.Page) {
	if err := s.cfg.Auth.ConfirmEmail(p.Context(), p.Account, r.URL.Query().Get("token")); err != nil {
		p.Error = p.T("account.email.bad")
		s.accountRender(w, r, p, http.StatusBadRequest, acctForm{}, nil)
		return
	}
	http.Redirect(w, r, "/account?done=email_ok", http.StatusSeeOther)
}
