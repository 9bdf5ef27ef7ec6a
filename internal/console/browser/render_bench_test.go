package browser

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/app"
	"github.com/gpurent/gpurent/internal/rental"
	"github.com/gpurent/gpurent/internal/store/storetest"
)

// renderSite is a control plane over a seeded store: 1,000 hosts of 8 H100
// (every agent just heard from) and a customer with 100 running-or-placed
// instances. No agents run: pages are rendered from the store and services.
type renderSite struct {
	s      *app.Server
	cookie *http.Cookie
}

func startRenderSite(b *testing.B) *renderSite {
	b.Helper()
	ctx := context.Background()
	st := storetest.SQLiteAt(b, filepath.Join(b.TempDir(), "gpurent.db"))
	storetest.SeedCatalog(b, st)
	hosts := storetest.SeedFleet(b, st, 1000, 8)
	s, err := app.StartServer(ctx, app.ServerConfig{Store: st, Listen: "127.0.0.1:0", BcryptCost: 4})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	now := time.Now()
	for _, h := range hosts {
		if err := st.TouchHost(ctx, h.ID, now); err != nil {
			b.Fatal(err)
		}
	}
	s.Rental.Invalidate()
	ops, err := s.Auth.CreateAccount(ctx, "ops@render.example", "Ops", "ops-password-12", gpurent.RoleOperator, 0)
	if err != nil {
		b.Fatal(err)
	}
	cust, err := s.Auth.CreateAccount(ctx, "lab@render.example", "Lab", "lab-password-12", gpurent.RoleCustomer, 0)
	if err != nil {
		b.Fatal(err)
	}
	if _, _, err := s.Wallet.Credit(ctx, ops, cust.ID, 100_000_000, "render benchmark", "seed"); err != nil {
		b.Fatal(err)
	}
	for i := range 100 {
		if _, _, err := s.Rental.Rent(ctx, cust, rental.RentRequest{Name: fmt.Sprintf("job-%03d", i), Image: "busybox",
			TypeID: "h100-80g-sxm", Count: 1}); err != nil {
			b.Fatalf("rent %d: %v", i, err)
		}
	}
	secret, _, _, err := s.Auth.Login(ctx, "lab@render.example", "lab-password-12")
	if err != nil {
		b.Fatal(err)
	}
	return &renderSite{s: s, cookie: &http.Cookie{Name: "gpurent_session", Value: secret}}
}

// renderPage serves path through the console's handler in process (the
// server's own time: no network) b.N times, and reports the p50 and p95.
func (rs *renderSite) renderPage(b *testing.B, path, want string, gap time.Duration) {
	h := rs.s.Console.Handler()
	get := func() *httptest.ResponseRecorder {
		r := httptest.NewRequest(http.MethodGet, path, nil)
		r.AddCookie(rs.cookie)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w
	}
	if w := get(); w.Code != http.StatusOK || !strings.Contains(w.Body.String(), want) {
		b.Fatalf("%s: %d, %q missing", path, w.Code, want)
	}
	durs := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for b.Loop() {
		t0 := time.Now()
		get()
		durs = append(durs, time.Since(t0))
		if gap > 0 { // requests spread over time: caches expire and refresh meanwhile
			b.StopTimer()
			time.Sleep(gap)
			b.StartTimer()
		}
	}
	b.StopTimer()
	slices.Sort(durs)
	p := func(q float64) float64 { return float64(durs[int(q*float64(len(durs)-1))].Microseconds()) / 1000 }
	b.ReportMetric(p(0.50), "p50_ms")
	b.ReportMetric(p(0.95), "p95_ms")
}

// BenchmarkRender: the dashboard of a customer with 100 instances and the
// market of a fleet of 1,000 hosts (8,000 GPUs), rendered by the server.
func BenchmarkRender(b *testing.B) {
	rs := startRenderSite(b)
	b.Run("dashboard", func(b *testing.B) { rs.renderPage(b, "/dashboard?lang=en", "job-099", 0) })
	b.Run("market", func(b *testing.B) { rs.renderPage(b, "/market?lang=en", "H100", 0) })
	// One request every 20 ms: over a 300-request run the market's fleet
	// reading expires and is read again in the background several times.
	b.Run("market-spread", func(b *testing.B) { rs.renderPage(b, "/market?lang=en", "H100", 20*time.Millisecond) })
}
