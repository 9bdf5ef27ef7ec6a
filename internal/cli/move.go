package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/apiv1"
	"github.com/gpurent/gpurent/internal/client"
	"github.com/gpurent/gpurent/internal/money"
)

// This file holds the commands that move an instance to other GPUs:
// upgrade, migrate, start --move/--queue, operations and queue cancel.

// defaultMoveWaitTimeout bounds --wait on a move: copying a large volume
// to another host takes longer than starting a container.
const defaultMoveWaitTimeout = time.Hour

// opWaitFlags are --wait and --wait-timeout of the commands that make an
// operation.
type opWaitFlags struct {
	wait    bool
	timeout time.Duration
}

func (w *opWaitFlags) add(cmd *cobra.Command) {
	cmd.Flags().BoolVar(&w.wait, "wait", false, "wait until the operation is done; exit non-zero if it rolls back")
	cmd.Flags().DurationVar(&w.timeout, "wait-timeout", defaultMoveWaitTimeout, "how long --wait waits")
}

func (a *app) upgradeCmd() *cobra.Command {
	var cn conn
	var wf opWaitFlags
	var gpu, zone, key string
	var count int
	var yes, dryRun bool
	cmd := &cobra.Command{
		Use:   "upgrade ID [--gpu TYPE] [--count N] [--zone Z] [--yes] [--wait]",
		Short: "Move an instance to other GPUs (type, count, or no-GPU mode) keeping its data",
		Long: "Moves a running instance to another GPU type or count without losing its data. When the\n" +
			"target fits on the instance's host, the container restarts there on the new GPUs with its\n" +
			"file system; otherwise the volume and file system are copied to another host while the\n" +
			"instance runs, then it stops briefly for the last changes and starts there. The new price\n" +
			"applies from the moment the new container starts; if the target fails, the instance goes\n" +
			"back to its old GPUs. A stopped instance just changes what it will start with.\n\n" +
			"--count 0 is no-GPU mode (CPU and memory only, at the token price); --count alone keeps\n" +
			"the GPU type. The plan (where it goes, the price per hour before and after, the expected\n" +
			"speed from the spec) is shown first and must be confirmed, or pass --yes.",
		Example: "  gpurent upgrade ins-xxxx --gpu h100-80g-sxm --count 4\n" +
			"  gpurent upgrade ins-xxxx --count 2 --yes --wait        # same type, two GPUs\n" +
			"  gpurent upgrade ins-xxxx --count 0 --yes               # no-GPU mode, data kept\n" +
			"  gpurent upgrade ins-xxxx --gpu a100-80g-sxm --dry-run  # only show the plan",
		Args: argsError(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, ids []string) error {
			id := ids[0]
			req := apiv1.UpgradeRequest{GPUType: strings.TrimSpace(gpu), Zone: strings.TrimSpace(zone)}
			if cmd.Flags().Changed("count") {
				if count < 0 {
					return usageError{err: fmt.Errorf("--count must be 0 (no-GPU mode) or more, got %d", count)}
				}
				req.GPUCount = &count
			}
			if req.GPUType == "" && req.GPUCount == nil {
				return usageError{err: errors.New("name the target: --gpu TYPE, --count N, or both (see `gpurent gpus`)")}
			}
			c, asJSON, err := a.connectFor(cmd, &cn)
			if err != nil {
				return err
			}
			plan, err := c.UpgradePlan(cmd.Context(), id, req)
			if err != nil {
				return err
			}
			if dryRun {
				if asJSON {
					return writeJSON(out(cmd), plan)
				}
				return a.printUpgradePlan(out(cmd), plan)
			}
			// The plan is what a person confirms; with -o json stdout
			// carries only the result, so the plan goes to stderr.
			planOut := out(cmd)
			if asJSON {
				planOut = cmd.ErrOrStderr()
			}
			if err := a.printUpgradePlan(planOut, plan); err != nil {
				return err
			}
			if !plan.Available {
				return gpurent.Errorf(gpurent.CodeUnavailable, "cannot upgrade %s now: %s", id, orDash(plan.Reason))
			}
			if !yes {
				if err := confirm(cmd, fmt.Sprintf("Upgrade %s to %s?", id, shapeText(plan.To.GPUType, plan.To.GPUCount))); err != nil {
					return err
				}
			}
			d, err := c.Upgrade(cmd.Context(), id, req, key)
			if err != nil {
				return err
			}
			return a.finishOperation(cmd, c, d, asJSON, wf)
		},
	}
	cn.addFlags(cmd, true)
	wf.add(cmd)
	f := cmd.Flags()
	f.StringVar(&gpu, "gpu", "", "target GPU type, e.g. h100-80g-sxm (default: keep the type)")
	f.IntVar(&count, "count", 0, "target number of GPUs; 0 is no-GPU mode (default: keep the count)")
	f.StringVar(&zone, "zone", "", "zone for the target when it does not fit on the instance's host (default: any)")
	f.BoolVarP(&yes, "yes", "y", false, "do not ask for confirmation (needed when stdin is not a terminal)")
	f.BoolVar(&dryRun, "dry-run", false, "only show the plan; change nothing")
	f.StringVar(&key, "idempotency-key", "", "key that makes retries of this upgrade make one operation (default: random)")
	return cmd
}

