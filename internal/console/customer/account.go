package customer

import (
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/auth"
	"github.com/gpurent/gpurent/internal/console/web"
	"github.com/gpurent/gpurent/internal/sshkeys"
)

// accountMessages are the messages of the account, password and billing
// pages.
func accountMessages() map[string]web.Pair {
	m := map[string]web.Pair{
		"account.title":            {"账户", "Account"},
		"account.profile":          {"资料", "Profile"},
		"account.email":            {"邮箱", "E-mail"},
		"account.name":             {"名称", "Name"},
		"account.role":             {"角色", "Role"},
		"account.role.customer":    {"客户", "Customer"},
		"account.role.operator":    {"运营人员", "Operator"},
		"account.since":            {"注册时间", "Member since"},
		"account.academic":         {"学术认证", "Academic verification"},
		"account.academic.until":   {"已认证，有效期至 %s", "Verified until %s"},
		"account.academic.none":    {"未认证", "Not verified"},
		"account.password":         {"修改密码", "Change password"},
		"account.pw.current":       {"当前密码", "Current password"},
		"account.pw.new":           {"新密码", "New password"},
		"account.pw.new2":          {"再次输入新密码", "New password again"},
		"account.pw.submit":        {"修改密码", "Change password"},
		"account.pw.wrong":         {"当前密码不正确", "The current password is wrong"},
		"account.pw.long":          {"密码最多 %d 个字节", "The password must be at most %d bytes"},
		"account.pw.note":          {"修改后其他设备上的登录会退出，API 令牌不受影响。", "Other sign-ins end; API tokens keep working."},
		"account.tokens":           {"API 令牌", "API tokens"},
		"account.tokens.intro":     {"供 CLI 和脚本使用：设置环境变量 GPURENT_TOKEN，或在请求头中发送 Authorization: Bearer <令牌>。", "For the CLI and scripts: set GPURENT_TOKEN, or send the header Authorization: Bearer <token>."},
		"account.token.name":       {"令牌名称", "Token name"},
		"account.token.create":     {"创建令牌", "Create token"},
		"account.token.created":    {"创建时间", "Created"},
		"account.token.revoke":     {"撤销", "Revoke"},
		"account.token.confirm":    {"撤销后使用该令牌的脚本将无法访问，确定吗？", "Scripts using this token will lose access. Revoke it?"},
		"account.token.new":        {"新令牌「%s」已创建。它只显示这一次，请立即复制保存：", "Token “%s” is created. It is shown only this once: copy it now."},
		"account.token.unlisted":   {"无法列出令牌：", "Tokens cannot be listed:"},
		"account.bad_chars":        {"%s 不能包含控制字符", "%s must not contain control characters"},
		"account.keys":             {"SSH 公钥", "SSH public keys"},
		"account.keys.intro":       {"用于通过 SSH 网关登录你的实例。粘贴 ~/.ssh/id_ed25519.pub 的内容。", "To reach your instances through the SSH gateway. Paste the contents of ~/.ssh/id_ed25519.pub."},
		"account.key.text":         {"公钥", "Public key"},
		"account.key.name":         {"名称（可选）", "Name (optional)"},
		"account.key.add":          {"添加公钥", "Add key"},
		"account.key.fingerprint":  {"指纹", "Fingerprint"},
		"account.key.last_used":    {"最近使用", "Last used"},
		"account.key.delete":       {"删除", "Delete"},
		"account.key.confirm":      {"删除后该公钥将无法登录实例，确定吗？", "This key will no longer reach your instances. Delete it?"},
		"account.key.bad":          {"这不是 OpenSSH 公钥（应为 ~/.ssh/id_ed25519.pub 这类文件的内容，以 ssh-ed25519 等开头）", "That is not an OpenSSH public key (paste a file like ~/.ssh/id_ed25519.pub, starting with ssh-ed25519 or similar)"},
		"account.key.private":      {"这是私钥！请粘贴 .pub 公钥文件，私钥请自己妥善保管", "That is a private key! Paste the .pub file and keep the private key to yourself"},
		"account.acad.intro":       {"高校和科研院所的师生认证后享受学术价格。", "Students and staff of universities and research institutes get academic prices once verified."},
		"account.acad.institution": {"学校或机构", "University or institute"},
		"account.acad.method":      {"认证方式", "Evidence"},
		"account.acad.by_email":    {"我的注册邮箱是高校邮箱", "My sign-in e-mail is a university address"},
		"account.acad.by_proof":    {"提交证明（学生证、工作证或链接的说明）", "A proof (describe your student or staff card, or link to it)"},
		"account.acad.proof":       {"证明说明", "Proof"},
		"account.acad.apply":       {"提交申请", "Apply"},
		"account.acad.latest":      {"最近一次申请：%s，%s", "Latest application: %s, %s"},
		"account.acad.reason":      {"审核意见：", "Reviewer's note:"},
		"account.acad.pending":     {"审核中", "pending"},
		"account.acad.approved":    {"已通过", "approved"},
		"account.acad.rejected":    {"未通过", "rejected"},
		"account.acad.proof_need":  {"选择提交证明时，请填写证明说明", "With a proof, describe the proof"},
		"account.acad.bad_method":  {"请选择认证方式", "Choose the evidence"},
		"account.done.password":    {"密码已修改。", "Your password is changed."},
		"account.done.revoked":     {"令牌已撤销。", "The token is revoked."},
		"account.done.key_added":   {"公钥已添加。", "The key is added."},
		"account.done.key_deleted": {"公钥已删除。", "The key is deleted."},
		"account.done.applied":     {"学术认证申请已提交，审核结果会显示在这里。", "Your application is filed; the decision will show here."},
	}
	maps.Copy(m, passwordMessages())
	maps.Copy(m, emailMessages())
	maps.Copy(m, billingMessages())
	return m
}

