package cli

import (
	"context"
	"fmt"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/gpurent/gpurent/internal/apiv1"
	"github.com/gpurent/gpurent/internal/client"
)

func (a *app) hostsCmd() *cobra.Command {
	var cn conn
	var verbose bool
	cmd := &cobra.Command{
		Use:   "hosts",
		Short: "List GPU hosts (operators)",
		Args:  argsError(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, asJSON, err := a.connectFor(cmd, &cn)
			if err != nil {
				return err
			}
			list, err := c.Hosts(cmd.Context())
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(out(cmd), list)
			}
			return a.printHosts(cmd, list.Hosts, verbose)
		},
	}
	cn.addFlags(cmd, true)
	cmd.Flags().BoolVarP(&verbose, "verbose", "v", false, "list every GPU with its health and holder")
	cmd.AddCommand(a.joinTokenCmd(), a.hostResetCmd())
	return cmd
}

func (a *app) printHosts(cmd *cobra.Command, hosts []apiv1.Host, verbose bool) error {
	w := out(cmd)
	if len(hosts) == 0 {
		fmt.Fprintln(w, "No hosts have registered. Make a join token with `gpurent hosts join-token create --zone ZONE`, then start `gpurent agent` on the host")
		return nil
	}
	now := a.env.Now()
	t := newTable(w, "ID", "NAME", "ZONE", "STATE", "RUNTIME", "GPUS FREE/TOTAL", "AGENT", "LAST SEEN")
	demo := false
	for _, h := range hosts {
		rt := orDash(h.Runtime)
		if h.Runtime == "process" {
			rt, demo = "process (demo)", true
		}
		t.row(h.ID, h.Name, orDash(h.Zone), h.State, rt,
			fmt.Sprintf("%d/%d", h.GPUsFree, h.GPUsTotal), orDash(h.AgentVersion),
			formatAgo(h.LastSeenAt, now))
	}
	if err := t.flush(); err != nil {
		return err
	}
	if demo {
		fmt.Fprintln(w, "\nHosts on the \"process\" runtime are for demos only: no isolation between tenants.")
	}
	if !verbose {
		return nil
	}
	fmt.Fprintln(w)
	g := newTable(w, "HOST", "INDEX", "GPU", "TYPE", "HEALTH", "TOPOLOGY", "HOLDER")
	for _, h := range hosts {
		for _, gpu := range h.GPUs {
			g.row(h.Name, strconv.Itoa(gpu.Index), gpu.ID, gpu.Type, gpu.Health,
				orDash(gpu.TopoGroup), orDash(gpu.InstanceID))
		}
	}
	return g.flush()
}

func (a *app) cordonCmd() *cobra.Command {
	return a.hostActionCmd("cordon HOST_ID...", "Stop new placements on hosts (running instances stay)",
		"cordoned", (*client.Client).CordonHost)
}

func (a *app) uncordonCmd() *cobra.Command {
	return a.hostActionCmd("uncordon HOST_ID...", "Let cordoned hosts take new placements again",
		"uncordoned", (*client.Client).UncordonHost)
}

func (a *app) drainCmd() *cobra.Command {
	return a.hostActionCmd("drain HOST_ID...", "Take hosts out of placement and move their running instances elsewhere (maintenance)",
		"drained", (*client.Client).DrainHost)
}

func (a *app) hostActionCmd(use, short, done string,
	call func(*client.Client, context.Context, string) (apiv1.Host, error)) *cobra.Command {
	var cn conn
	cmd := &cobra.Command{
		Use:   use,
		Short: short,
		Args:  argsError(cobra.MinimumNArgs(1)),
		RunE: func(cmd *cobra.Command, ids []string) error {
			c, asJSON, err := a.connectFor(cmd, &cn)
			if err != nil {
				return err
			}
			return a.each(cmd, ids, "hosts", done, func(id string) error {
				h, err := call(c, cmd.Context(), id)
				if err != nil {
					return err
				}
				if asJSON {
					return writeJSON(out(cmd), h)
				}
				fmt.Fprintf(out(cmd), "Host %s (%s) is %s.\n", h.Name, h.ID, h.State)
				return nil
			})
		},
	}
	cn.addFlags(cmd, true)
	return cmd
}
