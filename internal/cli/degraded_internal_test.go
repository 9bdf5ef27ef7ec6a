package cli

import (
	"bytes"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/gpurent/gpurent/internal/apiv1"
)

// TestGPUsShowsDegraded: `gpurent gpus` shows free degraded GPUs apart,
// with their price range, per type and per zone.
func TestGPUsShowsDegraded(t *testing.T) {
	types := []apiv1.GPUType{
		{ID: "h100-80g-sxm", MemoryGB: 80, Prices: apiv1.Prices{HourlyFen: 1999}, Total: 16, Free: 5,
			Degraded: &apiv1.DegradedAvailability{Free: 3, MaxPerHost: 2, MinPricePermille: 850, MaxPricePermille: 882},
			Zones: []apiv1.ZoneAvailability{
				{ZoneID: "cd-tianfu-a", Total: 8, Free: 3, MaxPerHost: 3,
					Degraded: &apiv1.DegradedAvailability{Free: 2, MaxPerHost: 2, MinPricePermille: 850, MaxPricePermille: 882}},
				{ZoneID: "sh-lingang-b", Total: 8, Free: 2, MaxPerHost: 2,
					Degraded: &apiv1.DegradedAvailability{Free: 1, MaxPerHost: 1, MinPricePermille: 870, MaxPricePermille: 870}}}},
		{ID: "rtx4090-24g", MemoryGB: 24, Total: 8, Free: 8,
			Zones: []apiv1.ZoneAvailability{{ZoneID: "cd-tianfu-a", Total: 8, Free: 8, MaxPerHost: 8}}},
	}
	var buf bytes.Buffer
	cmd := &cobra.Command{}
	cmd.SetOut(&buf)
	if err := printGPUTypes(cmd, types); err != nil {
		t.Fatal(err)
	}
	s := buf.String()
	for _, want := range []string{"DEGRADED", "3 degraded at 85–88.2%", "cd-tianfu-a 3/8 (≤3 per host) + 2 degraded at 85–88.2%",
		"sh-lingang-b 2/8 (≤2 per host) + 1 degraded at 87%", "gpurent rent --degraded"} {
		if !strings.Contains(s, want) {
			t.Errorf("gpus output lacks %q:\n%s", want, s)
		}
	}
	// Without degraded GPUs, no note about them.
	buf.Reset()
	if err := printGPUTypes(cmd, types[1:]); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(buf.String(), "--degraded") {
		t.Errorf("note about degraded GPUs with none listed:\n%s", buf.String())
	}
}
