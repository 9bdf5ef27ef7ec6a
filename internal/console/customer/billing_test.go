package customer

import "testing"

// TestBillHours: seconds as hours with two decimals, truncated.
func TestBillHours(t *testing.T) {
	for sec, want := range map[int64]string{0: "0", 3600: "1", 5400: "1.50", 3636: "1.01", 7199: "1.99", 86400 * 5: "120"} {
		if got := billHours(sec); got != want {
			t.Errorf("billHours(%d) = %q, want %q", sec, got, want)
		}
	}
}
