package cli

import (
	"fmt"

	"github.com/gpurent/gpurent/internal/money"
	"github.com/spf13/cobra"
)

func (a *app) planCmd() *cobra.Command {
	var cn conn
	var to, key string
	cmd := &cobra.Command{
		Use:   "plan ID [--to hourly|daily|weekly|monthly]",
		Short: "Show an instance's billing plan, or convert it to another",
		Long: "Without --to, shows the plan and its changes. From hourly to a package the change is\n" +
			"immediate: the time so far is billed by the second and the first period is charged now.\n" +
			"From a package the change waits for the end of the paid period; asking for the plan in\n" +
			"force cancels a pending change.",
		Example: "  gpurent plan i-xxxx --to monthly\n  gpurent plan i-xxxx --to hourly",
		Args:    argsError(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, ids []string) error {
			c, asJSON, err := a.connectFor(cmd, &cn)
			if err != nil {
				return err
			}
			if to != "" {
				res, err := c.ChangePlan(cmd.Context(), ids[0], to, key)
				if err != nil {
					return err
				}
				if asJSON {
					return writeJSON(out(cmd), res)
				}
				w := out(cmd)
				if res.Canceled != nil {
					fmt.Fprintf(w, "Canceled the change to %s that was due at %s.\n", res.Canceled.To, formatTime(res.Canceled.EffectiveAt, a.env.Location))
				}
				if ch := res.Change; ch != nil {
					if ch.State == "applied" {
						fmt.Fprintf(w, "%s is on the %s plan from %s; charged %s for the first period.\n", ids[0], ch.To,
							formatTime(ch.EffectiveAt, a.env.Location), money.Format(res.ChargedFen))
					} else {
						fmt.Fprintf(w, "%s changes from %s to %s at %s, when the paid period ends.\n", ids[0], ch.From, ch.To,
							formatTime(ch.EffectiveAt, a.env.Location))
					}
				}
				return nil
			}
			h, err := c.PlanHistory(cmd.Context(), ids[0])
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(out(cmd), h)
			}
			p := newPairs(out(cmd))
			p.pair("Plan", h.Plan)
			for _, ch := range h.Changes {
				p.pair("  "+ch.State, fmt.Sprintf("%s → %s at %s", ch.From, ch.To, formatTime(ch.EffectiveAt, a.env.Location)))
			}
			return p.flush()
		},
	}
	cn.addFlags(cmd, true)
	cmd.Flags().StringVar(&to, "to", "", "convert to this plan: hourly, daily, weekly or monthly")
	cmd.Flags().StringVar(&key, "idempotency-key", "", "key that makes retries of this change charge once (default: random)")
	return cmd
}
