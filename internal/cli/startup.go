package cli

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gpurent/gpurent/internal/apiv1"
	"github.com/gpurent/gpurent/internal/client"
)

// startupLabel says what an instance's startup command runs.
func startupLabel(c *string) string {
	switch {
	case c == nil:
		return "the image's own entrypoint and command"
	case *c == "":
		return "none"
	}
	return *c
}

func (a *app) setCmdCmd() *cobra.Command {
	var cn conn
	var imageDefault bool
	cmd := &cobra.Command{
		Use:   "set-cmd ID [COMMAND]",
		Short: "Change an instance's startup command (it applies at the next start)",
		Long: "Change what the instance's init starts when the instance starts: a shell line run with /bin/sh -c,\n" +
			"'' for none, or --image-default for the image's own entrypoint and command. The instance keeps\n" +
			"running whatever the command does; its exit is shown by `gpurent show` and its output by `gpurent logs`.",
		Example: "  gpurent set-cmd ins-1 'python train.py --resume >> /root/data/train.log 2>&1'\n" +
			"  gpurent set-cmd ins-1 ''                # run nothing: a machine to fill over SSH\n" +
			"  gpurent set-cmd ins-1 --image-default   # the image's own entrypoint and command",
		Args: argsError(cobra.RangeArgs(1, 2)),
		RunE: func(cmd *cobra.Command, args []string) error {
			var line *string
			switch {
			case imageDefault && len(args) == 2:
				return usageError{err: errors.New("give a COMMAND or --image-default, not both")}
			case !imageDefault && len(args) == 1:
				return usageError{err: errors.New("give the COMMAND (quote it; '' runs none) or --image-default")}
			case len(args) == 2:
				line = &args[1]
			}
			c, asJSON, err := a.connectFor(cmd, &cn)
			if err != nil {
				return err
			}
			res, err := c.SetStartupCommand(cmd.Context(), args[0], line)
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(out(cmd), res)
			}
			fmt.Fprintf(out(cmd), "%s: %s\n", res.ID, res.Message)
			return nil
		},
	}
	cn.addFlags(cmd, true)
	cmd.Flags().BoolVar(&imageDefault, "image-default", false, "run the image's own entrypoint and command")
	return cmd
}

func (a *app) logsCmd() *cobra.Command {
	var cn conn
	var o client.LogsOptions
	cmd := &cobra.Command{
		Use:   "logs ID",
		Short: "Show the output of an instance's startup command",
		Example: "  gpurent logs ins-1 --tail 100\n" +
			"  gpurent logs ins-1 -f --since 10m",
		Args: argsError(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			if o.Tail < 0 {
				return usageError{err: errors.New("--tail must be a number of lines, 0 for all")}
			}
			c, err := a.connect(cmd, &cn)
			if err != nil {
				return err
			}
			rc, err := c.InstanceLogs(cmd.Context(), args[0], o)
			if err != nil {
				return err
			}
			defer rc.Close()
			if _, err := io.Copy(flushingWriter{out(cmd)}, rc); err != nil && cmd.Context().Err() == nil {
				return fmt.Errorf("the logs stream broke: %w", err)
			}
			return nil
		},
	}
	cn.addFlags(cmd, false)
	f := cmd.Flags()
	f.BoolVarP(&o.Follow, "follow", "f", false, "keep printing new output until the instance stops (Ctrl-C ends)")
	f.StringVar(&o.Since, "since", "", "only output since a time (RFC 3339) or for a duration back, e.g. 10m")
	f.IntVar(&o.Tail, "tail", 0, "only the last N lines (0: all the host keeps)")
	return cmd
}

// flushingWriter writes through at once (a followed stream shows each
// chunk as it comes).
type flushingWriter struct{ w io.Writer }

func (f flushingWriter) Write(p []byte) (int, error) {
	n, err := f.w.Write(p)
	if fl, ok := f.w.(interface{ Flush() error }); ok {
		_ = fl.Flush()
	}
	return n, err
}

// startupStatusLine is the startup command's status for `gpurent show`.
func startupStatusLine(st *apiv1.StartupStatus) string {
	if st == nil {
		return "-"
	}
	if st.Summary != "" {
		return st.Summary
	}
	return st.State
}

// confirmDelete asks, on a terminal, before deleting an instance that
// holds a data volume; without a terminal it refuses unless --yes.
func confirmDelete(in *input, inst apiv1.Instance) (bool, error) {
	what := fmt.Sprintf("instance %s", inst.ID)
	if inst.Name != "" {
		what += " (" + inst.Name + ")"
	}
	vol := "its data volume"
	if inst.Volume != nil {
		vol = fmt.Sprintf("its data volume %s (%d GiB, %s)", inst.Volume.ID, inst.Volume.SizeGiB, inst.Volume.MountPath)
	}
	if !in.tty {
		return false, usageError{err: fmt.Errorf("deleting %s also deletes %s: standard input is not a terminal to confirm on; pass --yes", what, vol)}
	}
	ans, err := in.line(fmt.Sprintf("Delete %s, %s, with everything on it? It cannot be undone.\nType the instance ID or y to confirm [y/N]: ", what, vol))
	if err != nil {
		return false, err
	}
	ans = strings.TrimSpace(ans)
	return ans == inst.ID || strings.EqualFold(ans, "y") || strings.EqualFold(ans, "yes"), nil
}