// accountRoutes are the account, password and billing pages and actions.
func (s *Pages) accountRoutes() []web.Route {
	return append([]web.Route{
		{Pattern: "GET /account", Who: web.Customer, Handle: s.accountPage},
		{Pattern: "POST /account/password", Who: web.Customer, Handle: s.accountChangePassword},
		{Pattern: "POST /account/tokens", Who: web.Customer, Handle: s.accountCreateToken},
		{Pattern: "POST /account/tokens/{id}/revoke", Who: web.Customer, Handle: s.accountRevokeToken},
		{Pattern: "POST /account/ssh-keys", Who: web.Customer, Handle: s.accountAddKey},
		{Pattern: "POST /account/ssh-keys/{id}/delete", Who: web.Customer, Handle: s.accountDeleteKey},
		{Pattern: "POST /account/academic", Who: web.Customer, Handle: s.accountApplyAcademic},
		{Pattern: "POST /account/email/verify", Who: web.Customer, Handle: s.accountSendVerification},
		{Pattern: "GET /account/email/confirm", Who: web.Customer, Handle: s.accountConfirmEmail},
		{Pattern: "GET /password/forgot", Who: web.Public, Handle: s.passwordForgotPage},
		{Pattern: "POST /password/forgot", Who: web.Public, Handle: s.passwordForgot},
		{Pattern: "GET /password/reset", Who: web.Public, Handle: s.passwordResetPage},
		{Pattern: "POST /password/reset", Who: web.Public, Handle: s.passwordReset},
	}, s.billingRoutes()...)
}

// Bounds of what the account forms take.
const (
	acctMaxKeyText     = 16 << 10 // an RSA-16384 public key fits
	acctMaxKeyName     = 100
	acctMaxInstitution = 200
	acctMaxProof       = 4000
)

// accountData is the account page's data.
type accountData struct {
	Email, Name, Role string
	EmailVerified     bool
	Since             time.Time
	AcademicUntil     *time.Time // set while verified

	Tokens      []gpurent.Token
	TokensError string // why the tokens are not listed
	NewToken    *acctNewToken

	HasKeys bool
	Keys    []gpurent.SSHKey

	HasAcademic bool
	Latest      *gpurent.AcademicApplication
	LatestState string // its state, in the page's language
	CanApply    bool

	Form acctForm
}

// acctNewToken is a token just made: its secret is shown once.
type acctNewToken struct {
	Name, Secret string
}

// acctForm is what the user typed, kept when a form is shown again.
type acctForm struct {
	TokenName          string
	KeyText, KeyName   string
	Institution, Proof string
	Method             string
}

// accountDoneKey is the notice key of ?done=, or "" for anything unknown.
func accountDoneKey(done string) string {
	switch done {
	case "password", "revoked", "key_added", "key_deleted", "applied", "email_sent", "email_ok":
		return "account.done." + done
	}
	return ""
}

func (s *Pages) accountPage(w http.ResponseWriter, r *http.Request, p *web.Page) {
	if k := accountDoneKey(r.URL.Query().Get("done")); k != "" {
		p.Flash = p.T(k)
	}
	s.accountRender(w, r, p, http.StatusOK, acctForm{Method: string(gpurent.AcademicProof)}, nil)
}

