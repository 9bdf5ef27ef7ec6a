package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/gpurent/gpurent/internal/apiv1"
	"github.com/gpurent/gpurent/internal/benchjudge"
	"github.com/gpurent/gpurent/internal/client"
	"github.com/gpurent/gpurent/internal/transparency"
)

// This file holds the compute transparency commands: the public report, a
// customer's verify runs, and the operators' benchmark runs,
// certifications and settings, and an offline judge of recorded results.

// benchPoll is how often --wait asks for a job's state.
const benchPoll = 2 * time.Second

func (a *app) transparencyCmd() *cobra.Command {
	var (
		cn     conn
		asCSV  bool
		typeID string
		lang   string
	)
	cmd := &cobra.Command{
		Use:   "transparency [--type T] [--csv]",
		Short: "The public benchmark report: every GPU measured against its spec and its peers",
		Long: "Every GPU of the fleet is benchmarked when idle (BF16/FP8 GEMM, memory and host copies, ResNet-50,\n" +
			"NCCL) and judged against the fleet median of its type. This prints the report anyone can read at\n" +
			"/transparency, without logging in; --csv prints the CSV download.",
		Args: argsError(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if lang != "en" && lang != "zh" {
				return usageError{err: fmt.Errorf("--lang must be en or zh, got %q", lang)}
			}
			c, asJSON, err := a.connectFor(cmd, &cn)
			if err != nil {
				return err
			}
			if asCSV {
				b, err := c.TransparencyCSV(cmd.Context())
				if err != nil {
					return err
				}
				_, err = out(cmd).Write(b)
				return err
			}
			rep, err := c.Transparency(cmd.Context())
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(out(cmd), rep)
			}
			return a.printTransparency(out(cmd), rep, typeID, lang, c.Server())
		},
	}
	cmd.Flags().BoolVar(&asCSV, "csv", false, "print the report as CSV (one row per GPU and probe)")
	cmd.Flags().StringVar(&typeID, "type", "", "only this GPU type")
	cmd.Flags().StringVar(&lang, "lang", "en", "probe names in en or zh")
	cn.addFlags(cmd, true)
	return cmd
}

func (a *app) printTransparency(w io.Writer, rep apiv1.Transparency, typeID, lang, server string) error {
	if rep.Synthetic {
		fmt.Fprintln(w, "DEMO DATA: these figures come from simulated GPUs, not from measurements.")
		fmt.Fprintln(w)
	}
	shown := 0
	for _, t := range rep.Types {
		if typeID != "" && t.ID != typeID {
			continue
		}
		shown++
		fmt.Fprintf(w, "%s (%s): %d GPUs, %d certified, %d warn, %d degraded, %d delisted, %d to re-run, %d not yet benchmarked\n",
			t.Name, t.ID, t.GPUs, t.Certified, t.Warn, t.Degraded, t.Delisted, t.Pending, t.Uncertified)
		tb := newTable(w, "  PROBE", "FLEET MEDIAN", "CARDS MIN–MAX", "PASS FROM", "SPEC (DENSE)", "OF SPEC")
		for _, p := range t.Probes {
			spec, of := "-", "-"
			if p.Spec != nil {
				spec = formatFigure(p.Spec.Value, p.Unit)
				of = formatPercent(p.SpecRatio)
			}
			label := transparency.ProbeLabel(p.Probe, lang)
			if p.GPUs > 1 {
				label += fmt.Sprintf(" (%d GPUs)", p.GPUs)
			}
			tb.row("  "+label, formatFigure(p.FleetMedian, p.Unit), fmt.Sprintf("%s–%s (%d)", formatNumber(p.FleetMin, p.Unit),
				formatNumber(p.FleetMax, p.Unit), p.Cards), formatFigure(p.BandPass, p.Unit), spec, of)
		}
		if err := tb.flush(); err != nil {
			return err
		}
		fmt.Fprintln(w)
	}
	if typeID != "" && shown == 0 {
		return fmt.Errorf("the report has no GPU type %q", typeID)
	}
	if len(rep.Delisted) > 0 {
		fmt.Fprintln(w, "Delisted or degraded:")
		tb := newTable(w, "  GPU", "TYPE", "HOST", "STATE", "PRICE", "WHY")
		for _, d := range rep.Delisted {
			tb.row("  "+d.Hash, d.Type, d.Host, d.State, priceShare(d.PricePermille, d.State), d.Reason)
		}
		if err := tb.flush(); err != nil {
			return err
		}
		fmt.Fprintln(w)
	}
	for _, n := range rep.Notes {
		fmt.Fprintln(w, "Note: "+n)
	}
	fmt.Fprintf(w, "Every host and GPU, with history: %s/transparency (CSV: gpurent transparency --csv)\n", server)
	return nil
}

