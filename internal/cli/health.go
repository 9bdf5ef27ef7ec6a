package cli

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/gpurent/gpurent/internal/apiv1"
	"github.com/gpurent/gpurent/internal/client"
	"github.com/gpurent/gpurent/internal/money"
)

// This file holds the GPU health commands: a customer's incidents and
// failover choice, the SLA terms, and the operators' fleet health, GPU
// cordon and repair, RMA list and demo fault injection.

func (a *app) incidentsCmd() *cobra.Command {
	var cn conn
	cmd := &cobra.Command{
		Use:   "incidents [ID]",
		Short: "Faults that touched your instances; with an ID, the instance's month: availability, timelines, credits",
		Args:  argsError(cobra.MaximumNArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, asJSON, err := a.connectFor(cmd, &cn)
			if err != nil {
				return err
			}
			if len(args) == 1 {
				rep, err := c.InstanceIncidents(cmd.Context(), args[0])
				if err != nil {
					return err
				}
				if asJSON {
					return writeJSON(out(cmd), rep)
				}
				return a.printInstanceIncidents(out(cmd), rep)
			}
			list, err := c.Incidents(cmd.Context())
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(out(cmd), list)
			}
			return a.printIncidentList(out(cmd), list.Incidents)
		},
	}
	cn.addFlags(cmd, true)
	return cmd
}

func (a *app) printInstanceIncidents(w io.Writer, rep apiv1.InstanceIncidents) error {
	p := newPairs(w)
	p.pair("Instance", rep.InstanceID)
	p.pair("Month", "since "+formatTime(rep.MonthStart, a.env.Location))
	p.pair("Availability", rep.Availability+" of the time it was meant to run (a degraded GPU counts as down)")
	p.pair("SLA credits", money.Format(rep.CreditsFen))
	if err := p.flush(); err != nil {
		return err
	}
	if len(rep.Incidents) == 0 {
		fmt.Fprintln(w, "\nNo incidents this month.")
		return nil
	}
	for _, in := range rep.Incidents {
		fmt.Fprintln(w)
		a.printIncident(w, in)
	}
	fmt.Fprintln(w, "\nThe terms: gpurent sla")
	return nil
}

// printIncident writes an incident's summary and its timeline.
func (a *app) printIncident(w io.Writer, in apiv1.Incident) {
	fmt.Fprintf(w, "%s  %s, %s\n", in.ID, in.Cause, attributionLabel(in.Attribution))
	p := newPairs(w)
	p.pair("  Class", in.Class)
	p.pair("  When", a.incidentSpan(in))
	if in.CreditFen > 0 {
		p.pair("  Credit", money.Format(in.CreditFen))
	}
	_ = p.flush()
	if len(in.Entries) == 0 {
		return
	}
	t := newTable(w, "  TIME", "EVENT", "WHAT HAPPENED")
	for _, e := range in.Entries {
		t.row("  "+formatTime(e.At, a.env.Location), e.Kind, e.Message)
	}
	_ = t.flush()
}

// incidentSpan is "start → end (duration)", or "start, open for d".
func (a *app) incidentSpan(in apiv1.Incident) string {
	d := formatSeconds(in.DurationSeconds)
	if in.EndedAt == nil {
		return formatTime(in.StartedAt, a.env.Location) + ", still open (" + d + " so far)"
	}
	return formatTime(in.StartedAt, a.env.Location) + " → " + formatTime(*in.EndedAt, a.env.Location) + " (" + d + ")"
}

func (a *app) printIncidentList(w io.Writer, list []apiv1.Incident) error {
	if len(list) == 0 {
		fmt.Fprintln(w, "No incidents have touched your instances.")
		return nil
	}
	t := newTable(w, "ID", "INSTANCE", "STARTED", "DURATION", "STATE", "CHARGED TO", "CREDIT", "CAUSE")
	for _, in := range list {
		dur := formatSeconds(in.DurationSeconds)
		if in.EndedAt == nil {
			dur += " so far"
		}
		credit := "-"
		if in.CreditFen > 0 {
			credit = money.Format(in.CreditFen)
		}
		t.row(in.ID, orDash(in.InstanceID), formatTime(in.StartedAt, a.env.Location), dur, in.State,
			attributionLabel(in.Attribution), credit, in.Cause)
	}
	if err := t.flush(); err != nil {
		return err
	}
	fmt.Fprintln(w, "\nAn instance's month, with each incident's timeline: gpurent incidents ID")
	return nil
}