func (a *app) migrateCmd() *cobra.Command {
	var cn conn
	var wf opWaitFlags
	var req apiv1.MigrateRequest
	var key string
	cmd := &cobra.Command{
		Use:   "migrate ID [--zone Z] [--host H] [--wait]",
		Short: "Move a running instance to another host, same GPUs, keeping its data",
		Long: "Moves a running instance to another host with the same GPU type and count: the volume and\n" +
			"file system are copied while it runs, then it stops briefly for the last changes and starts\n" +
			"on the new host. The price does not change. If the target fails, it stays where it was.\n" +
			"--host is for operators (draining a host, say).",
		Example: "  gpurent migrate ins-xxxx --zone cd-gaoxin-b --wait\n" +
			"  gpurent migrate ins-xxxx --host host-xxxx      # operators",
		Args: argsError(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, ids []string) error {
			c, asJSON, err := a.connectFor(cmd, &cn)
			if err != nil {
				return err
			}
			d, err := c.Migrate(cmd.Context(), ids[0], req, key)
			if err != nil {
				return err
			}
			return a.finishOperation(cmd, c, d, asJSON, wf)
		},
	}
	cn.addFlags(cmd, true)
	wf.add(cmd)
	f := cmd.Flags()
	f.StringVar(&req.Zone, "zone", "", "zone to move to (default: any)")
	f.StringVar(&req.HostID, "host", "", "host to move to (operators only)")
	f.StringVar(&key, "idempotency-key", "", "key that makes retries of this migration make one operation (default: random)")
	return cmd
}

// finishOperation prints an accepted operation, after waiting for it when
// asked: the instance as it ends up, or an error when it rolled back.
func (a *app) finishOperation(cmd *cobra.Command, c *client.Client, d apiv1.OperationDetail, asJSON bool, wf opWaitFlags) error {
	var waitErr error
	if wf.wait {
		ctx, cancel := context.WithTimeout(cmd.Context(), wf.timeout)
		defer cancel()
		d.Operation, waitErr = a.waitOperation(ctx, cmd, c, d.Operation, wf.timeout)
		if inst, err := c.GetInstance(cmd.Context(), d.Instance.ID); err == nil {
			inst.Events = nil
			d.Instance = inst
		}
	}
	if asJSON {
		if err := writeJSON(out(cmd), d); err != nil {
			return err
		}
		return waitErr
	}
	a.printOperationLine(out(cmd), d.Operation)
	if waitErr == nil && !opStep(d.Operation.Step).finished() {
		fmt.Fprintf(out(cmd), "Follow it with: gpurent operations %s\n", d.Instance.ID)
	}
	return waitErr
}

