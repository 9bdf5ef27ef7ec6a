package cli

import (
	"fmt"
	"strconv"
	"time"

	"github.com/gpurent/gpurent/internal/money"
	"github.com/spf13/cobra"
)

func (a *app) billCmd() *cobra.Command {
	var (
		cn    conn
		month string
		asCSV bool
	)
	cmd := &cobra.Command{
		Use:   "bill [--month 2026-11] [--csv]",
		Short: "A month's usage statement: lines per instance and rate, total; CSV for spreadsheets",
		Args:  argsError(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			asJSON, err := cn.json()
			if err != nil {
				return err
			}
			if month == "" {
				loc, err := time.LoadLocation("Asia/Shanghai")
				if err != nil {
					return err
				}
				month = a.env.Now().In(loc).Format("2006-01")
			}
			c, err := a.connect(cmd, &cn)
			if err != nil {
				return err
			}
			if asCSV {
				return c.StatementCSV(cmd.Context(), month, out(cmd))
			}
			st, err := c.Statement(cmd.Context(), month)
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(out(cmd), st)
			}
			state := "complete; made final a day after the month ends"
			switch {
			case st.Final:
				state = "final: it never changes; later usage is corrected next month"
			case st.Open:
				state = "open: the month or a run in it is not over"
			}
			fmt.Fprintf(out(cmd), "Statement %s (%s), %s\n\n", st.Month, st.TimeZone, state)
			if len(st.Lines) == 0 {
				fmt.Fprintln(out(cmd), "No usage.")
				return nil
			}
			t := newTable(out(cmd), "INSTANCE", "NAME", "GPUS", "WINDOW", "HOURS", "RATE PER UNIT", "UNITS", "AMOUNT")
			for _, l := range st.Lines {
				rate := money.Format(l.RateFen) + "/" + ratePer(l.Window)
				t.row(l.InstanceID, l.InstanceName, fmt.Sprintf("%d × %s", l.GPUs, l.GPUType), l.Window,
					hours(l.Seconds), rate, strconv.FormatInt(l.Units, 10), money.Format(l.Fen))
			}
			t.row("", "", "", "", "", "", "total", money.Format(st.TotalFen))
			return t.flush()
		},
	}
	cmd.Flags().StringVar(&month, "month", "", "the month, e.g. 2026-11 (default: this month in Asia/Shanghai)")
	cmd.Flags().BoolVar(&asCSV, "csv", false, "print CSV")
	cn.addFlags(cmd, true)
	return cmd
}

// ratePer names what a statement line's rate is for: an hour, or a
// package's period.
func ratePer(window string) string {
	switch window {
	case "daily package":
		return "day"
	case "weekly package":
		return "week"
	case "monthly package":
		return "30 days"
	}
	return "h"
}

// hours prints seconds as hours with up to two decimals, from integers.
func hours(sec int64) string {
	h, rest := sec/3600, sec%3600
	if rest == 0 {
		return strconv.FormatInt(h, 10)
	}
	return fmt.Sprintf("%d.%02d", h, rest*100/3600)
}
