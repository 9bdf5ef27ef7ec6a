package cli

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/gpurent/gpurent/internal/apiv1"
	"github.com/gpurent/gpurent/internal/money"
)

// formatRunway renders seconds of runway: "3d 4h", "2h 05m", "12m 30s".
func formatRunway(r *int64) string {
	if r == nil {
		return "no limit (nothing is running)"
	}
	d := time.Duration(*r) * time.Second
	switch {
	case d >= 24*time.Hour:
		return fmt.Sprintf("%dd %dh", d/(24*time.Hour), d%(24*time.Hour)/time.Hour)
	case d >= time.Hour:
		return fmt.Sprintf("%dh %02dm", d/time.Hour, d%time.Hour/time.Minute)
	default:
		return fmt.Sprintf("%dm %02ds", d/time.Minute, d%time.Minute/time.Second)
	}
}

func (a *app) walletCmd() *cobra.Command {
	var cn conn
	cmd := &cobra.Command{
		Use:   "wallet",
		Short: "Show your balance, credits, arrears, burn rate and runway",
		Args:  argsError(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, asJSON, err := a.connectFor(cmd, &cn)
			if err != nil {
				return err
			}
			wl, err := c.Wallet(cmd.Context())
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(out(cmd), wl)
			}
			return a.printWallet(cmd, wl)
		},
	}
	cn.addFlags(cmd, true)
	cmd.AddCommand(a.walletHistoryCmd(), a.walletTopUpCmd(), a.walletLimitsCmd(), a.walletAlertsCmd())
	return cmd
}

func (a *app) printWallet(cmd *cobra.Command, wl apiv1.Wallet) error {
	w := out(cmd)
	p := newPairs(w)
	p.pair("Spendable", money.Format(wl.SpendableFen))
	p.pair("Cash", money.Format(wl.CashFen))
	p.pair("Credit", money.Format(wl.CreditFen))
	arrears := money.Format(wl.ArrearsFen)
	if wl.ArrearsFen > 0 {
		arrears += " (no instance can start until this is paid)"
	}
	p.pair("Arrears", arrears)
	p.pair("Burn rate", fmt.Sprintf("%s/h (%d running)", money.Format(wl.BurnFenPerHour), wl.RunningInstances))
	p.pair("Runway", formatRunway(wl.RunwaySeconds))
	if err := p.flush(); err != nil {
		return err
	}
	if len(wl.Credits) == 0 {
		return nil
	}
	fmt.Fprintln(w)
	t := newTable(w, "CREDIT", "KIND", "LEFT", "EXPIRES")
	for _, l := range wl.Credits {
		t.row(l.ID, l.Kind, money.Format(l.BalanceFen), formatTime(l.ExpiresAt, a.env.Location))
	}
	return t.flush()
}

func (a *app) walletHistoryCmd() *cobra.Command {
	var cn conn
	var limit int
	var before int64
	cmd := &cobra.Command{
		Use:   "history",
		Short: "List your wallet's ledger entries, newest first",
		Args:  argsError(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, asJSON, err := a.connectFor(cmd, &cn)
			if err != nil {
				return err
			}
			list, err := c.WalletTransactions(cmd.Context(), before, limit)
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(out(cmd), list)
			}
			w := out(cmd)
			if len(list.Entries) == 0 {
				fmt.Fprintln(w, "No wallet activity yet.")
				return nil
			}
			t := newTable(w, "SEQ", "TIME", "WHAT", "AMOUNT", "CHANGE", "NOTE")
			for _, e := range list.Entries {
				what := e.Op
				switch {
				case e.Charge != "":
					what += " " + e.Charge
				case e.Credit != "":
					what += " " + e.Credit
				}
				change := money.Format(e.NetFen)
				if e.NetFen > 0 {
					change = "+" + change
				}
				t.row(strconv.FormatInt(e.Seq, 10), formatTime(e.At, a.env.Location), what,
					money.Format(e.AmountFen), change, orDash(e.Note))
			}
			if err := t.flush(); err != nil {
				return err
			}
			if list.NextBefore > 0 {
				fmt.Fprintf(w, "\nMore: gpurent wallet history --before %d\n", list.NextBefore)
			}
			return nil
		},
	}
	cn.addFlags(cmd, true)
	cmd.Flags().IntVar(&limit, "limit", 0, "how many entries (default 50, at most 500)")
	cmd.Flags().Int64Var(&before, "before", 0, "list entries before this sequence number (paging)")
	return cmd
}

