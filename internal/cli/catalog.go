package cli

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gpurent/gpurent/internal/apiv1"
	"github.com/gpurent/gpurent/internal/money"
)

func (a *app) gpusCmd() *cobra.Command {
	var (
		cn     conn
		health bool
	)
	cmd := &cobra.Command{
		Use:   "gpus [--health]",
		Short: "List GPU types: spec, availability and list prices; --health: every GPU's health (operators)",
		Args:  argsError(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, asJSON, err := a.connectFor(cmd, &cn)
			if err != nil {
				return err
			}
			if health {
				return a.runGPUHealth(cmd, c, asJSON)
			}
			list, err := c.GPUTypes(cmd.Context())
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(out(cmd), list)
			}
			return printGPUTypes(cmd, list.GPUTypes)
		},
	}
	cmd.Flags().BoolVar(&health, "health", false, "operators: every GPU's state, last Xid, ECC counts, open incidents and RMA mark")
	cn.addFlags(cmd, true)
	return cmd
}

func printGPUTypes(cmd *cobra.Command, types []apiv1.GPUType) error {
	if len(types) == 0 {
		fmt.Fprintln(out(cmd), "No GPU types are offered.")
		return nil
	}
	t := newTable(out(cmd), "TYPE", "MEMORY", "BANDWIDTH", "BF16 TFLOPS", "FP8 TFLOPS", "NVLINK", "P2P",
		"FREE/TOTAL", "DEGRADED", "HOURLY", "DAILY", "WEEKLY", "MONTHLY", "FREE BY ZONE")
	anyDegraded := false
	for _, g := range types {
		nvlink := "none"
		if g.NVLinkGBs > 0 {
			nvlink = strconv.Itoa(g.NVLinkGBs) + " GB/s"
		}
		p2p := "no"
		if g.PeerToPeer {
			p2p = "yes"
		}
		zones := make([]string, 0, len(g.Zones))
		for _, z := range g.Zones {
			zone := fmt.Sprintf("%s %d/%d", z.ZoneID, z.Free, z.Total)
			if z.Free > 0 && z.MaxPerHost > 0 {
				zone += fmt.Sprintf(" (≤%d per host)", z.MaxPerHost)
			}
			if z.Degraded != nil && z.Degraded.Free > 0 {
				zone += " + " + degradedFree(z.Degraded)
			}
			zones = append(zones, zone)
		}
		degraded := "-"
		if g.Degraded != nil && g.Degraded.Free > 0 {
			degraded, anyDegraded = degradedFree(g.Degraded), true
		}
		t.row(g.ID,
			strconv.Itoa(g.MemoryGB)+" GB",
			strconv.Itoa(g.MemBandwidthGBs)+" GB/s",
			formatTFLOPS(g.BF16TFLOPS),
			formatTFLOPS(g.FP8TFLOPS),
			nvlink, p2p,
			fmt.Sprintf("%d/%d", g.Free, g.Total),
			degraded,
			money.Format(g.Prices.HourlyFen),
			money.Format(g.Prices.DailyFen),
			money.Format(g.Prices.WeeklyFen),
			money.Format(g.Prices.MonthlyFen),
			orDash(strings.Join(zones, ", ")),
		)
	}
	if err := t.flush(); err != nil {
		return err
	}
	fmt.Fprintln(out(cmd), "\nPrices are list prices per GPU (hourly, or per day/week/month package). TFLOPS are dense, not sparse.")
	if anyDegraded {
		fmt.Fprintln(out(cmd), "Degraded GPUs measured slower than their type's fleet median: they are rented only with `gpurent rent --degraded`,"+
			"\nby the second, at the share of the hourly price shown (the mean share of the GPUs you get). FREE/TOTAL counts the others.")
	}
	return nil
}

// degradedFree writes the free degraded GPUs and their price range: "2
// degraded at 85–88%" (one share: "1 degraded at 85%").
func degradedFree(d *apiv1.DegradedAvailability) string {
	lo, hi := permillePercent(d.MinPricePermille), permillePercent(d.MaxPricePermille)
	if lo == hi {
		return fmt.Sprintf("%d degraded at %s", d.Free, lo)
	}
	return fmt.Sprintf("%d degraded at %s–%s", d.Free, strings.TrimSuffix(lo, "%"), hi)
}

// permillePercent writes a price share in permille as a percentage of the
// list price: 850 → "85%", 862 → "86.2%".
func permillePercent(p int) string {
	if p%10 == 0 {
		return fmt.Sprintf("%d%%", p/10)
	}
	return fmt.Sprintf("%d.%d%%", p/10, p%10)
}

func (a *app) zonesCmd() *cobra.Command {
	var cn conn
	cmd := &cobra.Command{
		Use:   "zones",
		Short: "List the datacentre zones",
		Args:  argsError(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, asJSON, err := a.connectFor(cmd, &cn)
			if err != nil {
				return err
			}
			list, err := c.Zones(cmd.Context())
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(out(cmd), list)
			}
			t := newTable(out(cmd), "ZONE", "NAME", "REGION", "PROBE")
			for _, z := range list.Zones {
				t.row(z.ID, z.Name, orDash(z.Region), orDash(z.ProbeURL))
			}
			return t.flush()
		},
	}
	cn.addFlags(cmd, true)
	cmd.AddCommand(a.zoneProbeCmd())
	return cmd
}

func (a *app) zoneProbeCmd() *cobra.Command {
	var cn conn
	var clear bool
	cmd := &cobra.Command{
		Use:   "set-probe ZONE [URL]",
		Short: "Set the endpoint at a zone's site that the console's latency test times (operators)",
		Long: `Set the endpoint at a zone's site that customers' browsers time in the
console's zone latency test: an http(s) URL at that site, such as an agent's
--probe-listen address there. With --clear the test times the control plane
for that zone again, and says so.`,
		Example: "  gpurent zones set-probe cd-tianfu-a https://probe.cd-a.example.com:8090/probe\n  gpurent zones set-probe cd-tianfu-a --clear",
		Args:    argsError(cobra.RangeArgs(1, 2)),
		RunE: func(cmd *cobra.Command, args []string) error {
			probe := ""
			switch {
			case len(args) == 2 && clear:
				return usageError{err: errors.New("give a URL or --clear, not both")}
			case len(args) == 2:
				probe = args[1]
				if probe == "" {
					return usageError{err: errors.New("an empty URL: use --clear to remove the probe")}
				}
			case !clear:
				return usageError{err: errors.New("give the probe URL, or --clear")}
			}
			c, asJSON, err := a.connectFor(cmd, &cn)
			if err != nil {
				return err
			}
			z, err := c.SetZoneProbe(cmd.Context(), args[0], probe)
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(out(cmd), z)
			}
			if z.ProbeURL == "" {
				fmt.Fprintf(out(cmd), "Zone %s has no probe: its latency test times the control plane.\n", z.ID)
			} else {
				fmt.Fprintf(out(cmd), "Zone %s: browsers time %s.\n", z.ID, z.ProbeURL)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&clear, "clear", false, "remove the zone's probe")
	cn.addFlags(cmd, true)
	return cmd
}