// accountRender loads the account page's data and renders it with the
// form values f (and, once, a new token).
func (s *Pages) accountRender(w http.ResponseWriter, r *http.Request, p *web.Page, status int, f acctForm, tok *acctNewToken) {
	p.Title, p.Nav = p.T("account.title"), "account"
	ctx := p.Context()
	acc := p.Account
	d := &accountData{Email: acc.Email, Name: acc.Name, Role: p.T("account.role." + string(acc.Role)),
		Since: acc.CreatedAt, Form: f, NewToken: tok}
	if acc.Academic(s.cfg.Now()) {
		d.AcademicUntil = acc.AcademicUntil
	}
	verified, err := s.cfg.Auth.EmailVerified(ctx, acc)
	if err != nil {
		s.site.Fail(w, r, p, err)
		return
	}
	d.EmailVerified = verified
	toks, err := s.cfg.Auth.ListAPITokens(ctx, acc)
	switch {
	case err == nil:
		d.Tokens = toks
	case gpurent.IsCode(err, gpurent.CodeUnavailable):
		d.TokensError = p.T("account.token.unlisted") + " " + web.DetailOf(err)
	default:
		s.site.Fail(w, r, p, err)
		return
	}
	if s.cfg.SSHKeys != nil {
		d.HasKeys = true
		if d.Keys, err = s.cfg.SSHKeys.List(ctx, acc); err != nil {
			s.site.Fail(w, r, p, err)
			return
		}
	}
	if s.cfg.Academic != nil {
		d.HasAcademic = true
		apps, err := s.cfg.Academic.List(ctx, acc, false, "")
		if err != nil {
			s.site.Fail(w, r, p, err)
			return
		}
		for i := range apps {
			if d.Latest == nil || apps[i].CreatedAt.After(d.Latest.CreatedAt) {
				d.Latest = &apps[i]
			}
		}
		d.CanApply = d.Latest == nil || d.Latest.State != gpurent.AcademicPending
		if acc.AcademicUntil != nil && acc.AcademicUntil.Sub(s.cfg.Now()) > 30*24*time.Hour {
			d.CanApply = false // the service takes a renewal in the last 30 days only
		}
		if d.Latest != nil {
			d.LatestState = p.T("account.acad." + string(d.Latest.State))
		}
	}
	s.site.RenderStatus(w, r, p, status, "account", d)
}

// accountAgain shows the account page again with a form error.
func (s *Pages) accountAgain(w http.ResponseWriter, r *http.Request, p *web.Page, status int, f acctForm, msg string) {
	p.Error = msg
	s.accountRender(w, r, p, status, f, nil)
}

// accountServiceError shows a service's refusal on the form when the user
// can act on it, else the error page.
func (s *Pages) accountServiceError(w http.ResponseWriter, r *http.Request, p *web.Page, f acctForm, err error) {
	switch gpurent.ErrorCode(err) {
	case gpurent.CodeInvalid:
		p.FormError(err)
		s.accountRender(w, r, p, http.StatusBadRequest, f, nil)
	case gpurent.CodeConflict:
		p.FormError(err)
		s.accountRender(w, r, p, http.StatusConflict, f, nil)
	case gpurent.CodeUnavailable:
		p.FormError(err)
		s.accountRender(w, r, p, http.StatusServiceUnavailable, f, nil)
	default:
		s.site.Fail(w, r, p, err)
	}
}

func (s *Pages) accountCreateToken(w http.ResponseWriter, r *http.Request, p *web.Page) {
	f := acctForm{TokenName: strings.TrimSpace(r.PostFormValue("name")), Method: string(gpurent.AcademicProof)}
	if msg := acctCheckName(p, f.TokenName, "account.token.name", auth.MaxNameRunes, true); msg != "" {
		s.accountAgain(w, r, p, http.StatusBadRequest, f, msg)
		return
	}
	secret, tok, err := s.cfg.Auth.CreateAPIToken(p.Context(), p.Account, f.TokenName)
	if err != nil {
		s.accountServiceError(w, r, p, f, err)
		return
	}
	// The secret is shown on this answer only (never in a URL, a cookie or
	// the store), so this POST renders instead of redirecting; the page is
	// no-store.
	s.accountRender(w, r, p, http.StatusOK, acctForm{Method: f.Method}, &acctNewToken{Name: tok.Name, Secret: secret})
}

func (s *Pages) accountRevokeToken(w http.ResponseWriter, r *http.Request, p *web.Page) {
	if err := s.cfg.Auth.RevokeAPIToken(p.Context(), p.Account, r.PathValue("id")); err != nil {
		s.site.Fail(w, r, p, err)
		return
	}
	http.Redirect(w, r, "/account?done=revoked#tokens", http.StatusSeeOther)
}

