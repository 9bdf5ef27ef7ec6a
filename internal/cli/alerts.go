package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/gpurent/gpurent/internal/apiv1"
)

func (a *app) walletAlertsCmd() *cobra.Command {
	var (
		cn      conn
		webhook string
		noHook  bool
	)
	cmd := &cobra.Command{
		Use:   "alerts [--webhook URL | --no-webhook]",
		Short: "Account notices (runway alerts at 2 h, 30 min and the stop; queued starts) and where they are posted",
		Args:  argsError(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, asJSON, err := a.connectFor(cmd, &cn)
			if err != nil {
				return err
			}
			var evs apiv1.AccountEvents
			switch {
			case noHook:
				evs, err = c.SetWebhook(cmd.Context(), "")
			case webhook != "":
				evs, err = c.SetWebhook(cmd.Context(), webhook)
			default:
				evs, err = c.AccountEvents(cmd.Context())
			}
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(out(cmd), evs)
			}
			fmt.Fprintf(out(cmd), "Webhook: %s\n", orDash(evs.WebhookURL))
			fmt.Fprintln(out(cmd), "Alerts come at 2 h and 30 min of runway; at 60 s running instances stop (data kept).")
			if len(evs.Events) == 0 {
				fmt.Fprintln(out(cmd), "\nNo notices yet.")
				return nil
			}
			fmt.Fprintln(out(cmd))
			t := newTable(out(cmd), "TIME", "KIND", "MESSAGE")
			for _, e := range evs.Events {
				t.row(formatTime(e.At, a.env.Location), e.Kind, e.Message)
			}
			return t.flush()
		},
	}
	cmd.Flags().StringVar(&webhook, "webhook", "", "post alerts as JSON to this http(s) URL")
	cmd.Flags().BoolVar(&noHook, "no-webhook", false, "stop posting alerts")
	cn.addFlags(cmd, true)
	return cmd
}
