package cli

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/gpurent/gpurent/internal/apiv1"
)

// Per-host join tokens and host resets (operators): the one way a host
// joins the fleet.

func (a *app) joinTokenCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "join-token",
		Short: "One-time tokens for GPU hosts to join the fleet (operators)",
	}
	parent(cmd)
	cmd.AddCommand(a.joinTokenCreateCmd(), a.joinTokenListCmd(), a.joinTokenRevokeCmd())
	return cmd
}

func (a *app) joinTokenCreateCmd() *cobra.Command {
	var cn conn
	var zone, name string
	var ttl time.Duration
	cmd := &cobra.Command{
		Use:   "create --zone ZONE [--name HOST] [--ttl 24h]",
		Short: "Make a one-time join token for one host; the token is shown once",
		Args:  argsError(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if zone == "" {
				return usageError{fmt.Errorf("--zone is required")}
			}
			c, asJSON, err := a.connectFor(cmd, &cn)
			if err != nil {
				return err
			}
			jt, err := c.CreateJoinToken(cmd.Context(), apiv1.CreateJoinTokenRequest{Zone: zone, Name: name,
				TTLSeconds: int64(ttl / time.Second)})
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(out(cmd), jt)
			}
			return a.printCreatedJoinToken(cmd, jt, c.Server())
		},
	}
	cn.addFlags(cmd, true)
	f := cmd.Flags()
	f.StringVar(&zone, "zone", "", "zone the host sits in")
	f.StringVar(&name, "name", "", "the host's name (default: any new name)")
	f.DurationVar(&ttl, "ttl", 24*time.Hour, "how long the token can be used (1m to 720h)")
	return cmd
}

// printCreatedJoinToken shows a new token once, with where to put it.
func (a *app) printCreatedJoinToken(cmd *cobra.Command, jt apiv1.CreatedJoinToken, server string) error {
	w := out(cmd)
	host := jt.Name
	if host == "" {
		host = "any new host name"
	}
	fmt.Fprintf(w, "Join token %s for %s in zone %s, valid until %s, usable once:\n\n  %s\n\n",
		jt.ID, host, jt.Zone, formatTime(jt.ExpiresAt, a.env.Location), jt.Token)
	fmt.Fprintln(w, "It is shown only now. On the host, put it in a file only root can read and start the agent:")
	fmt.Fprintf(w, "  install -m 600 /dev/stdin /etc/gpurent/join-token   # paste the token, then Ctrl-D\n")
	fmt.Fprintf(w, "  gpurent agent --server %s --zone %s --join-token-file /etc/gpurent/join-token\n", server, jt.Zone)
	fmt.Fprintln(w, "(or set GPURENT_JOIN_TOKEN in the agent's environment; never pass the token on a command line)")
	return nil
}

func (a *app) joinTokenListCmd() *cobra.Command {
	var cn conn
	cmd := &cobra.Command{
		Use:     "ls",
		Aliases: []string{"list"},
		Short:   "List join tokens and what became of them (never their secrets)",
		Args:    argsError(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, asJSON, err := a.connectFor(cmd, &cn)
			if err != nil {
				return err
			}
			list, err := c.JoinTokens(cmd.Context())
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(out(cmd), list)
			}
			w := out(cmd)
			if len(list.JoinTokens) == 0 {
				fmt.Fprintln(w, "No join tokens. Make one with: gpurent hosts join-token create --zone ZONE")
				return nil
			}
			t := newTable(w, "ID", "ZONE", "NAME", "STATE", "EXPIRES", "USED BY", "FOR RESET OF")
			for _, jt := range list.JoinTokens {
				t.row(jt.ID, jt.Zone, orDash(jt.Name), jt.State, formatTime(jt.ExpiresAt, a.env.Location),
					orDash(jt.UsedName), orDash(jt.HostID))
			}
			return t.flush()
		},
	}
	cn.addFlags(cmd, true)
	return cmd
}

func (a *app) joinTokenRevokeCmd() *cobra.Command {
	var cn conn
	cmd := &cobra.Command{
		Use:   "revoke TOKEN_ID...",
		Short: "Revoke unused join tokens",
		Args:  argsError(cobra.MinimumNArgs(1)),
		RunE: func(cmd *cobra.Command, ids []string) error {
			c, _, err := a.connectFor(cmd, &cn)
			if err != nil {
				return err
			}
			return a.each(cmd, ids, "join tokens", "revoked", func(id string) error {
				if err := c.RevokeJoinToken(cmd.Context(), id); err != nil {
					return err
				}
				fmt.Fprintf(out(cmd), "Join token %s revoked.\n", id)
				return nil
			})
		},
	}
	cn.addFlags(cmd, true)
	return cmd
}

func (a *app) hostResetCmd() *cobra.Command {
	var cn conn
	var ttl time.Duration
	cmd := &cobra.Command{
		Use:   "reset HOST_ID",
		Short: "Invalidate a host's agent credential and issue a join token that re-registers it",
		Long: `Invalidate a host's agent credential: its agent is refused from now on, the host
is offline at once and its GPUs may be claimed by another host. The host keeps
its id, instances and desired state; the join token printed (once) re-registers
it, and only it. Use it for a reinstalled host, a lost agent state directory, or
a credential that may have leaked.`,
		Args: argsError(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, ids []string) error {
			c, asJSON, err := a.connectFor(cmd, &cn)
			if err != nil {
				return err
			}
			r, err := c.ResetHost(cmd.Context(), ids[0], apiv1.HostResetRequest{TTLSeconds: int64(ttl / time.Second)})
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(out(cmd), r)
			}
			fmt.Fprintf(out(cmd), "Host %s (%s): agent credential invalidated.\n", r.Host.Name, r.Host.ID)
			return a.printCreatedJoinToken(cmd, r.JoinToken, c.Server())
		},
	}
	cn.addFlags(cmd, true)
	cmd.Flags().DurationVar(&ttl, "ttl", 24*time.Hour, "how long the new join token can be used (1m to 720h)")
	return cmd
}