func priceShare(permille int, state string) string {
	if state == "delisted" {
		return "not rented"
	}
	if permille <= 0 || permille >= 1000 {
		return "100%"
	}
	return fmt.Sprintf("%d.%d%%", permille/10, permille%10)
}

// formatNumber shows a figure with the precision its unit deserves.
func formatNumber(v float64, unit string) string {
	switch unit {
	case "TFLOPS":
		return strconv.FormatFloat(v, 'f', 1, 64)
	case "img/s":
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	if v >= 100 {
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return strconv.FormatFloat(v, 'f', 1, 64)
}

// orZeroDash shows a telemetry figure, "-" when it was not measured.
func orZeroDash(v float64) string {
	if !(v > 0) {
		return "-"
	}
	return strconv.FormatFloat(v, 'f', 0, 64)
}

func formatFigure(v float64, unit string) string {
	if !(v > 0) {
		return "-"
	}
	return formatNumber(v, unit) + " " + unit
}

func formatPercent(r float64) string {
	if !(r > 0) {
		return "-"
	}
	return strconv.FormatFloat(r*100, 'f', 1, 64) + "%"
}

func (a *app) verifyCmd() *cobra.Command {
	var (
		cn      conn
		tier    string
		wait    bool
		timeout time.Duration
		list    bool
		key     string
	)
	cmd := &cobra.Command{
		Use:   "verify ID [--tier t1|t2] [--wait]",
		Short: "Benchmark your instance's GPUs and compare them with the fleet median of their type",
		Long: "Runs the platform's benchmark suite (the same programs every idle GPU is certified with) on the GPUs\n" +
			"of your running instance, while it runs, and judges each GPU against the fleet median of its type:\n" +
			"PASS at 0.95 or more, WARN from 0.90, FAIL below 0.90 after a re-run. Stop your own GPU work first:\n" +
			"it shares the GPUs and slows the figures. A confirmed FAIL opens an incident (a degraded GPU\n" +
			"counts as down) and, with failover auto, moves you to healthy GPUs. t1 takes about 5 minutes, t2\n" +
			"(the full certification tier) about 30.",
		Example: "  gpurent verify i-xxxx --wait\n  gpurent verify i-xxxx --list",
		Args:    argsError(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			if tier != "t1" && tier != "t2" {
				return usageError{err: fmt.Errorf("--tier must be t1 or t2, got %q", tier)}
			}
			c, asJSON, err := a.connectFor(cmd, &cn)
			if err != nil {
				return err
			}
			if list {
				runs, err := c.Verifies(cmd.Context(), args[0])
				if err != nil {
					return err
				}
				if asJSON {
					return writeJSON(out(cmd), runs)
				}
				return a.printBenchJobs(out(cmd), runs)
			}
			j, err := c.Verify(cmd.Context(), args[0], tier, key)
			if err != nil {
				return err
			}
			if wait {
				if j, err = waitBenchJob(cmd.Context(), c, j.ID, timeout, cmd.ErrOrStderr()); err != nil {
					return err
				}
			}
			if asJSON {
				return writeJSON(out(cmd), j)
			}
			return a.printBenchJob(out(cmd), j, wait)
		},
	}
	cmd.Flags().StringVar(&tier, "tier", "t1", "t1 (readiness, about 5 min) or t2 (full certification, about 30 min)")
	cmd.Flags().BoolVar(&wait, "wait", false, "wait for the results")
	cmd.Flags().DurationVar(&timeout, "wait-timeout", 2*time.Hour, "how long --wait waits")
	cmd.Flags().BoolVar(&list, "list", false, "list the instance's verify runs instead")
	cmd.Flags().StringVar(&key, "idempotency-key", "", "retry-safe key (default: a random one)")
	cn.addFlags(cmd, true)
	return cmd
}

// waitBenchJob polls a job until it ends, following a verify's automatic
// re-run, and returns the last job.
func waitBenchJob(ctx context.Context, c *client.Client, id string, timeout time.Duration, progress io.Writer) (apiv1.BenchJob, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	last := ""
	for {
		j, err := c.BenchJob(ctx, id)
		if err != nil {
			if ctx.Err() != nil {
				return j, fmt.Errorf("job %s still %s after %s: gpurent verify %s --list shows it later", id, last, timeout, j.InstanceID)
			}
			return j, err
		}
		if j.State != last {
			fmt.Fprintf(progress, "%s: %s\n", j.ID, j.State)
			last = j.State
		}
		switch j.State {
		case "done", "failed", "canceled":
			if j.State == "done" && j.InstanceID != "" && hasProvisional(j) {
				// A provisional FAIL is re-run at once: follow the re-run.
				runs, err := c.Verifies(ctx, j.InstanceID)
				if err == nil && len(runs) > 0 && runs[0].ID != j.ID {
					fmt.Fprintf(progress, "a FAIL is provisional until a re-run confirms it: re-run %s\n", runs[0].ID)
					id, last = runs[0].ID, ""
					continue
				}
			}
			return j, nil
		}
		select {
		case <-ctx.Done():
			return j, fmt.Errorf("job %s still %s after %s", id, j.State, timeout)
		case <-time.After(benchPoll):
		}
	}
}

func hasProvisional(j apiv1.BenchJob) bool {
	for _, r := range j.Results {
		if r.Provisional {
			return true
		}
	}
	return false
}

func (a *app) printBenchJob(w io.Writer, j apiv1.BenchJob, waited bool) error {
	p := newPairs(w)
	p.pair("Job", j.ID)
	if j.InstanceID != "" {
		p.pair("Instance", j.InstanceID)
	}
	p.pair("GPUs", fmt.Sprintf("%d × %s", len(j.GPUs), j.GPUType))
	p.pair("Reason", j.Reason+", tier "+j.Tier)
	p.pair("State", j.State)
	if j.Error != "" {
		p.pair("Error", j.Error)
	}
	if j.EndedAt != nil {
		p.pair("Ended", formatTime(*j.EndedAt, a.env.Location))
	}
	if err := p.flush(); err != nil {
		return err
	}
	if len(j.Results) > 0 {
		fmt.Fprintln(w)
		tb := newTable(w, "GPU", "PROBE", "MEDIAN", "FLEET MEDIAN", "RATIO", "VERDICT", "OF SPEC", "RUNS", "SPREAD", "THROTTLE")
		for _, r := range j.Results {
			verdict := r.Outcome
			if r.Provisional {
				verdict += " (provisional)"
			}
			tb.row(r.GPU, r.Probe, formatFigure(r.Median, r.Unit), formatFigure(r.FleetMedian, r.Unit),
				strconv.FormatFloat(r.FleetRatio, 'f', 3, 64), verdict, formatPercent(r.SpecRatio),
				strconv.Itoa(r.Runs), formatPercent(r.Spread), orDash(strings.Join(r.Throttle, ",")))
		}
		if err := tb.flush(); err != nil {
			return err
		}
	}
	if !waited && (j.State == "queued" || j.State == "running") {
		fmt.Fprintf(w, "\nSee the results with: gpurent certify show %s (or verify --wait next time)\n", j.ID)
	}
	return nil
}

func (a *app) printBenchJobs(w io.Writer, jobs []apiv1.BenchJob) error {
	if len(jobs) == 0 {
		fmt.Fprintln(w, "No benchmark jobs.")
		return nil
	}
	tb := newTable(w, "JOB", "REASON", "TIER", "TYPE", "GPUS", "STATE", "CREATED", "WORST", "ERROR")
	for _, j := range jobs {
		worst := "-"
		for _, r := range j.Results {
			if worst == "-" || outcomeOrder(r.Outcome) < outcomeOrder(worst) {
				worst = r.Outcome
			}
		}
		tb.row(j.ID, j.Reason, j.Tier, j.GPUType, strconv.Itoa(len(j.GPUs)), j.State, formatTime(j.CreatedAt, a.env.Location),
			worst, orDash(j.Error))
	}
	return tb.flush()
}

func outcomeOrder(o string) int {
	switch o {
	case "FAIL":
		return 0
	case "WARN":
		return 1
	case "PASS":
		return 2
	}
	return 3
}

// certifyCmd is the operators' benchmark and certification commands.
func (a *app) certifyCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "certify",
		Short: "Benchmark GPUs and see their certification: run, jobs, show, cancel, status, settings, judge (operators)",
	}
	parent(cmd)
	cmd.AddCommand(a.certifyRunCmd(), a.certifyJobsCmd(), a.certifyShowCmd(), a.certifyCancelCmd(), a.certifyStatusCmd(),
		a.certifySettingsCmd(), a.certifyJudgeCmd())
	return cmd
}