// attributionLabel says who a fault is charged to, for a person.
func attributionLabel(attr string) string {
	switch attr {
	case "host":
		return "platform fault (not billed, credited)"
	case "tenant":
		return "caused by the program (billed)"
	case "none":
		return "informational"
	}
	return orDash(attr)
}

// formatSeconds renders a duration in whole seconds: "45s", "10m0s",
// "2h3m4s".
func formatSeconds(s int64) string {
	if s < 0 {
		s = 0
	}
	return (time.Duration(s) * time.Second).String()
}

func (a *app) failoverCmd() *cobra.Command {
	var (
		cn         conn
		auto, wait bool
	)
	cmd := &cobra.Command{
		Use:   "failover ID (--auto | --wait)",
		Short: "On a GPU or host fault: move the instance to healthy GPUs (--auto) or keep it and tell you (--wait)",
		Args:  argsError(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			if auto == wait {
				return usageError{err: errors.New("give one of --auto and --wait")}
			}
			policy := "auto"
			if wait {
				policy = "wait"
			}
			c, asJSON, err := a.connectFor(cmd, &cn)
			if err != nil {
				return err
			}
			res, err := c.SetFailover(cmd.Context(), args[0], policy)
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(out(cmd), res)
			}
			what := "moves to healthy GPUs of the same type and count by itself (same volume and files)"
			if res.Failover == "wait" {
				what = "stays where it is until the GPUs are back, and you are told"
			}
			fmt.Fprintf(out(cmd), "Instance %s (%s): on a GPU or host fault it %s. Failover: %s.\n", res.Name, res.ID, what, res.Failover)
			return nil
		},
	}
	cmd.Flags().BoolVar(&auto, "auto", false, "move to healthy GPUs on a fault (the default)")
	cmd.Flags().BoolVar(&wait, "wait", false, "stay on a fault and be told")
	cn.addFlags(cmd, true)
	return cmd
}

func (a *app) slaCmd() *cobra.Command {
	var (
		cn   conn
		lang string
	)
	cmd := &cobra.Command{
		Use:   "sla [--lang zh]",
		Short: "The service level agreement: what counts as down and the credits you get",
		Args:  argsError(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			switch lang {
			case "en", "zh":
			default:
				return usageError{err: fmt.Errorf("--lang must be en or zh, got %q", lang)}
			}
			c, asJSON, err := a.connectFor(cmd, &cn)
			if err != nil {
				return err
			}
			terms, err := c.SLATerms(cmd.Context())
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(out(cmd), terms)
			}
			// The server's terms, in the words of the page /sla shows.
			fmt.Fprint(out(cmd), terms.Markdown(lang))
			fmt.Fprintf(out(cmd), "\nThese are the terms of %s (also at %s/sla).\n", c.Server(), c.Server())
			return nil
		},
	}
	cmd.Flags().StringVar(&lang, "lang", "en", "language: en or zh")
	cn.addFlags(cmd, true)
	return cmd
}

