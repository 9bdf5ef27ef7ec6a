package cli

import (
	"fmt"
	"sort"
	"strings"

	"github.com/gpurent/gpurent/internal/money"
	"github.com/spf13/cobra"
)

func (a *app) revenueCmd() *cobra.Command {
	var (
		cn       conn
		from, to string
	)
	cmd := &cobra.Command{
		Use:   "revenue [--from 2026-11-01] [--to 2026-12-01]",
		Short: "Usage revenue per day and per GPU type (operators; default this month)",
		Args:  argsError(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, asJSON, err := a.connectFor(cmd, &cn)
			if err != nil {
				return err
			}
			rev, err := c.Revenue(cmd.Context(), from, to)
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(out(cmd), rev)
			}
			fmt.Fprintf(out(cmd), "Revenue %s to %s (%s, to exclusive): %s\n\n", rev.From, rev.To, rev.TimeZone, money.Format(rev.TotalFen))
			types := make([]string, 0, len(rev.ByType))
			for t := range rev.ByType {
				types = append(types, t)
			}
			sort.Strings(types)
			header := append([]string{"DAY", "TOTAL"}, upper(types)...)
			t := newTable(out(cmd), header...)
			for _, d := range rev.Days {
				row := []string{d.Day, money.Format(d.TotalFen)}
				for _, typ := range types {
					row = append(row, money.Format(d.ByType[typ]))
				}
				t.row(row...)
			}
			row := []string{"all", money.Format(rev.TotalFen)}
			for _, typ := range types {
				row = append(row, money.Format(rev.ByType[typ]))
			}
			t.row(row...)
			return t.flush()
		},
	}
	cmd.Flags().StringVar(&from, "from", "", "first day, e.g. 2026-11-01 (Asia/Shanghai)")
	cmd.Flags().StringVar(&to, "to", "", "the day after the last, e.g. 2026-12-01")
	cn.addFlags(cmd, true)
	return cmd
}

func upper(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = strings.ToUpper(s)
	}
	return out
}