func (a *app) certifyRunCmd() *cobra.Command {
	var (
		cn    conn
		gpus  []string
		hosts []string
		tier  string
		key   string
	)
	cmd := &cobra.Command{
		Use:     "run [--gpu UUID]... [--host H]... [--tier t1|t2]",
		Short:   "Benchmark GPUs now (idle ones only: a rented GPU is skipped and named)",
		Example: "  gpurent certify run --host gpu-node-01\n  gpurent certify run --gpu GPU-5e6f... --tier t1",
		Args:    argsError(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if len(gpus) == 0 && len(hosts) == 0 {
				return usageError{err: errors.New("name GPUs (--gpu) or hosts (--host) to benchmark")}
			}
			if tier != "" && tier != "t1" && tier != "t2" {
				return usageError{err: fmt.Errorf("--tier must be t1 or t2, got %q", tier)}
			}
			c, asJSON, err := a.connectFor(cmd, &cn)
			if err != nil {
				return err
			}
			res, err := c.RunBenchmarks(cmd.Context(), apiv1.BenchRunRequest{GPUs: gpus, Hosts: hosts, Tier: tier}, key)
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(out(cmd), res)
			}
			if err := a.printBenchJobs(out(cmd), res.Jobs); err != nil {
				return err
			}
			for _, s := range res.Skipped {
				fmt.Fprintln(out(cmd), "skipped "+s)
			}
			return nil
		},
	}
	cmd.Flags().StringArrayVar(&gpus, "gpu", nil, "a GPU UUID (repeatable)")
	cmd.Flags().StringArrayVar(&hosts, "host", nil, "a host id or name: every idle GPU on it (repeatable)")
	cmd.Flags().StringVar(&tier, "tier", "", "t1 or t2 (default: the settings' tier)")
	cmd.Flags().StringVar(&key, "idempotency-key", "", "retry-safe key (default: a random one)")
	cn.addFlags(cmd, true)
	return cmd
}