func (a *app) walletTopUpCmd() *cobra.Command {
	var cn conn
	var provider string
	cmd := &cobra.Command{
		Use:   "topup AMOUNT_CNY",
		Short: "Start a top-up through a payment provider; prints where to pay",
		Args:  argsError(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			asJSON, err := cn.json()
			if err != nil {
				return err
			}
			fen, err := money.Parse(args[0])
			if err != nil {
				return usageError{err: err}
			}
			c, err := a.connect(cmd, &cn)
			if err != nil {
				return err
			}
			p, err := c.CreatePayment(cmd.Context(), apiv1.CreatePaymentRequest{Provider: provider, AmountFen: fen}, "")
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(out(cmd), p)
			}
			fmt.Fprintf(out(cmd), "Payment %s of %s started with %s.\nPay: %s\n"+
				"Your wallet is credited when %s confirms the payment.\n",
				p.PaymentID, money.Format(p.AmountFen), p.Provider, p.PayURL, p.Provider)
			return nil
		},
	}
	cn.addFlags(cmd, true)
	cmd.Flags().StringVar(&provider, "provider", "", "payment provider (default: the server's only one)")
	return cmd
}

func (a *app) voucherCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "voucher",
		Short: "Redeem a voucher code, or create vouchers (operators)",
	}
	parent(cmd)
	cmd.AddCommand(a.voucherRedeemCmd(), a.voucherCreateCmd())
	return cmd
}

func (a *app) voucherRedeemCmd() *cobra.Command {
	var cn conn
	cmd := &cobra.Command{
		Use:   "redeem CODE",
		Short: "Redeem a voucher code into your wallet",
		Args:  argsError(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, asJSON, err := a.connectFor(cmd, &cn)
			if err != nil {
				return err
			}
			r, err := c.RedeemVoucher(cmd.Context(), args[0], "")
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(out(cmd), r)
			}
			w := out(cmd)
			if r.AlreadyRedeemed {
				fmt.Fprintf(w, "You already redeemed %s on %s; nothing more was credited.\n",
					r.Code, formatTime(r.RedeemedAt, a.env.Location))
				return nil
			}
			if r.Kind == "promo" && r.Entry.ExpiresAt != nil {
				fmt.Fprintf(w, "Redeemed %s: %s of promo credit, usable until %s.\n", r.Code,
					money.Format(r.AmountFen), formatTime(*r.Entry.ExpiresAt, a.env.Location))
				return nil
			}
			fmt.Fprintf(w, "Redeemed %s: %s added to your cash balance.\n", r.Code, money.Format(r.AmountFen))
			return nil
		},
	}
	cn.addFlags(cmd, true)
	return cmd
}

// parseDay reads --expires: a date (the voucher expires at the end of that
// day, in the display time zone) or an RFC 3339 instant.
func parseDay(s string, loc *time.Location) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	d, err := time.ParseInLocation("2006-01-02", s, loc)
	if err != nil {
		return time.Time{}, fmt.Errorf("--expires %q is not a date like 2026-12-31 or an RFC 3339 time", s)
	}
	return d.AddDate(0, 0, 1), nil
}