// confirm asks a yes/no question on the terminal; no answer, or stdin that
// is not a terminal, refuses.
func confirm(cmd *cobra.Command, question string) error {
	in := newInput(cmd)
	if !in.tty {
		return gpurent.Errorf(gpurent.CodeInvalid,
			"not going ahead without confirmation: standard input is not a terminal; check the plan above and add --yes")
	}
	answer, err := in.line(question + " [y/N] ")
	if err != nil {
		return err
	}
	switch strings.ToLower(strings.TrimSpace(answer)) {
	case "y", "yes":
		return nil
	}
	fmt.Fprintln(cmd.ErrOrStderr(), "Nothing changed.")
	return ExitError{Code: 1}
}

// printUpgradePlan writes a plan: from → to with resources and price per
// hour, the difference, where it goes and the expected speed.
func (a *app) printUpgradePlan(w io.Writer, p apiv1.UpgradePlan) error {
	p2 := newPairs(w)
	p2.pair("Instance", p.InstanceID)
	p2.pair("From", shapeLine(p.From))
	p2.pair("To", shapeLine(p.To))
	diff := money.Format(p.DifferencePerHour.ApplicableFen)
	if p.DifferencePerHour.ApplicableFen > 0 {
		diff = "+" + diff
	}
	p2.pair("Difference", diff+"/h")
	prices := "list prices"
	if p.AcademicApplies {
		prices = fmt.Sprintf("academic prices (list: %s/h → %s/h)", money.Format(p.From.PricePerHour.ListFen), money.Format(p.To.PricePerHour.ListFen))
	}
	p2.pair("Prices", fmt.Sprintf("%s, for the hour from %s (off-peak hours cost less)", prices, formatTime(p.PricedAt, a.env.Location)))
	switch {
	case !p.Available:
		p2.pair("Where", "not available now: "+orDash(p.Reason))
	case p.Reason != "":
		p2.pair("Where", p.Reason)
	case p.SameHost:
		p2.pair("Where", "same host: the container restarts on the new GPUs with its file system")
	default:
		p2.pair("Where", "host "+orDash(firstNonEmpty(p.HostName, p.HostID))+": the data is copied while it runs, then a short stop")
	}
	speed := "- (no GPUs on one side)"
	if p.SpeedRatio != nil {
		speed = fmt.Sprintf("×%.2f expected, from the %s's BF16 figures (%s → %s TFLOPS)", *p.SpeedRatio, p.SpeedBasis,
			formatTFLOPS(p.From.BF16TFLOPS), formatTFLOPS(p.To.BF16TFLOPS))
	}
	p2.pair("Speed", speed)
	return p2.flush()
}

// shapeLine is a shape with its resources and what it costs the caller.
func shapeLine(s apiv1.UpgradeShape) string {
	return fmt.Sprintf("%s, %s, %s memory, %s/h", shapeText(s.GPUType, s.GPUCount), formatMilliCPU(s.CPUMilli),
		formatMiB(s.MemoryMiB), money.Format(s.PricePerHour.ApplicableFen))
}

// shapeText names count GPUs of a type, or no-GPU mode.
func shapeText(typ string, count int) string {
	if count == 0 {
		return "no GPU (" + typ + " host)"
	}
	return fmt.Sprintf("%d × %s", count, typ)
}

// opStep is an operation's step, as the CLI reads it.
type opStep string

func (s opStep) finished() bool { return s == "done" || s == "rolled_back" }

// printOperationLine says in one line what an operation does and where it
// stands.
func (a *app) printOperationLine(w io.Writer, op apiv1.Operation) {
	fmt.Fprintf(w, "%s %s (%s): %s → %s, %s\n", capitalise(op.Kind), op.InstanceID, op.ID,
		orDash(op.From.HostID), operationTarget(op), stepText(op))
}