func (a *app) certifyJobsCmd() *cobra.Command {
	var (
		cn       conn
		host     string
		gpu      string
		openOnly bool
		limit    int
	)
	cmd := &cobra.Command{
		Use:   "jobs [--host H] [--gpu UUID] [--open]",
		Short: "List benchmark jobs, newest first",
		Args:  argsError(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if limit < 1 || limit > 500 {
				return usageError{err: fmt.Errorf("--limit must be 1 to 500, got %d", limit)}
			}
			c, asJSON, err := a.connectFor(cmd, &cn)
			if err != nil {
				return err
			}
			jobs, err := c.BenchJobs(cmd.Context(), host, gpu, openOnly, limit)
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(out(cmd), jobs)
			}
			return a.printBenchJobs(out(cmd), jobs)
		},
	}
	cmd.Flags().StringVar(&host, "host", "", "jobs of this host id")
	cmd.Flags().StringVar(&gpu, "gpu", "", "jobs that tested this GPU")
	cmd.Flags().BoolVar(&openOnly, "open", false, "queued and running jobs only")
	cmd.Flags().IntVar(&limit, "limit", 50, "at most this many")
	cn.addFlags(cmd, true)
	return cmd
}

func (a *app) certifyShowCmd() *cobra.Command {
	var (
		cn      conn
		wait    bool
		timeout time.Duration
	)
	cmd := &cobra.Command{
		Use:   "show JOB [--wait]",
		Short: "One benchmark job with its results against the fleet median",
		Args:  argsError(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, asJSON, err := a.connectFor(cmd, &cn)
			if err != nil {
				return err
			}
			var j apiv1.BenchJob
			if wait {
				j, err = waitBenchJob(cmd.Context(), c, args[0], timeout, cmd.ErrOrStderr())
			} else {
				j, err = c.BenchJob(cmd.Context(), args[0])
			}
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(out(cmd), j)
			}
			return a.printBenchJob(out(cmd), j, true)
		},
	}
	cmd.Flags().BoolVar(&wait, "wait", false, "wait until the job ends")
	cmd.Flags().DurationVar(&timeout, "wait-timeout", 2*time.Hour, "how long --wait waits")
	cn.addFlags(cmd, true)
	return cmd
}

