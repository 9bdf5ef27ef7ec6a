package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/apiv1"
	"github.com/gpurent/gpurent/internal/client"
)

// defaultWaitTimeout bounds --wait.
const defaultWaitTimeout = 10 * time.Minute

// waitFlags are the --wait and --wait-timeout flags.
type waitFlags struct {
	wait    bool
	timeout time.Duration
}

func (w *waitFlags) add(cmd *cobra.Command, what string) {
	cmd.Flags().BoolVar(&w.wait, "wait", false, "wait until the instance is "+what)
	cmd.Flags().DurationVar(&w.timeout, "wait-timeout", defaultWaitTimeout, "how long --wait waits")
}

func (a *app) rentCmd() *cobra.Command {
	var cn conn
	var wf waitFlags
	var req apiv1.CreateInstanceRequest
	var key, startup string
	cmd := &cobra.Command{
		Use:   "rent --gpu TYPE --image IMAGE [--count N]",
		Short: "Rent GPUs: create an instance",
		Example: "  gpurent rent --gpu h100-80g-sxm --count 8 --image pytorch/pytorch:2.4.0-cuda12.4-cudnn9-runtime --wait\n" +
			"  gpurent rent --gpu rtx4090-24g --image ubuntu:24.04 --plan daily --zone cd-tianfu-a --volume-gib 200\n" +
			"  gpurent rent --gpu a100-80g-sxm --no-gpu --image ubuntu:24.04   # CPU only, 0.10 CNY/h, to prepare data\n" +
			"  gpurent rent --gpu h100-80g-sxm --count 2 --degraded --image ubuntu:24.04   # slower cards at a lower price (see `gpurent gpus`)\n" +
			"  gpurent rent --gpu rtx4090-24g --image ubuntu:24.04 --cmd 'python -m http.server 8888'   # the instance stays up when it exits",
		Args: argsError(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			asJSON, err := cn.json()
			if err != nil {
				return err
			}
			if req.GPUType == "" || req.Image == "" {
				return usageError{err: errors.New("--gpu and --image are required (see `gpurent gpus` for the types)")}
			}
			if cmd.Flags().Changed("cmd") {
				req.StartupCommand = &startup // '' is none, unlike leaving --cmd out
			}
			if req.NoGPU {
				if cmd.Flags().Changed("count") {
					return usageError{err: errors.New("--no-gpu rents no GPUs: leave --count out")}
				}
				req.GPUCount = 0
			}
			if req.Degraded {
				switch {
				case req.NoGPU:
					return usageError{err: errors.New("--degraded rents GPUs listed as degraded: it cannot go with --no-gpu")}
				case req.Plan != "" && req.Plan != "hourly":
					return usageError{err: errors.New("--degraded GPUs are billed by the second at their price share: leave --plan out or hourly")}
				}
			}
			c, err := a.connect(cmd, &cn)
			if err != nil {
				return err
			}
			inst, err := c.CreateInstance(cmd.Context(), req, key)
			if err != nil {
				return err
			}
			if wf.wait {
				fmt.Fprintf(cmd.ErrOrStderr(), "Instance %s created; waiting for it to run...\n", inst.ID)
				inst, err = a.waitFor(cmd, c, inst.ID, wf.timeout, untilRunning)
				if err != nil {
					return err
				}
			}
			if asJSON {
				return writeJSON(out(cmd), inst)
			}
			return a.printInstance(cmd, inst)
		},
	}
	cn.addFlags(cmd, true)
	wf.add(cmd, "running (or failed)")
	f := cmd.Flags()
	f.StringVar(&req.GPUType, "gpu", "", "GPU type, e.g. h100-80g-sxm (required)")
	f.IntVar(&req.GPUCount, "count", 1, "number of GPUs")
	f.BoolVar(&req.NoGPU, "no-gpu", false, "no-GPU mode: no GPUs, CPU and memory only, at the token price (hourly plan)")
	f.BoolVar(&req.Degraded, "degraded", false, "rent only GPUs listed as degraded: slower than their type's fleet median, billed at a share of the list price scaled by their measured speed (hourly plan; `gpurent gpus` shows what is free)")
	f.StringVar(&req.Image, "image", "", "container image: a name from `gpurent images` (the operator's catalog) or an image reference (required)")
	f.StringVar(&startup, "cmd", "", "startup command, a shell line run with /bin/sh -c when the instance starts ('' runs none; default: the image's own entrypoint and command); the instance keeps running when it exits")
	f.StringVar(&req.Name, "name", "", "instance name (default: chosen by the server)")
	f.StringVar(&req.Zone, "zone", "", "zone (default: any)")
	f.StringVar(&req.Plan, "plan", "", "billing plan: hourly, daily, weekly or monthly (default hourly)")
	f.IntVar(&req.VolumeGiB, "volume-gib", 0, "data volume size in GiB (default: the server's)")
	f.StringVar(&key, "idempotency-key", "", "key that makes retries of this rent create one instance (default: random)")
	return cmd
}

