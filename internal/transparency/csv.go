package transparency

import (
	"encoding/csv"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/apiv1"
)

// csvHeader names the CSV's columns.
func csvHeader() []string {
	return []string{
		"type", "host_id", "host_name", "zone", "gpu_hash", "gpu_index", "state",
		"price_permille", "last_run_at", "probe", "setup", "unit", "median", "min", "max",
		"spread", "runs", "fleet_median", "fleet_ratio", "spec", "spec_ratio", "outcome",
		"provisional", "synthetic", "max_temp_c", "min_sm_clock_mhz", "mean_power_w", "throttle",
	}
}

// CSV writes the report as CSV (RFC 4180, UTF-8 without a byte order
// mark): a header row, then one row per GPU per probe result, and one row
// with an empty probe for a GPU without results. Figures use '.' as the
// decimal separator and no grouping; times are RFC 3339 in UTC; a figure
// the report does not have (no spec, telemetry not measured) is empty;
// throttle reasons are joined by ";". fleet_median and spec are those of
// the GPU's type for the row's probe and setup. A text cell that a
// spreadsheet would take for a formula (starting with = + - @, a tab or a
// carriage return) is prefixed with a single quote.
func CSV(w io.Writer, t *apiv1.Transparency) error {
	if t == nil {
		return gpurent.Errorf(gpurent.CodeInternal, "no transparency report to write")
	}
	cw := csv.NewWriter(w)
	if err := cw.Write(csvHeader()); err != nil {
		return csvError(err)
	}
	row := make([]string, len(csvHeader()))
	for ti := range t.Types {
		ty := &t.Types[ti]
		fleet := make(map[probeKey]*apiv1.TransparencyProbe, len(ty.Probes))
		for pi := range ty.Probes {
			p := &ty.Probes[pi]
			fleet[probeKey{p.Probe, p.Setup}] = p
		}
		for hi := range ty.Hosts {
			h := &ty.Hosts[hi]
			for gi := range h.GPUs {
				g := &h.GPUs[gi]
				gpuCells(row, ty, h, g)
				if len(g.Results) == 0 {
					for i := 9; i < len(row); i++ {
						row[i] = ""
					}
					if err := cw.Write(row); err != nil {
						return csvError(err)
					}
					continue
				}
				for ri := range g.Results {
					resultCells(row, &g.Results[ri], fleet[probeKey{g.Results[ri].Probe, g.Results[ri].Setup}])
					if err := cw.Write(row); err != nil {
						return csvError(err)
					}
				}
			}
		}
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		return csvError(err)
	}
	return nil
}

func csvError(err error) error {
	return gpurent.WrapError(gpurent.CodeInternal, err, "writing the transparency CSV failed")
}

// gpuCells fills the GPU's columns of row (0–8).
func gpuCells(row []string, ty *apiv1.TransparencyType, h *apiv1.TransparencyHost, g *apiv1.TransparencyGPU) {
	row[0] = csvText(ty.ID)
	row[1] = csvText(h.ID)
	row[2] = csvText(h.Name)
	row[3] = csvText(h.Zone)
	row[4] = csvText(g.Hash)
	row[5] = strconv.Itoa(g.Index)
	row[6] = csvText(g.State)
	row[7] = strconv.Itoa(g.PricePermille)
	row[8] = ""
	if g.LastRunAt != nil {
		row[8] = g.LastRunAt.UTC().Format(time.RFC3339)
	}
}

// resultCells fills the result's columns of row (9 on); p is the type's
// fleet statistics of the result's probe and setup, nil if it has none.
func resultCells(row []string, r *apiv1.TransparencyResult, p *apiv1.TransparencyProbe) {
	row[9] = csvText(r.Probe)
	row[10] = csvText(r.Setup)
	row[11] = csvText(r.Unit)
	row[12] = csvFloat(r.Median)
	row[13] = csvFloat(r.Min)
	row[14] = csvFloat(r.Max)
	row[15] = csvFloat(r.Spread)
	row[16] = strconv.Itoa(r.Runs)
	row[17], row[19] = "", ""
	if p != nil {
		row[17] = csvOptional(p.FleetMedian)
		if p.Spec != nil {
			row[19] = csvOptional(p.Spec.Value)
		}
	}
	row[18] = csvOptional(r.FleetRatio)
	row[20] = csvOptional(r.SpecRatio)
	row[21] = csvText(r.Outcome)
	row[22] = strconv.FormatBool(r.Provisional)
	row[23] = strconv.FormatBool(r.Synthetic)
	row[24] = csvOptional(r.MaxTempC)
	row[25] = csvOptional(r.MinSMClock)
	row[26] = csvOptional(r.MeanPowerW)
	row[27] = csvText(strings.Join(r.Throttle, ";"))
}

// csvText guards a text cell against formula injection: a cell that
// starts with = + - @, a tab or a carriage return gets a leading single
// quote, so that a spreadsheet shows it as text instead of evaluating it.
func csvText(s string) string {
	if s != "" && strings.IndexByte("=+-@\t\r", s[0]) >= 0 {
		return "'" + s
	}
	return s
}