func (s *Pages) accountAddKey(w http.ResponseWriter, r *http.Request, p *web.Page) {
	if s.cfg.SSHKeys == nil {
		s.site.NotFound(w, r, p)
		return
	}
	f := acctForm{KeyText: strings.TrimSpace(r.PostFormValue("key")), KeyName: strings.TrimSpace(r.PostFormValue("key_name")),
		Method: string(gpurent.AcademicProof)}
	switch {
	case f.KeyText == "":
		s.accountAgain(w, r, p, http.StatusBadRequest, f, p.T("common.required", p.T("account.key.text")))
		return
	case len(f.KeyText) > acctMaxKeyText:
		s.accountAgain(w, r, p, http.StatusBadRequest, f, p.T("common.too_long", p.T("account.key.text"), acctMaxKeyText))
		return
	case strings.Contains(f.KeyText, "PRIVATE KEY"):
		f.KeyText = "" // never send a private key back
		s.accountAgain(w, r, p, http.StatusBadRequest, f, p.T("account.key.private"))
		return
	}
	if msg := acctCheckName(p, f.KeyName, "account.key.name", acctMaxKeyName, false); msg != "" {
		s.accountAgain(w, r, p, http.StatusBadRequest, f, msg)
		return
	}
	if _, _, _, err := sshkeys.Parse(f.KeyText); err != nil {
		// The service's reason (key type, RSA size, options) follows the
		// page's own words.
		s.accountAgain(w, r, p, http.StatusBadRequest, f, p.T("account.key.bad")+" — "+web.DetailOf(err))
		return
	}
	if _, err := s.cfg.SSHKeys.Add(p.Context(), p.Account, f.KeyText, f.KeyName); err != nil {
		s.accountServiceError(w, r, p, f, err)
		return
	}
	http.Redirect(w, r, "/account?done=key_added#keys", http.StatusSeeOther)
}

func (s *Pages) accountDeleteKey(w http.ResponseWriter, r *http.Request, p *web.Page) {
	if s.cfg.SSHKeys == nil {
		s.site.NotFound(w, r, p)
		return
	}
	id := r.PathValue("id")
	if strings.HasPrefix(id, "SHA256:") {
		s.site.NotFound(w, r, p) // ids only: a fingerprint is not a page path
		return
	}
	if err := s.cfg.SSHKeys.Delete(p.Context(), p.Account, id); err != nil {
		s.site.Fail(w, r, p, err)
		return
	}
	http.Redirect(w, r, "/account?done=key_deleted#keys", http.StatusSeeOther)
}

func (s *Pages) accountApplyAcademic(w http.ResponseWriter, r *http.Request, p *web.Page) {
	if s.cfg.Academic == nil {
		s.site.NotFound(w, r, p)
		return
	}
	f := acctForm{Institution: strings.TrimSpace(r.PostFormValue("institution")), Proof: strings.TrimSpace(r.PostFormValue("proof")),
		Method: r.PostFormValue("method")}
	if msg := acctCheckName(p, f.Institution, "account.acad.institution", acctMaxInstitution, true); msg != "" {
		s.accountAgain(w, r, p, http.StatusBadRequest, f, msg)
		return
	}
	method := gpurent.AcademicMethod(f.Method)
	switch method {
	case gpurent.AcademicEmailDomain:
		f.Proof = ""
	case gpurent.AcademicProof:
		if f.Proof == "" {
			s.accountAgain(w, r, p, http.StatusBadRequest, f, p.T("account.acad.proof_need"))
			return
		}
		if utf8.RuneCountInString(f.Proof) > acctMaxProof {
			s.accountAgain(w, r, p, http.StatusBadRequest, f, p.T("common.too_long", p.T("account.acad.proof"), acctMaxProof))
			return
		}
	default:
		f.Method = string(gpurent.AcademicProof)
		s.accountAgain(w, r, p, http.StatusBadRequest, f, p.T("account.acad.bad_method"))
		return
	}
	if _, err := s.cfg.Academic.Apply(p.Context(), p.Account, method, f.Institution, f.Proof); err != nil {
		s.accountServiceError(w, r, p, f, err)
		return
	}
	http.Redirect(w, r, "/account?done=applied#academic", http.StatusSeeOther)
}

// acctCheckName checks a one-line name typed into a form: required (when
// asked), at most max characters, no control characters. It answers the
// problem in the page's language, or "".
func acctCheckName(p *web.Page, v, labelKey string, max int, required bool) string {
	switch {
	case v == "" && required:
		return p.T("common.required", p.T(labelKey))
	case !utf8.ValidString(v):
		return p.T("account.bad_chars", p.T(labelKey))
	case utf8.RuneCountInString(v) > max:
		return p.T("common.too_long", p.T(labelKey), max)
	case slices.ContainsFunc([]rune(v), func(c rune) bool { return !unicode.IsPrint(c) && c != ' ' }):
		return p.T("account.bad_chars", p.T(labelKey))
	}
	return ""
}