func (a *app) certifyCancelCmd() *cobra.Command {
	var cn conn
	cmd := &cobra.Command{
		Use:   "cancel JOB",
		Short: "Cancel a queued or running benchmark job (its GPUs are released)",
		Args:  argsError(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, asJSON, err := a.connectFor(cmd, &cn)
			if err != nil {
				return err
			}
			j, err := c.CancelBenchJob(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(out(cmd), j)
			}
			fmt.Fprintf(out(cmd), "Benchmark job %s is %s.\n", j.ID, j.State)
			return nil
		},
	}
	cn.addFlags(cmd, true)
	return cmd
}

func (a *app) certifyStatusCmd() *cobra.Command {
	var cn conn
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Every GPU's certification, why, and when it is benchmarked next",
		Args:  argsError(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, asJSON, err := a.connectFor(cmd, &cn)
			if err != nil {
				return err
			}
			list, err := c.GPUCerts(cmd.Context())
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(out(cmd), list)
			}
			now := time.Now()
			tb := newTable(out(cmd), "HOST", "#", "GPU", "TYPE", "STATE", "RATIO", "PRICE", "LAST RUN", "NEXT", "WHY")
			for _, g := range list {
				ratio := "-"
				if g.RatioPermille > 0 {
					ratio = fmt.Sprintf("%d.%03d", g.RatioPermille/1000, g.RatioPermille%1000)
				}
				tb.row(g.Host, strconv.Itoa(g.Index), g.GPU, g.Type, g.State, ratio, priceShare(g.PricePermille, g.State),
					formatAgo(g.LastRunAt, now), orDash(g.Next), orDash(g.Reason))
			}
			return tb.flush()
		},
	}
	cn.addFlags(cmd, true)
	return cmd
}

