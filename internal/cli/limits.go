package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/gpurent/gpurent/internal/apiv1"
	"github.com/gpurent/gpurent/internal/money"
)

func (a *app) walletLimitsCmd() *cobra.Command {
	var (
		cn             conn
		daily, monthly string
		stopRunning    bool
	)
	cmd := &cobra.Command{
		Use:   "limits [--daily CNY] [--monthly CNY] [--stop-running]",
		Short: "Show or set spend limits per day and month (0: none)",
		Args:  argsError(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, asJSON, err := a.connectFor(cmd, &cn)
			if err != nil {
				return err
			}
			var l apiv1.SpendLimits
			if cmd.Flags().Changed("daily") || cmd.Flags().Changed("monthly") || cmd.Flags().Changed("stop-running") {
				cur, err := c.SpendLimits(cmd.Context())
				if err != nil {
					return err
				}
				req := apiv1.SetSpendLimitsRequest{DailyFen: cur.DailyFen, MonthlyFen: cur.MonthlyFen, StopRunning: cur.StopRunning}
				if cmd.Flags().Changed("daily") {
					if req.DailyFen, err = money.Parse(daily); err != nil {
						return usageError{err: fmt.Errorf("--daily: %w", err)}
					}
				}
				if cmd.Flags().Changed("monthly") {
					if req.MonthlyFen, err = money.Parse(monthly); err != nil {
						return usageError{err: fmt.Errorf("--monthly: %w", err)}
					}
				}
				if cmd.Flags().Changed("stop-running") {
					req.StopRunning = stopRunning
				}
				if l, err = c.SetSpendLimits(cmd.Context(), req); err != nil {
					return err
				}
			} else if l, err = c.SpendLimits(cmd.Context()); err != nil {
				return err
			}
			if asJSON {
				return writeJSON(out(cmd), l)
			}
			capText := func(fen int64) string {
				if fen == 0 {
					return "none"
				}
				return money.Format(fen)
			}
			p := newPairs(out(cmd))
			p.pair("Daily limit", capText(l.DailyFen)+", spent today "+money.Format(l.SpentTodayFen))
			p.pair("Monthly limit", capText(l.MonthlyFen)+", spent this month "+money.Format(l.SpentMonthFen))
			when := "new rentals are refused; running instances go on"
			if l.StopRunning {
				when = "new rentals are refused and running instances are stopped"
			}
			p.pair("At a limit", when)
			if l.Reached != "" {
				p.pair("Now", "the "+l.Reached+" limit is reached")
			}
			return p.flush()
		},
	}
	cmd.Flags().StringVar(&daily, "daily", "", "daily cap in CNY (0: none)")
	cmd.Flags().StringVar(&monthly, "monthly", "", "monthly cap in CNY (0: none)")
	cmd.Flags().BoolVar(&stopRunning, "stop-running", false, "also stop running instances at a cap")
	cn.addFlags(cmd, true)
	return cmd
}
