package catalog

import "testing"

func TestDefaultPrices(t *testing.T) {
	c, err := Default()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int64{
		// shared/reference/billing.md: 3,000 CNY/month → 521 fen/h (its worked example).
		"rtx4090-24g":  521,
		"a100-80g-sxm": 3125, // 18,000 CNY / 720 h × 1.25 = 31.25 CNY
		"h100-80g-sxm": 3473, // 20,000 / 720 × 1.25 = 34.7222… → rounded up
	}
	if len(c.GPUTypes) != len(want) {
		t.Fatalf("got %d types, want %d", len(c.GPUTypes), len(want))
	}
	for _, gt := range c.GPUTypes {
		if gt.PriceHourlyFen != want[gt.ID] {
			t.Errorf("%s hourly = %d fen, want %d", gt.ID, gt.PriceHourlyFen, want[gt.ID])
		}
		if !(gt.PriceHourlyFen*24 > gt.PriceDailyFen && gt.PriceDailyFen*7 > gt.PriceWeeklyFen &&
			gt.PriceWeeklyFen*30/7 > gt.PriceMonthlyFen) {
			t.Errorf("%s: longer packages must be cheaper per hour: %+v", gt.ID, gt)
		}
	}
	if len(c.Zones) < 2 {
		t.Errorf("want at least two zones, got %d", len(c.Zones))
	}
}

func TestParseRejectsBadFiles(t *testing.T) {
	for name, data := range map[string]string{
		"not json":          `{`,
		"no id":             `{"gpu_types":[{"price_monthly_fen":1,"cpu_milli_per_gpu":1,"memory_mib_per_gpu":1}]}`,
		"no price":          `{"gpu_types":[{"id":"x","cpu_milli_per_gpu":1,"memory_mib_per_gpu":1}]}`,
		"repeated id":       `{"gpu_types":[{"id":"x","price_monthly_fen":1,"cpu_milli_per_gpu":1,"memory_mib_per_gpu":1},{"id":"x","price_monthly_fen":1,"cpu_milli_per_gpu":1,"memory_mib_per_gpu":1}]}`,
		"zone without name": `{"zones":[{"id":"z"}]}`,
	} {
		if _, err := Parse([]byte(data)); err == nil {
			t.Errorf("%s: want an error", name)
		}
	}
}
