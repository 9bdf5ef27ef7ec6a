package customer

import (
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/auth"
	"github.com/gpurent/gpurent/internal/console/web"
)

func authMessages() map[string]web.Pair {
	return map[string]web.Pair{
		"login.title":      {"登录", "Sign in"},
		"login.email":      {"邮箱", "E-mail"},
		"login.password":   {"密码", "Password"},
		"login.submit":     {"登录", "Sign in"},
		"login.bad":        {"邮箱或密码不正确", "Wrong e-mail or password"},
		"login.no_account": {"还没有账户？", "No account yet?"},
		"login.forgot":     {"忘记密码？", "Forgot your password?"},
		"signup.title":     {"注册", "Create an account"},
		"signup.name":      {"姓名或团队", "Name or team"},
		"signup.password2": {"再次输入密码", "Password again"},
		"signup.submit":    {"注册并登录", "Create and sign in"},
		"signup.mismatch":  {"两次输入的密码不一致", "The passwords differ"},
		"signup.short":     {"密码至少 %d 个字符", "The password needs at least %d characters"},
		"signup.bad_email": {"邮箱格式不正确", "That is not an e-mail address"},
		"signup.taken":     {"该邮箱已注册", "An account with this e-mail exists already"},
		"signup.have":      {"已有账户？", "Have an account?"},
		"signup.edu_hint":  {"高校邮箱注册后可申请学术价格。", "With a university e-mail you can apply for academic prices."},
	}
}

// authRoutes are the sign-in, sign-up and sign-out forms.
func (s *Pages) authRoutes() []web.Route {
	return []web.Route{
		{Pattern: "GET /login", Who: web.Public, Handle: s.loginPage},
		{Pattern: "POST /login", Who: web.Public, Handle: s.login},
		{Pattern: "GET /signup", Who: web.Public, Handle: s.signupPage},
		{Pattern: "POST /signup", Who: web.Public, Handle: s.signup},
		{Pattern: "POST /logout", Who: web.Customer, Handle: s.logout},
	}
}

// loginForm is the sign-in form's data.
type loginForm struct {
	Email string
	Next  string
}

// safeNext keeps a redirect inside the console: a path, never a host.
func safeNext(next string) string {
	if next == "" || !strings.HasPrefix(next, "/") || strings.HasPrefix(next, "//") || strings.Contains(next, "\\") {
		return "/dashboard"
	}
	if u, err := url.Parse(next); err != nil || u.Host != "" || u.Scheme != "" {
		return "/dashboard"
	}
	return next
}

func (s *Pages) loginPage(w http.ResponseWriter, r *http.Request, p *web.Page) {
	p.Title, p.Nav = p.T("login.title"), "login"
	s.site.Render(w, r, p, "login", loginForm{Next: safeNext(r.URL.Query().Get("next"))})
}

func (s *Pages) login(w http.ResponseWriter, r *http.Request, p *web.Page) {
	p.Title, p.Nav = p.T("login.title"), "login"
	f := loginForm{Email: strings.TrimSpace(r.PostFormValue("email")), Next: safeNext(r.PostFormValue("next"))}
	again := func(status int, msg string) {
		p.Error = msg
		s.site.RenderStatus(w, r, p, status, "login", f)
	}
	if f.Email == "" || r.PostFormValue("password") == "" {
		again(http.StatusBadRequest, p.T("login.bad"))
		return
	}
	ip := s.site.ClientIP(r)
	if ok, wait := s.limit.Login(f.Email, ip); !ok {
		again(http.StatusTooManyRequests, p.T("err.too_many", minutes(wait)))
		return
	}
	secret, _, _, err := s.cfg.Auth.Login(r.Context(), f.Email, r.PostFormValue("password"))
	if err != nil {
		if gpurent.IsCode(err, gpurent.CodeUnauthorized) || gpurent.IsCode(err, gpurent.CodeInvalid) {
			again(http.StatusUnauthorized, p.T("login.bad"))
			return
		}
		s.site.Fail(w, r, p, err)
		return
	}
	s.limit.Succeeded(f.Email, ip)
	s.site.SetSession(w, secret, s.cfg.SessionTTL)
	http.Redirect(w, r, f.Next, http.StatusSeeOther)
}

func minutes(d time.Duration) int { return int((d + time.Minute - 1) / time.Minute) }

// signupForm is the sign-up form's data.
type signupForm struct {
	Email, Name string
}

func (s *Pages) signupPage(w http.ResponseWriter, r *http.Request, p *web.Page) {
	p.Title, p.Nav = p.T("signup.title"), "signup"
	s.site.Render(w, r, p, "signup", signupForm{})
}

func (s *Pages) signup(w http.ResponseWriter, r *http.Request, p *web.Page) {
	p.Title, p.Nav = p.T("signup.title"), "signup"
	f := signupForm{Email: strings.TrimSpace(r.PostFormValue("email")), Name: strings.TrimSpace(r.PostFormValue("name"))}
	pw, pw2 := r.PostFormValue("password"), r.PostFormValue("password2")
	again := func(msg string) {
		p.Error = msg
		s.site.RenderStatus(w, r, p, http.StatusBadRequest, "signup", f)
	}
	switch {
	case f.Email == "":
		again(p.T("common.required", p.T("login.email")))
		return
	case f.Name == "":
		again(p.T("common.required", p.T("signup.name")))
		return
	case len([]rune(f.Name)) > 100:
		again(p.T("common.too_long", p.T("signup.name"), 100))
		return
	case len(pw) < auth.MinPasswordBytes:
		again(p.T("signup.short", auth.MinPasswordBytes))
		return
	case pw != pw2:
		again(p.T("signup.mismatch"))
		return
	}
	if _, err := auth.NormalizeEmail(f.Email); err != nil {
		again(p.T("signup.bad_email"))
		return
	}
	if ok, wait := s.limit.Address(s.site.ClientIP(r)); !ok {
		p.Error = p.T("err.too_many", minutes(wait))
		s.site.RenderStatus(w, r, p, http.StatusTooManyRequests, "signup", f)
		return
	}
	if _, err := s.cfg.Auth.Register(r.Context(), f.Email, f.Name, pw); err != nil {
		if gpurent.IsCode(err, gpurent.CodeConflict) {
			again(p.T("signup.taken"))
			return
		}
		if gpurent.IsCode(err, gpurent.CodeInvalid) {
			p.FormError(err)
			s.site.RenderStatus(w, r, p, http.StatusBadRequest, "signup", f)
			return
		}
		s.site.Fail(w, r, p, err)
		return
	}
	secret, _, _, err := s.cfg.Auth.Login(r.Context(), f.Email, pw)
	if err != nil {
		s.site.Fail(w, r, p, err)
		return
	}
	s.site.SetSession(w, secret, s.cfg.SessionTTL)
	http.Redirect(w, r, "/dashboard", http.StatusSeeOther)
}

func (s *Pages) logout(w http.ResponseWriter, r *http.Request, p *web.Page) {
	if c, err := r.Cookie(web.SessionCookie); err == nil {
		if err := s.cfg.Auth.Logout(r.Context(), c.Value); err != nil && !gpurent.IsCode(err, gpurent.CodeUnauthorized) {
			s.site.Fail(w, r, p, err)
			return
		}
	}
	s.site.ClearSession(w)
	http.Redirect(w, r, "/login", http.StatusSeeOther)
}
