package customer_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gpurent/gpurent/internal/app"
	"github.com/gpurent/gpurent/internal/store/storetest"
)

// BenchmarkMarketFleetReading is what a market page costs when its
// reading of the fleet has expired (once per marketCacheTTL per control
// plane): the fleet's types and the scheduler's availability, the two
// service calls GET /api/v1/gpu-types makes too, on 1,000 hosts of 8 GPUs.
// BenchmarkRender (browser package) measures the page itself.
func BenchmarkMarketFleetReading(b *testing.B) {
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
	// The page once, to see it lists the fleet.
	w := httptest.NewRecorder()
	s.Console.Handler().ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/market?lang=en", nil))
	if w.Code != http.StatusOK || !strings.Contains(w.Body.String(), `id="free-h100-80g-sxm">8000 / 8000<`) {
		b.Fatalf("market: %d", w.Code)
	}
	durs := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for b.Loop() {
		t0 := time.Now()
		if _, err := s.Fleet.GPUTypes(ctx); err != nil {
			b.Fatal(err)
		}
		if _, err := s.Rental.Availability(ctx); err != nil {
			b.Fatal(err)
		}
		durs = append(durs, time.Since(t0))
	}
	b.StopTimer()
	slices.Sort(durs)
	p := func(q float64) float64 { return float64(durs[int(q*float64(len(durs)-1))].Microseconds()) / 1000 }
	b.ReportMetric(p(0.50), "p50_ms")
	b.ReportMetric(p(0.95), "p95_ms")
}