func (a *app) certifySettingsCmd() *cobra.Command {
	var (
		cn     conn
		policy string
		every  time.Duration
		tier   string
	)
	cmd := &cobra.Command{
		Use:   "settings [--policy delist|degrade] [--every 168h] [--tier t2]",
		Short: "Show or set the schedule and what a confirmed FAIL does",
		Long: "--policy delist takes a GPU whose FAIL a re-run confirmed out of rental; --policy degrade lists it\n" +
			"again as degraded, at its measured share of the price, to customers who rent with --degraded.\n" +
			"--every is how often an idle GPU is benchmarked again (0 turns the schedule off).",
		Args: argsError(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, asJSON, err := a.connectFor(cmd, &cn)
			if err != nil {
				return err
			}
			st, err := c.CertSettings(cmd.Context())
			if err != nil {
				return err
			}
			fl := cmd.Flags()
			if fl.Changed("policy") || fl.Changed("every") || fl.Changed("tier") {
				if fl.Changed("policy") {
					st.Policy = policy
				}
				if fl.Changed("every") {
					if every < 0 || every%time.Hour != 0 {
						return usageError{err: fmt.Errorf("--every must be whole hours (0 turns it off), got %s", every)}
					}
					st.EveryHours = int(every / time.Hour)
				}
				if fl.Changed("tier") {
					st.Tier = tier
				}
				if st, err = c.SaveCertSettings(cmd.Context(), st); err != nil {
					return err
				}
			}
			if asJSON {
				return writeJSON(out(cmd), st)
			}
			p := newPairs(out(cmd))
			p.pair("Policy", st.Policy)
			sched := "off"
			if st.EveryHours > 0 {
				sched = fmt.Sprintf("every %s on idle GPUs", time.Duration(st.EveryHours)*time.Hour)
			}
			p.pair("Schedule", sched)
			p.pair("Tier", st.Tier)
			return p.flush()
		},
	}
	cmd.Flags().StringVar(&policy, "policy", "", "delist or degrade")
	cmd.Flags().DurationVar(&every, "every", 0, "how often an idle GPU is benchmarked again, whole hours; 0 off")
	cmd.Flags().StringVar(&tier, "tier", "", "the tier the schedule runs: t1 or t2")
	cn.addFlags(cmd, true)
	return cmd
}

// certifyJudgeCmd judges records on this machine, without a server: for
// results of the suite run by hand (bench/README.md).
func (a *app) certifyJudgeCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "judge FILE",
		Short: "Summarise and judge recorded benchmark results (JSON lines) against the reference and each other",
		Long: "Reads the records the suite printed (bench/README.md; - for standard input), summarises each GPU\n" +
			"and probe (warm-up dropped, median, spread), and judges every GPU against the median of the GPUs\n" +
			"in the file, with the ratios to the dense spec and the healthy reference where the type has them.",
		Args: argsError(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			var in io.Reader = cmd.InOrStdin()
			if args[0] != "-" {
				f, err := os.Open(args[0])
				if err != nil {
					return err
				}
				defer f.Close()
				in = f
			}
			recs, err := benchjudge.ParseRecords(in)
			if err != nil {
				return err
			}
			sums := benchjudge.Summarize(recs)
			medians := benchjudge.FleetMedians(sums)
			ref, err := benchjudge.Reference()
			if err != nil {
				return err
			}
			w := out(cmd)
			tb := newTable(w, "GPU", "TYPE", "PROBE", "RUNS", "MEDIAN", "SPREAD", "VERDICT", "OF SPEC", "OF HEALTHY REF", "MAX °C", "MIN SM MHz", "THROTTLE")
			for _, s := range sums {
				spec, _ := ref.Type(s.Type)
				v := benchjudge.Judge(s, medians[s.TypeProbe], spec)
				ofRef := "-"
				if v.RefRatio > 0 {
					ofRef = formatPercent(v.RefRatio)
				}
				tb.row(s.GPUKey, s.Type, s.Probe, strconv.Itoa(s.Runs), formatFigure(s.Median, s.Unit), formatPercent(s.Spread),
					string(v.Outcome), formatPercent(v.SpecRatio), ofRef, orZeroDash(s.MaxTempC),
					orZeroDash(s.MinSMClockMHz), orDash(strings.Join(s.ThrottleReasons, ",")))
			}
			if err := tb.flush(); err != nil {
				return err
			}
			fmt.Fprintln(w, "\nVerdicts are against the median of the GPUs in this file; spec and reference ratios are shown, never judged.")
			return nil
		},
	}
	return cmd
}