// runGPUHealth is `gpurent gpus --health`: every GPU's health (operators).
func (a *app) runGPUHealth(cmd *cobra.Command, c *client.Client, asJSON bool) error {
	list, err := c.GPUHealth(cmd.Context())
	if err != nil {
		return err
	}
	if asJSON {
		return writeJSON(out(cmd), list)
	}
	w := out(cmd)
	if len(list.GPUs) == 0 {
		fmt.Fprintln(w, "No GPUs have registered. Start a host with: gpurent agent")
		return nil
	}
	now := a.env.Now()
	t := newTable(w, "HOST", "IDX", "GPU", "TYPE", "HEALTH", "LAST XID", "ECC SBE/DBE", "TEMP", "OPEN INCIDENTS", "RMA")
	var notes []string
	for _, g := range list.GPUs {
		rma := "-"
		if g.RMACandidate {
			rma = "RMA"
		}
		t.row(g.HostName, strconv.Itoa(g.Index), g.UUID, g.Type, g.Health, lastXid(g, now), eccCounts(g), temperature(g),
			openIncidents(g.OpenIncidents), rma)
		if g.Reason != "" {
			notes = append(notes, fmt.Sprintf("%s (%s #%d): %s", g.UUID, g.HostName, g.Index, g.Reason))
		}
	}
	if err := t.flush(); err != nil {
		return err
	}
	if len(notes) > 0 {
		fmt.Fprintln(w)
		for _, n := range notes {
			fmt.Fprintln(w, oneLine(n))
		}
	}
	return nil
}

// lastXid is a GPU's latest Xid with its age ("79, 5m ago"), from its
// events, else its telemetry ("79"), else "-".
func lastXid(g apiv1.GPUHealth, now time.Time) string {
	for _, e := range g.Recent { // newest first
		if e.Kind == "xid" && e.Xid > 0 {
			at := e.At
			return strconv.Itoa(e.Xid) + ", " + formatAgo(&at, now)
		}
	}
	if g.Sample != nil && g.Sample.XidLast > 0 {
		return strconv.Itoa(g.Sample.XidLast)
	}
	return "-"
}

// eccCounts is the GPU's corrected/uncorrected ECC error counts from its
// telemetry, or "-" before any.
func eccCounts(g apiv1.GPUHealth) string {
	if g.Sample == nil {
		return "-"
	}
	return strconv.FormatInt(g.Sample.ECCSingleBit, 10) + "/" + strconv.FormatInt(g.Sample.ECCDoubleBit, 10)
}

func temperature(g apiv1.GPUHealth) string {
	if g.Sample == nil {
		return "-"
	}
	return strconv.Itoa(g.Sample.TemperatureC) + "°C"
}

// openIncidents summarises open incidents: "-", or their count and the
// classes, e.g. "2: reset, node".
func openIncidents(list []apiv1.Incident) string {
	if len(list) == 0 {
		return "-"
	}
	classes := make([]string, 0, len(list))
	for _, in := range list {
		classes = append(classes, in.Class)
	}
	return strconv.Itoa(len(list)) + ": " + strings.Join(classes, ", ")
}

// oneLine shows text from the server on one line.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

func (a *app) gpuCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "gpu",
		Short: "Cordon or repair one GPU (operators); see `gpurent gpus --health`",
	}
	parent(cmd)
	cmd.AddCommand(a.gpuCordonCmd(), a.gpuRepairCmd())
	return cmd
}

func (a *app) gpuCordonCmd() *cobra.Command {
	var (
		cn     conn
		reason string
	)
	cmd := &cobra.Command{
		Use:   "cordon UUID --reason R",
		Short: "Take a GPU out of placement; what runs on it stays",
		Args:  argsError(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			if strings.TrimSpace(reason) == "" {
				return usageError{err: errors.New("--reason is required: say why the GPU is cordoned")}
			}
			c, asJSON, err := a.connectFor(cmd, &cn)
			if err != nil {
				return err
			}
			g, err := c.CordonGPU(cmd.Context(), args[0], reason)
			if err != nil {
				return err
			}
			return a.printGPUAction(cmd, g, asJSON)
		},
	}
	cmd.Flags().StringVar(&reason, "reason", "", "why (required; shown to operators)")
	cn.addFlags(cmd, true)
	return cmd
}

func (a *app) gpuRepairCmd() *cobra.Command {
	var (
		cn   conn
		note string
	)
	cmd := &cobra.Command{
		Use:   "repair UUID [--note N]",
		Short: "Mark a GPU repaired (reseated, replaced) and healthy again",
		Args:  argsError(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, asJSON, err := a.connectFor(cmd, &cn)
			if err != nil {
				return err
			}
			g, err := c.RepairGPU(cmd.Context(), args[0], note)
			if err != nil {
				return err
			}
			return a.printGPUAction(cmd, g, asJSON)
		},
	}
	cmd.Flags().StringVar(&note, "note", "", "what was done")
	cn.addFlags(cmd, true)
	return cmd
}

