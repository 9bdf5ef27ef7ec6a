package cli

import (
	"encoding/base64"
	"fmt"
	"mime"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/gpurent/gpurent/internal/apiv1"
)

func (a *app) academicCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "academic",
		Short: "Academic prices: apply with a university e-mail or a proof; operators decide",
	}
	cmd.AddCommand(a.academicApplyCmd(), a.academicListCmd(), a.academicShowCmd(),
		a.academicDecideCmd(true), a.academicDecideCmd(false))
	return cmd
}

func (a *app) academicApplyCmd() *cobra.Command {
	var (
		cn                            conn
		institution, proof, proofFile string
	)
	cmd := &cobra.Command{
		Use:   "apply --institution NAME [--proof TEXT | --proof-file FILE]",
		Short: "Apply: without a proof, your account's university e-mail address is the evidence",
		Args:  argsError(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			asJSON, err := cn.json()
			if err != nil {
				return err
			}
			req := apiv1.AcademicApplyRequest{Method: "email_domain", Institution: institution}
			switch {
			case proofFile != "":
				b, err := os.ReadFile(proofFile)
				if err != nil {
					return err
				}
				typ := mime.TypeByExtension(filepath.Ext(proofFile))
				if typ == "" {
					typ = http.DetectContentType(b)
				}
				req.Method, req.Proof = "proof", "data:"+typ+";base64,"+base64.StdEncoding.EncodeToString(b)
			case proof != "":
				req.Method, req.Proof = "proof", proof
			}
			c, err := a.connect(cmd, &cn)
			if err != nil {
				return err
			}
			got, err := c.ApplyAcademic(cmd.Context(), req)
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(out(cmd), got)
			}
			fmt.Fprintf(out(cmd), "Application %s filed (%s); an operator will decide. See `gpurent academic show %s`.\n",
				got.ID, got.Method, got.ID)
			return nil
		},
	}
	cmd.Flags().StringVar(&institution, "institution", "", "university or institute")
	cmd.Flags().StringVar(&proof, "proof", "", "a description of, or link to, your proof")
	cmd.Flags().StringVar(&proofFile, "proof-file", "", "a small file (student or staff card, letter) to upload")
	cn.addFlags(cmd, true)
	return cmd
}

func (a *app) academicListCmd() *cobra.Command {
	var (
		cn    conn
		all   bool
		state string
	)
	cmd := &cobra.Command{
		Use:   "ls",
		Short: "Your applications; operators: --all [--state pending]",
		Args:  argsError(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, asJSON, err := a.connectFor(cmd, &cn)
			if err != nil {
				return err
			}
			list, err := c.AcademicApplications(cmd.Context(), all, state)
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(out(cmd), list)
			}
			if len(list.Applications) == 0 {
				fmt.Fprintln(out(cmd), "No applications.")
				return nil
			}
			t := newTable(out(cmd), "ID", "EMAIL", "INSTITUTION", "METHOD", "STATE", "FILED", "VERIFIED UNTIL")
			for _, ap := range list.Applications {
				until := "-"
				if ap.VerifiedUntil != nil {
					until = ap.VerifiedUntil.In(a.env.Location).Format("2006-01-02")
				}
				t.row(ap.ID, ap.Email, ap.Institution, ap.Method, ap.State, formatTime(ap.CreatedAt, a.env.Location), until)
			}
			return t.flush()
		},
	}
	cmd.Flags().BoolVar(&all, "all", false, "every account's (operators)")
	cmd.Flags().StringVar(&state, "state", "", "only pending, approved or rejected")
	cn.addFlags(cmd, true)
	return cmd
}

func (a *app) academicShowCmd() *cobra.Command {
	var cn conn
	cmd := &cobra.Command{
		Use:   "show ID",
		Short: "An application and its audit trail",
		Args:  argsError(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, asJSON, err := a.connectFor(cmd, &cn)
			if err != nil {
				return err
			}
			ap, err := c.AcademicApplication(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(out(cmd), ap)
			}
			return a.printAcademic(cmd, ap)
		},
	}
	cn.addFlags(cmd, true)
	return cmd
}

func (a *app) printAcademic(cmd *cobra.Command, ap apiv1.AcademicApplication) error {
	p := newPairs(out(cmd))
	p.pair("ID", ap.ID)
	p.pair("Account", ap.Email+" ("+ap.AccountID+")")
	p.pair("Institution", ap.Institution)
	p.pair("Method", ap.Method)
	p.pair("State", ap.State)
	if ap.Reason != "" {
		p.pair("Note", ap.Reason)
	}
	if ap.VerifiedUntil != nil {
		p.pair("Verified until", ap.VerifiedUntil.In(a.env.Location).Format(time.DateOnly))
	}
	if err := p.flush(); err != nil {
		return err
	}
	if len(ap.Audit) > 0 {
		fmt.Fprintln(out(cmd), "\nHistory:")
		t := newTable(out(cmd), "  TIME", "ACTOR", "ACTION", "NOTE")
		for _, e := range ap.Audit {
			t.row("  "+formatTime(e.At, a.env.Location), e.Actor, e.Action, orDash(e.Note))
		}
		return t.flush()
	}
	return nil
}

func (a *app) academicDecideCmd(approve bool) *cobra.Command {
	var (
		cn   conn
		note string
	)
	use, short := "approve ID [--note TEXT]", "Approve an application: academic prices for a year (operators)"
	if !approve {
		use, short = "reject ID --reason TEXT", "Reject an application, saying why (operators)"
	}
	cmd := &cobra.Command{
		Use:   use,
		Short: short,
		Args:  argsError(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, asJSON, err := a.connectFor(cmd, &cn)
			if err != nil {
				return err
			}
			ap, err := c.DecideAcademic(cmd.Context(), args[0], approve, note)
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(out(cmd), ap)
			}
			return a.printAcademic(cmd, ap)
		},
	}
	if approve {
		cmd.Flags().StringVar(&note, "note", "", "a note kept in the audit trail")
	} else {
		cmd.Flags().StringVar(&note, "reason", "", "why, so the customer can act on it (required)")
	}
	cn.addFlags(cmd, true)
	return cmd
}
