package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/apiv1"
	"github.com/gpurent/gpurent/internal/client"
	"github.com/gpurent/gpurent/internal/money"
)

func (a *app) priceCmd() *cobra.Command {
	var (
		cn    conn
		req   client.QuoteRequest
		start string
		share float64
	)
	cmd := &cobra.Command{
		Use:   "price",
		Short: "What a rental costs: peak and off-peak pieces, packages, academic price",
		Example: "  gpurent price --gpu h100-80g-sxm --count 4 --hours 120\n" +
			"  gpurent price --gpu h100-80g-sxm --count 2 --hours 24 --degraded 85   # degraded listing at 85%\n" +
			"  gpurent price --gpu rtx4090-24g --hours 8 --start 2026-12-05T22:00",
		Args: argsError(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			asJSON, err := cn.json()
			if err != nil {
				return err
			}
			if req.GPUType == "" {
				return usageError{err: fmt.Errorf("--gpu is required (see `gpurent gpus`)")}
			}
			if start != "" {
				if req.Start, err = parseStart(start); err != nil {
					return usageError{err: err}
				}
			}
			if cmd.Flags().Changed("degraded") {
				if !(share > 0 && share < 100) || share*10 != float64(int(share*10)) {
					return usageError{err: fmt.Errorf("--degraded is the listing's share of the price in percent, above 0 and below 100 with at most one decimal, like 85 or 87.5; got %v", share)}
				}
				req.PricePermille = int(share * 10)
			}
			c, err := a.connect(cmd, &cn)
			if err != nil {
				return err
			}
			q, err := c.Quote(cmd.Context(), req)
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(out(cmd), q)
			}
			return a.printQuote(cmd, q)
		},
	}
	f := cmd.Flags()
	f.StringVar(&req.GPUType, "gpu", "", "GPU type id")
	f.IntVar(&req.Count, "count", 1, "GPUs (0: no-GPU mode)")
	f.IntVar(&req.Hours, "hours", 1, "planned duration in hours")
	f.StringVar(&start, "start", "", "start time, RFC 3339 or YYYY-MM-DDTHH:MM in Asia/Shanghai (default: now)")
	f.Float64Var(&share, "degraded", 0, "price GPUs listed as degraded at this share of the price, in percent (see `gpurent gpus`), hourly only")
	cn.addFlags(cmd, true)
	return cmd
}

// parseStart reads RFC 3339, or a local time in the billing zone.
func parseStart(s string) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	loc, err := time.LoadLocation("Asia/Shanghai")
	if err != nil {
		return time.Time{}, err
	}
	if t, err := time.ParseInLocation("2006-01-02T15:04", s, loc); err == nil {
		return t, nil
	}
	return time.Time{}, fmt.Errorf("--start %q: use RFC 3339 (2026-12-01T09:00:00+08:00) or 2026-12-01T09:00 (Asia/Shanghai)", s)
}

func (a *app) printQuote(cmd *cobra.Command, q apiv1.Quote) error {
	w := out(cmd)
	loc, err := time.LoadLocation(q.TimeZone)
	if err != nil {
		loc = a.env.Location
	}
	fmt.Fprintf(w, "%d × %s from %s to %s (%s)\n", q.GPUCount, q.GPUType,
		q.Start.In(loc).Format("2006-01-02 15:04 Mon"), q.End.In(loc).Format("2006-01-02 15:04 Mon"), q.TimeZone)
	fmt.Fprintf(w, "Off-peak: %s\n", q.OffPeak)
	if q.PricePermille > 0 {
		fmt.Fprintf(w, "Degraded listing: %d.%d%% of the list price, hourly only (gpurent rent --degraded)\n",
			q.PricePermille/10, q.PricePermille%10)
	}
	fmt.Fprintln(w)
	printPlan := func(title string, p apiv1.QuotePlan) error {
		fmt.Fprintln(w, title)
		t := newTable(w, "  WINDOW", "HOURS", "RATE/UNIT-HOUR", "UNITS", "AMOUNT")
		for _, l := range p.Lines {
			t.row("  "+l.Window, l.Hours, money.Format(l.RateFen), strconv.FormatInt(l.Units, 10), money.Format(l.Fen))
		}
		t.row("  total, by the second", "", "", "", money.Format(p.HourlyFen))
		for _, pk := range p.Packages {
			t.row(fmt.Sprintf("  or %d × %s package", pk.Periods, pk.Plan), "", money.Format(pk.UnitFen)+"/GPU", "", money.Format(pk.TotalFen))
		}
		if err := t.flush(); err != nil {
			return err
		}
		fmt.Fprintf(w, "  cheapest: %s, %s\n\n", p.CheapestPlan, money.Format(p.CheapestFen))
		return nil
	}
	if err := printPlan("List prices:", q.List); err != nil {
		return err
	}
	title := "Academic prices (verified university accounts):"
	if q.AcademicApplies {
		title = "Academic prices (yours):"
	}
	return printPlan(title, q.Academic)
}