func (a *app) lsCmd() *cobra.Command {
	var cn conn
	var all bool
	cmd := &cobra.Command{
		Use:     "ls",
		Aliases: []string{"list"},
		Short:   "List your instances",
		Args:    argsError(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, asJSON, err := a.connectFor(cmd, &cn)
			if err != nil {
				return err
			}
			list, err := c.ListInstances(cmd.Context(), all)
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(out(cmd), list)
			}
			if len(list.Instances) == 0 {
				fmt.Fprintln(out(cmd), "No instances. Rent GPUs with: gpurent rent --gpu TYPE --image IMAGE")
				return nil
			}
			t := newTable(out(cmd), "ID", "NAME", "STATE", "GPUS", "ZONE", "HOST", "PLAN", "CREATED")
			for _, in := range list.Instances {
				t.row(in.ID, orDash(in.Name), in.State, gpuSummary(in), orDash(in.Zone),
					orDash(firstNonEmpty(in.HostName, in.HostID)), orDash(in.Plan),
					formatTime(in.CreatedAt, a.env.Location))
			}
			return t.flush()
		},
	}
	cn.addFlags(cmd, true)
	cmd.Flags().BoolVarP(&all, "all", "a", false, "include deleted instances")
	return cmd
}

func gpuSummary(in apiv1.Instance) string {
	if in.GPUCount == 0 {
		return "no GPU (" + in.GPUType + " host)"
	}
	return fmt.Sprintf("%d × %s", in.GPUCount, in.GPUType)
}

func (a *app) showCmd() *cobra.Command {
	var cn conn
	cmd := &cobra.Command{
		Use:   "show ID...",
		Short: "Show instances in detail, with their history",
		Args:  argsError(cobra.MinimumNArgs(1)),
		RunE: func(cmd *cobra.Command, ids []string) error {
			c, asJSON, err := a.connectFor(cmd, &cn)
			if err != nil {
				return err
			}
			return a.each(cmd, ids, "instances", "shown", func(id string) error {
				inst, err := c.GetInstance(cmd.Context(), id)
				if err != nil {
					return err
				}
				if asJSON {
					return writeJSON(out(cmd), inst)
				}
				if id != ids[0] {
					fmt.Fprintln(out(cmd))
				}
				if err := a.printInstance(cmd, inst); err != nil {
					return err
				}
				// How to reach it, when the control plane runs the gateway.
				if acc, err := c.InstanceAccess(cmd.Context(), inst.ID); err == nil {
					fmt.Fprintf(out(cmd), "\nSSH:       %s\nHost key:  %s (the gateway's; `gpurent ssh %s` pins it)\n"+
						"Files:     scp -P %d FILE %s@%s:/root/data/   ·   sftp -P %d %s@%s\n"+
						"Ports:     gpurent port-forward %s 8888   ·   gpurent open %s 8888\n",
						acc.SSHCommand, acc.HostKeyFingerprint, inst.ID, acc.Port, inst.ID, acc.Host, acc.Port, inst.ID, acc.Host,
						inst.ID, inst.ID)
				}
				return nil
			})
		},
	}
	cn.addFlags(cmd, true)
	return cmd
}

