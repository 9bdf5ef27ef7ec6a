package cli

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gpurent/gpurent/internal/apiv1"
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
		"FREE/TOTAL", "HOURLY", "DAILY", "WEEKLY", "MONTHLY", "FREE BY ZONE")
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
			zones = append(zones, zone)
		}
		t.row(g.ID,
			strconv.Itoa(g.MemoryGB)+" GB",
			strconv.Itoa(g.MemBandwidthGBs)+" GB/s",
			formatTFLOPS(g.BF16TFLOPS),
			formatTFLOPS(g.FP8TFLOPS),
			nvlink, p2p,
			fmt.Sprintf("%d/%d", g.Free, g.Total),
			formatCNY(g.Prices.HourlyFen),
			formatCNY(g.Prices.DailyFen),
			formatCNY(g.Prices.WeeklyFen),
			formatCNY(g.Prices.MonthlyFen),
			orDash(strings.Join(zones, ", ")),
		)
	}
	if err := t.flush(); err != nil {
		return err
	}
	fmt.Fprintln(out(cmd), "\nPrices are list prices per GPU (hourly, or per day/week/month package). TFLOPS are dense, not sparse.")
	return nil
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
	return cmd
}