func (a *app) pricesCmd() *cobra.Command {
	var cn conn
	cmd := &cobra.Command{
		Use:   "prices",
		Short: "The price list and its versions; operators add versions",
		Args:  argsError(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, asJSON, err := a.connectFor(cmd, &cn)
			if err != nil {
				return err
			}
			list, err := c.Prices(cmd.Context())
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(out(cmd), list)
			}
			return printPrices(cmd, list)
		},
	}
	cn.addFlags(cmd, true)
	cmd.AddCommand(a.pricesExportCmd(), a.pricesSetCmd())
	return cmd
}

// priceDoc is the part of a price list the table shows.
type priceDoc struct {
	OffPeak struct {
		Start, End string
		Weekends   bool
	} `json:"off_peak"`
	Types map[string]map[string]int64 `json:"gpu_types"`
}

func printPrices(cmd *cobra.Command, list apiv1.PriceVersionList) error {
	w := out(cmd)
	for _, v := range list.Versions {
		var d priceDoc
		if err := json.Unmarshal(v.PriceList, &d); err != nil {
			return fmt.Errorf("price list %s: %w", v.ID, err)
		}
		state := "scheduled"
		if v.Current {
			state = "in force now"
		} else if !v.Effective.After(time.Now()) {
			state = "superseded"
		}
		weekends := ""
		if d.OffPeak.Weekends {
			weekends = " and weekends"
		}
		fmt.Fprintf(w, "Version %s, effective %s (%s); off-peak %s–%s%s, %s\n", v.ID,
			v.Effective.Format(time.RFC3339), state, d.OffPeak.Start, d.OffPeak.End, weekends, list.TimeZone)
		ids := make([]string, 0, len(d.Types))
		for id := range d.Types {
			ids = append(ids, id)
		}
		sort.Strings(ids)
		t := newTable(w, "  GPU TYPE", "PEAK/H", "OFF-PEAK/H", "ACADEMIC/H", "DAILY", "WEEKLY", "MONTHLY", "NO-GPU/H")
		for _, id := range ids {
			p := d.Types[id]
			t.row("  "+id, money.Format(p["peak_fen"]), money.Format(p["off_peak_fen"]), money.Format(p["academic_peak_fen"]),
				money.Format(p["daily_fen"]), money.Format(p["weekly_fen"]), money.Format(p["monthly_fen"]), money.Format(p["no_gpu_fen"]))
		}
		if err := t.flush(); err != nil {
			return err
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintln(w, "Prices per GPU, in CNY. Operators: `gpurent prices export > list.json`, edit, `gpurent prices set --file list.json`.")
	return nil
}

func (a *app) pricesExportCmd() *cobra.Command {
	var cn conn
	cmd := &cobra.Command{
		Use:   "export",
		Short: "Print the price list in force now as JSON, to edit and set",
		Args:  argsError(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := a.connect(cmd, &cn)
			if err != nil {
				return err
			}
			list, err := c.Prices(cmd.Context())
			if err != nil {
				return err
			}
			for _, v := range list.Versions {
				if v.Current {
					var doc any
					if err := json.Unmarshal(v.PriceList, &doc); err != nil {
						return err
					}
					return writeJSON(out(cmd), doc)
				}
			}
			return gpurent.Errorf(gpurent.CodeNotFound, "no price list is in force")
		},
	}
	cn.addFlags(cmd, false)
	return cmd
}

func (a *app) pricesSetCmd() *cobra.Command {
	var (
		cn         conn
		file, note string
	)
	cmd := &cobra.Command{
		Use:   "set --file LIST.json",
		Short: "Add a price list version, effective at its \"effective\" time (operators)",
		Args:  argsError(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			asJSON, err := cn.json()
			if err != nil {
				return err
			}
			if file == "" {
				return usageError{err: fmt.Errorf("--file is required (- for standard input)")}
			}
			var raw []byte
			if file == "-" {
				raw, err = io.ReadAll(cmd.InOrStdin())
			} else {
				raw, err = os.ReadFile(file)
			}
			if err != nil {
				return err
			}
			if !json.Valid(raw) {
				return usageError{err: fmt.Errorf("%s is not JSON", file)}
			}
			c, err := a.connect(cmd, &cn)
			if err != nil {
				return err
			}
			v, err := c.AddPrices(cmd.Context(), apiv1.AddPriceVersionRequest{Note: note, PriceList: raw})
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(out(cmd), v)
			}
			fmt.Fprintf(out(cmd), "Price list %s added, effective %s.\n", v.ID, v.Effective.Format(time.RFC3339))
			return nil
		},
	}
	cmd.Flags().StringVar(&file, "file", "", "the price list JSON (as `gpurent prices export` prints it; - for stdin)")
	cmd.Flags().StringVar(&note, "note", "", "why the prices change (kept with the version)")
	cn.addFlags(cmd, true)
	return cmd
}