func capitalise(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// operationTarget names where an operation goes.
func operationTarget(op apiv1.Operation) string {
	where := op.To.HostID
	if where == "" {
		where = "any host"
		if op.To.Zone != "" {
			where = "zone " + op.To.Zone
		}
	}
	return shapeText(op.To.GPUType, op.To.GPUCount) + " on " + where
}

// stepText is an operation's step with its progress and message.
func stepText(op apiv1.Operation) string {
	s := op.Step
	if op.Passes > 0 || op.BytesMoved > 0 {
		s += fmt.Sprintf(" (%d passes, %s copied)", op.Passes, formatBytes(op.BytesMoved))
	}
	if op.Message != "" {
		s += ": " + op.Message
	}
	return s
}

// formatBytes renders a byte count in binary units: 1536 → "1.5 KiB".
func formatBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit && exp < 5; m /= unit {
		div *= unit
		exp++
	}
	whole, frac := n/div, (n%div)*10/div
	return fmt.Sprintf("%d.%d %ciB", whole, frac, "KMGTPE"[exp])
}

// waitOperation polls an instance's operation until it is done or rolled
// back, until ctx (which carries the --wait-timeout deadline) ends; step
// changes go to stderr. A rollback is an error carrying the reason.
// Network errors and an unavailable server are retried until the deadline.
func (a *app) waitOperation(ctx context.Context, cmd *cobra.Command, c *client.Client, op apiv1.Operation, timeout time.Duration) (apiv1.Operation, error) {
	last := op
	shown := ""
	reported := false
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		if opStep(last.Step).finished() {
			if last.Step == "rolled_back" {
				return last, gpurent.Errorf(gpurent.CodeConflict, "%s of %s rolled back (operation %s): %s",
					last.Kind, last.InstanceID, last.ID, orDash(last.Message))
			}
			return last, nil
		}
		select {
		case <-ctx.Done():
			if err := cmd.Context().Err(); err != nil {
				return last, err
			}
			return last, gpurent.Errorf(gpurent.CodeUnavailable,
				"gave up waiting for operation %s after %s (step: %s); it goes on on the server: check with `gpurent operations %s`",
				last.ID, timeout, last.Step, last.InstanceID)
		case <-timer.C:
		}
		got, err := c.Operation(ctx, op.InstanceID, op.ID)
		switch {
		case err == nil:
			last = got
			if line := stepText(got); line != shown {
				shown = line
				fmt.Fprintf(cmd.ErrOrStderr(), "%s: %s\n", got.ID, line)
			}
		case ctx.Err() != nil:
			// The deadline passed during the call; the loop reports it.
		case gpurent.IsCode(err, gpurent.CodeUnavailable):
			if !reported {
				fmt.Fprintf(cmd.ErrOrStderr(), "warning: %s; still trying\n", errorText(err))
				reported = true
			}
		default:
			return last, err
		}
		timer.Reset(a.env.PollInterval)
	}
}

func (a *app) operationsCmd() *cobra.Command {
	var cn conn
	cmd := &cobra.Command{
		Use:     "operations ID",
		Aliases: []string{"ops"},
		Short:   "List an instance's upgrades, migrations and moved or queued starts",
		Example: "  gpurent operations ins-xxxx\n  gpurent operations ins-xxxx -o json",
		Args:    argsError(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, ids []string) error {
			c, asJSON, err := a.connectFor(cmd, &cn)
			if err != nil {
				return err
			}
			list, err := c.Operations(cmd.Context(), ids[0])
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(out(cmd), list)
			}
			if len(list.Operations) == 0 {
				fmt.Fprintf(out(cmd), "No operations on %s. Move it with: gpurent upgrade %s --gpu TYPE\n", ids[0], ids[0])
				return nil
			}
			t := newTable(out(cmd), "ID", "KIND", "STEP", "FROM", "TO", "COPIED", "CREATED", "FINISHED", "MESSAGE")
			for _, op := range list.Operations {
				copied := "-"
				if op.Passes > 0 || op.BytesMoved > 0 {
					copied = fmt.Sprintf("%s in %d passes", formatBytes(op.BytesMoved), op.Passes)
				}
				finished := "-"
				if op.FinishedAt != nil {
					finished = formatTime(*op.FinishedAt, a.env.Location)
				}
				t.row(op.ID, op.Kind, op.Step, orDash(op.From.HostID), operationTarget(op), copied,
					formatTime(op.CreatedAt, a.env.Location), finished, orDash(op.Message))
			}
			return t.flush()
		},
	}
	cn.addFlags(cmd, true)
	return cmd
}