// printInstance writes an instance in detail: state with reason, where it
// runs, on which runtime, its GPUs, volume and history.
func (a *app) printInstance(cmd *cobra.Command, in apiv1.Instance) error {
	w := out(cmd)
	p := newPairs(w)
	p.pair("ID", in.ID)
	p.pair("Name", orDash(in.Name))
	state := in.State
	if in.StateReason != "" {
		state += " (" + in.StateReason + ")"
	}
	p.pair("State", state)
	p.pair("Image", in.Image)
	p.pair("Startup command", startupLabel(in.StartupCommand))
	if in.Startup != nil {
		p.pair("", startupStatusLine(in.Startup))
	}
	p.pair("GPUs", gpuSummary(in))
	for _, g := range in.GPUs {
		p.pair("", g)
	}
	p.pair("Zone", orDash(in.Zone))
	host := orDash(in.HostID)
	if in.HostName != "" {
		host = in.HostName + " (" + in.HostID + ")"
	}
	p.pair("Host", host)
	p.pair("Runtime", runtimeLabel(in.Runtime))
	p.pair("Plan", orDash(in.Plan))
	p.pair("CPU", formatMilliCPU(in.CPUMilli))
	p.pair("Memory", formatMiB(in.MemoryMiB))
	if in.Volume != nil {
		p.pair("Volume", fmt.Sprintf("%s, %d GiB, mounted at %s", in.Volume.ID, in.Volume.SizeGiB, in.Volume.MountPath))
	} else {
		p.pair("Volume", "-")
	}
	p.pair("Created", formatTime(in.CreatedAt, a.env.Location))
	p.pair("Updated", formatTime(in.UpdatedAt, a.env.Location))
	if err := p.flush(); err != nil {
		return err
	}
	if in.Runtime == "process" {
		fmt.Fprintln(w, "\nWARNING: this instance runs on the demo-only \"process\" runtime: no container,\n"+
			"no isolation from the host or other tenants, no GPU pinning. Never use it for real workloads.")
	}
	if len(in.Events) > 0 {
		fmt.Fprintln(w, "\nEvents:")
		t := newTable(w, "  TIME", "KIND", "MESSAGE")
		for _, e := range in.Events {
			t.row("  "+formatTime(e.At, a.env.Location), e.Kind, e.Message)
		}
		return t.flush()
	}
	return nil
}

// formatMilliCPU renders CPU millicores as cores: 16000 → "16 cores",
// 1500 → "1.5 cores".
func formatMilliCPU(m int64) string {
	if m <= 0 {
		return "-"
	}
	s := fmt.Sprintf("%d.%03d", m/1000, m%1000)
	s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	return s + " cores"
}

// formatMiB renders MiB as GiB when whole, else MiB.
func formatMiB(m int64) string {
	switch {
	case m <= 0:
		return "-"
	case m%1024 == 0:
		return fmt.Sprintf("%d GiB", m/1024)
	default:
		return fmt.Sprintf("%d MiB", m)
	}
}

// instanceAction is stop, start or rm: one API call per id, then an
// optional wait for the state it leads to.
type instanceAction struct {
	use, short, done string
	call             func(c *client.Client, ctx context.Context, id string) (apiv1.Instance, error)
	until            func(apiv1.Instance) (bool, error)
	waitWhat         string
	// confirm asks before acting on an instance that holds a data volume
	// (rm deletes it), unless --yes.
	confirm bool
}

func (a *app) stopCmd() *cobra.Command {
	return a.actionCmd(instanceAction{
		use: "stop ID...", short: "Stop instances (their volumes are kept)", done: "stopped",
		call: (*client.Client).StopInstance, until: untilStopped, waitWhat: "stopped",
	})
}

func (a *app) rmCmd() *cobra.Command {
	return a.actionCmd(instanceAction{
		use: "rm ID...", short: "Delete instances and their volumes", done: "deleted",
		call: (*client.Client).DeleteInstance, until: untilDeleted, waitWhat: "deleted", confirm: true,
	})
}