func (a *app) voucherCreateCmd() *cobra.Command {
	var cn conn
	var promo bool
	var expires string
	var max int
	cmd := &cobra.Command{
		Use:   "create AMOUNT_CNY --expires DATE",
		Short: "Create a voucher code (operators)",
		Long: "Create a voucher code worth AMOUNT_CNY yuan. A cash voucher tops the wallet up;\n" +
			"with --promo it grants promo credit that expires with the voucher.\n" +
			"--expires 2026-12-31 means until the end of that day; --max is how many\n" +
			"accounts may redeem it (each once; 1 is a single-use code).",
		Args: argsError(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			asJSON, err := cn.json()
			if err != nil {
				return err
			}
			fen, err := money.Parse(args[0])
			if err != nil {
				return usageError{err: err}
			}
			if expires == "" {
				return usageError{err: fmt.Errorf("--expires is required, e.g. --expires 2026-12-31")}
			}
			at, err := parseDay(expires, a.env.Location)
			if err != nil {
				return usageError{err: err}
			}
			kind := "cash"
			if promo {
				kind = "promo"
			}
			c, err := a.connect(cmd, &cn)
			if err != nil {
				return err
			}
			v, err := c.CreateVoucher(cmd.Context(), apiv1.CreateVoucherRequest{AmountFen: fen, Kind: kind,
				ExpiresAt: at, MaxRedemptions: max}, "")
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(out(cmd), v)
			}
			p := newPairs(out(cmd))
			p.pair("Code", v.Code)
			p.pair("Kind", v.Kind)
			p.pair("Amount", money.Format(v.AmountFen))
			p.pair("Expires", formatTime(v.ExpiresAt, a.env.Location))
			p.pair("Redemptions", fmt.Sprintf("up to %d", v.MaxRedemptions))
			return p.flush()
		},
	}
	cn.addFlags(cmd, true)
	cmd.Flags().BoolVar(&promo, "promo", false, "grant expiring promo credit instead of cash")
	cmd.Flags().StringVar(&expires, "expires", "", "last day it can be redeemed (2026-12-31) or an RFC 3339 time")
	cmd.Flags().IntVar(&max, "max", 1, "how many accounts may redeem it")
	return cmd
}

func (a *app) creditCmd() *cobra.Command {
	var cn conn
	var reason string
	cmd := &cobra.Command{
		Use:   "credit ACCOUNT_OR_EMAIL AMOUNT_CNY --reason TEXT",
		Short: "Top up a customer's wallet (operators)",
		Args:  argsError(cobra.ExactArgs(2)),
		RunE: func(cmd *cobra.Command, args []string) error {
			asJSON, err := cn.json()
			if err != nil {
				return err
			}
			fen, err := money.Parse(args[1])
			if err != nil {
				return usageError{err: err}
			}
			if strings.TrimSpace(reason) == "" {
				return usageError{err: fmt.Errorf("--reason is required: it is kept with the credit for the audit trail")}
			}
			c, err := a.connect(cmd, &cn)
			if err != nil {
				return err
			}
			e, err := c.Credit(cmd.Context(), args[0], apiv1.CreditRequest{AmountFen: fen, Reason: reason}, "")
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(out(cmd), e)
			}
			fmt.Fprintf(out(cmd), "Credited %s to %s (ledger entry %d).\n", money.Format(e.AmountFen), args[0], e.Seq)
			return nil
		},
	}
	cn.addFlags(cmd, true)
	cmd.Flags().StringVar(&reason, "reason", "", "why (kept with the credit)")
	return cmd
}

func (a *app) paymentCmd() *cobra.Command {
	var cn conn
	var failed bool
	cmd := &cobra.Command{
		Use:   "payment PROVIDER PAYMENT_ID AMOUNT_CNY [--failed]",
		Short: "Confirm a payment that arrived by hand, e.g. a bank transfer's reference (operators)",
		Example: "  gpurent payment bank-transfer BT7Q2M9K4XRZ8P 5000\n" +
			"  gpurent payment bank-transfer BT7Q2M9K4XRZ8P 5000 --failed",
		Args: argsError(cobra.ExactArgs(3)),
		RunE: func(cmd *cobra.Command, args []string) error {
			asJSON, err := cn.json()
			if err != nil {
				return err
			}
			fen, err := money.Parse(args[2])
			if err != nil {
				return usageError{err: err}
			}
			c, err := a.connect(cmd, &cn)
			if err != nil {
				return err
			}
			res, err := c.SettlePayment(cmd.Context(), args[0], args[1], apiv1.SettlePaymentRequest{AmountFen: fen, Failed: failed})
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(out(cmd), res)
			}
			again := ""
			if res.AlreadySettled {
				again = " (it was settled before; nothing changed)"
			}
			fmt.Fprintf(out(cmd), "Payment %s/%s of %s is %s%s.\n", res.Payment.Provider, res.Payment.PaymentID,
				money.Format(res.Payment.AmountFen), res.Payment.State, again)
			return nil
		},
	}
	cn.addFlags(cmd, true)
	cmd.Flags().BoolVar(&failed, "failed", false, "the payment failed for good: credit nothing")
	return cmd
}