func (a *app) queueCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "queue",
		Short: "Manage queued starts (see `gpurent start --queue`)",
	}
	parent(cmd)
	var cn conn
	cancel := &cobra.Command{
		Use:     "cancel ID",
		Short:   "Cancel an instance's queued start; it stays stopped",
		Example: "  gpurent queue cancel ins-xxxx",
		Args:    argsError(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, ids []string) error {
			c, asJSON, err := a.connectFor(cmd, &cn)
			if err != nil {
				return err
			}
			op, err := c.CancelQueuedStart(cmd.Context(), ids[0])
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(out(cmd), op)
			}
			fmt.Fprintf(out(cmd), "Canceled the queued start of %s (%s); it stays stopped.\n", ids[0], op.ID)
			return nil
		},
	}
	cn.addFlags(cancel, true)
	cmd.AddCommand(cancel)
	return cmd
}

func (a *app) startCmd() *cobra.Command {
	var cn conn
	var wf waitFlags
	var opts apiv1.StartRequest
	cmd := &cobra.Command{
		Use:   "start ID... [--move] [--queue]",
		Short: "Start stopped instances",
		Long: "Starts stopped instances on their hosts. When a host has no free GPU for one, --move\n" +
			"starts it on another host (its data is copied there first) and --queue waits until GPUs\n" +
			"free up and starts it then (with --move too: on whichever host frees up first). Without\n" +
			"them, a full host is an error. Cancel a queued start with `gpurent queue cancel ID`.",
		Example: "  gpurent start ins-xxxx --wait\n" +
			"  gpurent start ins-xxxx --move            # another host if its own is full\n" +
			"  gpurent start ins-xxxx --queue           # wait for its own host's GPUs",
		Args: argsError(cobra.MinimumNArgs(1)),
		RunE: func(cmd *cobra.Command, ids []string) error {
			c, asJSON, err := a.connectFor(cmd, &cn)
			if err != nil {
				return err
			}
			return actOnEach(a, cmd, ids, wf, asJSON, "started", "running",
				func(id string) (apiv1.StartResult, error) {
					if opts.Move || opts.Queue {
						return c.StartInstanceWith(cmd.Context(), id, opts, "")
					}
					inst, err := c.StartInstance(cmd.Context(), id)
					return apiv1.StartResult{Instance: inst}, err
				},
				func(ctx context.Context, id string, res apiv1.StartResult) (apiv1.StartResult, error) {
					if op := res.Operation; op != nil {
						// A moved or queued start runs once its operation is done.
						done, err := a.waitOperation(ctx, cmd, c, *op, wf.timeout)
						res.Operation = &done
						if err != nil {
							return res, err
						}
					}
					inst, err := a.poll(ctx, cmd, c, id, wf.timeout, untilRunning)
					res.Instance = inst
					return res, err
				},
				[]string{"ID", "NAME", "STATE", "OPERATION"},
				func(id string, res apiv1.StartResult) []string {
					opText := "-"
					if op := res.Operation; op != nil {
						opText = op.ID + " " + stepText(*op)
					}
					return []string{firstNonEmpty(res.ID, id), orDash(res.Name), orDash(res.State), opText}
				})
		},
	}
	cn.addFlags(cmd, true)
	wf.add(cmd, "running")
	cmd.Flags().BoolVar(&opts.Move, "move", false, "when the host has no free GPU, start on another host (the data is copied)")
	cmd.Flags().BoolVar(&opts.Queue, "queue", false, "when no GPU is free, wait for one and start then")
	return cmd
}