func (a *app) printGPUAction(cmd *cobra.Command, g apiv1.GPUHealth, asJSON bool) error {
	if asJSON {
		return writeJSON(out(cmd), g)
	}
	line := fmt.Sprintf("GPU %s (%s #%d) is %s", g.UUID, g.HostName, g.Index, g.Health)
	if g.Reason != "" {
		line += ": " + g.Reason
	}
	fmt.Fprintln(out(cmd), oneLine(line)+".")
	return nil
}

func (a *app) rmaCmd() *cobra.Command {
	var cn conn
	cmd := &cobra.Command{
		Use:   "rma",
		Short: "GPUs to return to the vendor (operators)",
		Args:  argsError(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, asJSON, err := a.connectFor(cmd, &cn)
			if err != nil {
				return err
			}
			list, err := c.RMA(cmd.Context())
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(out(cmd), list)
			}
			w := out(cmd)
			if len(list.GPUs) == 0 {
				fmt.Fprintln(w, "No GPU is marked for return to the vendor.")
				return nil
			}
			t := newTable(w, "HOST", "IDX", "GPU", "TYPE", "HEALTH", "WHY")
			for _, g := range list.GPUs {
				t.row(g.HostName, strconv.Itoa(g.Index), g.UUID, g.Type, g.Health, orDash(oneLine(g.Reason)))
			}
			if err := t.flush(); err != nil {
				return err
			}
			fmt.Fprintln(w, "\nA GPU is marked after an RMA-class fault, reset-class faults twice in 7 days, or node faults twice in 30.")
			return nil
		},
	}
	cn.addFlags(cmd, true)
	return cmd
}

func (a *app) faultCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "fault",
		Short: "Inject faults into the demo's fake GPUs (operators, demo only)",
	}
	parent(cmd)
	cmd.AddCommand(a.faultInjectCmd())
	return cmd
}

func (a *app) faultInjectCmd() *cobra.Command {
	var (
		cn                 conn
		host, gpu, kind, d string
		xid                int
	)
	cmd := &cobra.Command{
		Use:   "inject --host HOST_ID --gpu UUID (--xid N | --kind K) [--detail D]",
		Short: "Put a fault into a demo host's fake GPU; its agent reports it like a real one",
		Args:  argsError(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			switch {
			case host == "" || gpu == "":
				return usageError{err: errors.New("--host and --gpu are required (see `gpurent gpus --health`)")}
			case cmd.Flags().Changed("xid") == (kind != ""):
				return usageError{err: errors.New("give one of --xid N and --kind K")}
			case cmd.Flags().Changed("xid") && xid <= 0:
				return usageError{err: fmt.Errorf("--xid must be a positive Xid number, got %d", xid)}
			}
			c, asJSON, err := a.connectFor(cmd, &cn)
			if err != nil {
				return err
			}
			f, err := c.InjectFault(cmd.Context(), apiv1.Fault{HostID: host, UUID: gpu, Kind: kind, Xid: xid, Detail: d})
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(out(cmd), f)
			}
			what := f.Kind
			if f.Kind == "xid" {
				what = "Xid " + strconv.Itoa(f.Xid)
			}
			fmt.Fprintf(out(cmd), "Injected %s into GPU %s on host %s. Follow it with: gpurent gpus --health\n", what, f.UUID, f.HostID)
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&host, "host", "", "the host's ID")
	fl.StringVar(&gpu, "gpu", "", "the GPU's UUID")
	fl.IntVar(&xid, "xid", 0, "an Xid (e.g. 79: fallen off the bus, 48: double-bit ECC, 13: the program's fault)")
	fl.StringVar(&kind, "kind", "", "ecc_dbe, gpu_lost, recovery_action, remap_failure, throttle, or slow (--detail 0.85: the card's benchmark speed)")
	fl.StringVar(&d, "detail", "", "the driver's text to report with it")
	cn.addFlags(cmd, true)
	return cmd
}
