package transparency

import (
	"math"
	"testing"
)

func TestFigure(t *testing.T) {
	for _, c := range []struct {
		v    float64
		unit string
		want string
	}{
		{794.04, "TFLOPS", "794.0"}, {1402.96, "TFLOPS", "1403.0"}, {25.34, "GB/s", "25.3"},
		{3349.6, "GB/s", "3350"}, {2616.4, "img/s", "2616"}, {1.234, "ms", "1.23"},
		{42.42, "ms", "42.4"}, {420.42, "ms", "420"}, {math.NaN(), "GB/s", dash}, {math.Inf(1), "TFLOPS", dash},
	} {
		if got := figure(c.v, c.unit); got != c.want {
			t.Errorf("figure(%v, %s) = %q, want %q", c.v, c.unit, got, c.want)
		}
	}
}

func TestPercent(t *testing.T) {
	for _, c := range []struct {
		r    float64
		want string
	}{
		{0.95, "95.0%"}, {0.9499, "94.9%"}, {0.94999999, "94.9%"}, {0.9, "90.0%"}, {0.8999, "89.9%"},
		{1, "100.0%"}, {1.2345, "123.4%"}, {0, dash}, {math.NaN(), dash},
	} {
		if got := percent(c.r); got != c.want {
			t.Errorf("percent(%v) = %q, want %q", c.r, got, c.want)
		}
	}
	if share(0.95) != "95%" || share(0.925) != "92.5%" {
		t.Errorf("share: %q %q", share(0.95), share(0.925))
	}
	if permille(875) != "87.5%" || permille(900) != "90%" {
		t.Errorf("permille: %q %q", permille(875), permille(900))
	}
}