func (a *app) actionCmd(act instanceAction) *cobra.Command {
	var cn conn
	var wf waitFlags
	var yes bool
	cmd := &cobra.Command{
		Use:   act.use,
		Short: act.short,
		Args:  argsError(cobra.MinimumNArgs(1)),
		RunE: func(cmd *cobra.Command, ids []string) error {
			c, asJSON, err := a.connectFor(cmd, &cn)
			if err != nil {
				return err
			}
			if act.confirm && !yes {
				if ids, err = confirmEach(cmd, c, ids); err != nil {
					return err
				}
			}
			return actOnEach(a, cmd, ids, wf, asJSON, act.done, act.waitWhat,
				func(id string) (apiv1.Instance, error) { return act.call(c, cmd.Context(), id) },
				func(ctx context.Context, id string, _ apiv1.Instance) (apiv1.Instance, error) {
					return a.poll(ctx, cmd, c, id, wf.timeout, act.until)
				},
				[]string{"ID", "NAME", "STATE"},
				func(id string, inst apiv1.Instance) []string {
					return []string{firstNonEmpty(inst.ID, id), orDash(inst.Name), orDash(inst.State)}
				})
		},
	}
	cn.addFlags(cmd, true)
	wf.add(cmd, act.waitWhat)
	if act.confirm {
		cmd.Flags().BoolVarP(&yes, "yes", "y", false, "do not ask for confirmation (needed when standard input is not a terminal)")
	}
	return cmd
}

// confirmEach asks for each instance that holds a data volume whether to
// delete it (on a terminal; without one it refuses), and answers the ids
// to go on with. An id it cannot read is kept: the action reports it.
func confirmEach(cmd *cobra.Command, c *client.Client, ids []string) ([]string, error) {
	in := newInput(cmd)
	keep := make([]string, 0, len(ids))
	declined := 0
	for _, id := range ids {
		inst, err := c.GetInstance(cmd.Context(), id)
		if err != nil || inst.Volume == nil || inst.State == "deleting" || inst.State == "deleted" {
			keep = append(keep, id)
			continue
		}
		ok, err := confirmDelete(in, inst)
		if err != nil {
			return nil, err
		}
		if !ok {
			fmt.Fprintf(cmd.ErrOrStderr(), "%s: kept (not confirmed)\n", id)
			declined++
			continue
		}
		keep = append(keep, id)
	}
	if len(keep) == 0 {
		return nil, gpurent.Errorf(gpurent.CodeInvalid, "nothing deleted: %d not confirmed", declined)
	}
	return keep, nil
}

// actOnEach asks call for every id first, so that they all progress on the
// server at once; with --wait it then waits for each (wait answers the
// result as it ended); and it prints what it got: JSON objects, or a table
// of columns.
func actOnEach[T any](a *app, cmd *cobra.Command, ids []string, wf waitFlags, asJSON bool, done, waitWhat string,
	call func(id string) (T, error), wait func(ctx context.Context, id string, res T) (T, error),
	columns []string, row func(id string, res T) []string) error {
	results := make(map[string]T, len(ids))
	err := a.each(cmd, ids, "instances", done, func(id string) error {
		res, err := call(id)
		if err == nil {
			results[id] = res
		}
		return err
	})
	if wf.wait {
		ctx, cancel := context.WithTimeout(cmd.Context(), wf.timeout)
		defer cancel()
		waited := make([]string, 0, len(results))
		for _, id := range ids {
			if _, ok := results[id]; ok {
				waited = append(waited, id)
			}
		}
		waitErr := a.each(cmd, waited, "instances", waitWhat, func(id string) error {
			res, err := wait(ctx, id, results[id])
			results[id] = res
			return err
		})
		err = errors.Join(err, waitErr)
	}
	if asJSON {
		for _, id := range ids {
			if res, ok := results[id]; ok {
				if werr := writeJSON(out(cmd), res); werr != nil {
					return werr
				}
			}
		}
		return err
	}
	if len(results) > 0 {
		t := newTable(out(cmd), columns...)
		for _, id := range ids {
			if res, ok := results[id]; ok {
				t.row(row(id, res)...)
			}
		}
		if ferr := t.flush(); ferr != nil {
			return ferr
		}
	}
	return err
}

// each runs fn for every id. With one id its error is returned as is; with
// several, each failure is reported on stderr, the others still run, and a
// summary error carrying the first failure's code is returned.
func (a *app) each(cmd *cobra.Command, ids []string, noun, done string, fn func(id string) error) error {
	if len(ids) == 1 {
		return fn(ids[0])
	}
	var first error
	failed := 0
	for _, id := range ids {
		if err := fn(id); err != nil {
			if errors.Is(err, context.Canceled) {
				return err
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "error: %s: %s\n", id, errorText(err))
			failed++
			if first == nil {
				first = err
			}
		}
	}
	if first == nil {
		return nil
	}
	return gpurent.Errorf(gpurent.ErrorCode(first), "%d of %d %s could not be %s", failed, len(ids), noun, done)
}

// waitFor polls instance id until until says it is done, for at most timeout.
func (a *app) waitFor(cmd *cobra.Command, c *client.Client, id string, timeout time.Duration,
	until func(apiv1.Instance) (bool, error)) (apiv1.Instance, error) {
	ctx, cancel := context.WithTimeout(cmd.Context(), timeout)
	defer cancel()
	return a.poll(ctx, cmd, c, id, timeout, until)
}

// poll is waitFor under a context that carries the deadline. A network
// error or an unavailable server is retried until the deadline; progress
// goes to stderr.
func (a *app) poll(ctx context.Context, cmd *cobra.Command, c *client.Client, id string, timeout time.Duration,
	until func(apiv1.Instance) (bool, error)) (apiv1.Instance, error) {
	var last apiv1.Instance
	lastState := ""
	reported := false
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			if err := cmd.Context().Err(); err != nil {
				return last, err
			}
			now := lastState
			if now == "" {
				now = "unknown"
			}
			return last, gpurent.Errorf(gpurent.CodeUnavailable,
				"gave up waiting for instance %s after %s (state: %s); it may still get there: check with `gpurent show %s`",
				id, timeout, now, id)
		case <-timer.C:
		}
		inst, err := c.GetInstance(ctx, id)
		switch {
		case err == nil:
			last = inst
			if inst.State != lastState {
				lastState = inst.State
				fmt.Fprintf(cmd.ErrOrStderr(), "%s: %s\n", id, inst.State)
			}
			done, derr := until(inst)
			if derr != nil || done {
				return inst, derr
			}
		case gpurent.IsCode(err, gpurent.CodeNotFound):
			// Only rm waits for an instance to vanish; it may be purged.
			done, derr := until(apiv1.Instance{ID: id, State: string(gpurent.StateDeleted)})
			if done {
				last.ID, last.State = id, string(gpurent.StateDeleted)
				return last, derr
			}
			return last, err
		case ctx.Err() != nil:
			// The deadline passed during the call; the loop reports it.
		case gpurent.IsCode(err, gpurent.CodeUnavailable): // network error or 503
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

func untilRunning(in apiv1.Instance) (bool, error) {
	switch gpurent.InstanceState(in.State) {
	case gpurent.StateRunning:
		return true, nil
	case gpurent.StateFailed, gpurent.StateStopped, gpurent.StateDeleting, gpurent.StateDeleted:
		return true, failedState(in, gpurent.StateRunning)
	}
	return false, nil
}

func untilStopped(in apiv1.Instance) (bool, error) {
	switch gpurent.InstanceState(in.State) {
	case gpurent.StateStopped:
		return true, nil
	case gpurent.StateFailed, gpurent.StateDeleting, gpurent.StateDeleted:
		return true, failedState(in, gpurent.StateStopped)
	}
	return false, nil
}

func untilDeleted(in apiv1.Instance) (bool, error) {
	return gpurent.InstanceState(in.State) == gpurent.StateDeleted, nil
}

func failedState(in apiv1.Instance, want gpurent.InstanceState) error {
	msg := fmt.Sprintf("instance %s is %s, not %s", in.ID, in.State, want)
	if in.StateReason != "" {
		msg += ": " + in.StateReason
	}
	return gpurent.Errorf(gpurent.CodeConflict, "%s", msg)
}
