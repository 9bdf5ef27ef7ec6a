package wallet

import (
	"context"
	"time"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/money"
	"github.com/gpurent/gpurent/internal/rating"
)

// LimitsView is an account's spend limits with what it spent so far in the
// current day and month (Asia/Shanghai).
type LimitsView struct {
	gpurent.SpendLimits
	SpentTodayFen int64
	SpentMonthFen int64
	// Reached is "daily" or "monthly" when that cap is reached, else "".
	Reached string
}

// Limits returns the account's spend limits and spending.
func (s *Service) Limits(ctx context.Context, acc *gpurent.Account) (*LimitsView, error) {
	if acc == nil {
		return nil, gpurent.Errorf(gpurent.CodeUnauthorized, "sign in first")
	}
	return s.limits(ctx, acc.ID)
}

func (s *Service) limits(ctx context.Context, accountID string) (*LimitsView, error) {
	l, err := s.store.SpendLimits(ctx, accountID)
	if err != nil {
		return nil, err
	}
	loc, err := rating.LoadBillingZone()
	if err != nil {
		return nil, err
	}
	now := s.now().In(loc)
	day := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, loc)
	month := time.Date(now.Year(), now.Month(), 1, 0, 0, 0, 0, loc)
	v := &LimitsView{SpendLimits: l}
	if v.SpentTodayFen, err = s.store.DebitsBetween(ctx, accountID, day, day.AddDate(0, 0, 1)); err != nil {
		return nil, err
	}
	if v.SpentMonthFen, err = s.store.DebitsBetween(ctx, accountID, month, month.AddDate(0, 1, 0)); err != nil {
		return nil, err
	}
	switch {
	case l.DailyFen > 0 && v.SpentTodayFen >= l.DailyFen:
		v.Reached = "daily"
	case l.MonthlyFen > 0 && v.SpentMonthFen >= l.MonthlyFen:
		v.Reached = "monthly"
	}
	return v, nil
}

// SetLimits sets the account's caps (0: none).
func (s *Service) SetLimits(ctx context.Context, acc *gpurent.Account, l gpurent.SpendLimits) (*LimitsView, error) {
	if acc == nil {
		return nil, gpurent.Errorf(gpurent.CodeUnauthorized, "sign in first")
	}
	if l.DailyFen < 0 || l.MonthlyFen < 0 || l.DailyFen > 1<<40 || l.MonthlyFen > 1<<40 {
		return nil, gpurent.Errorf(gpurent.CodeInvalid, "spend limits must be between 0 (none) and a sane amount")
	}
	if err := s.store.SetSpendLimits(ctx, acc.ID, l); err != nil {
		return nil, err
	}
	s.log.Info("spend limits set", "account", acc.ID, "daily_fen", l.DailyFen, "monthly_fen", l.MonthlyFen, "stop_running", l.StopRunning)
	return s.limits(ctx, acc.ID)
}

// CheckSpend refuses new spending while the account owes storage
// (arrears) or once a cap is reached.
func (s *Service) CheckSpend(ctx context.Context, accountID string) error {
	return s.CheckFunds(ctx, accountID, 0)
}

// CheckFunds is the start gate: it refuses an account that owes storage
// (arrears), cannot pay needFen up front on top of an hour of what its
// running hourly instances already burn (ReserveFen), or reached a spend
// limit. It reads the account's balances once. It is the early answer
// only: a package's charge is taken, and checked again, in the claim's
// transaction (metering's CollectDue).
func (s *Service) CheckFunds(ctx context.Context, accountID string, needFen int64) error {
	return s.CheckFundsExcept(ctx, accountID, "", needFen)
}

// CheckFundsExcept is CheckFunds for a change of instance except (an
// upgrade, a move): its own hour is not kept back, since what it burns now
// ends when the change begins.
func (s *Service) CheckFundsExcept(ctx context.Context, accountID, except string, needFen int64) error {
	bal, err := s.store.LedgerBalances(ctx, accountID)
	if err != nil {
		return err
	}
	if bal.ReceivableFen < 0 {
		return gpurent.Errorf(gpurent.CodePaymentRequired, "the account owes %s for storage: top up to pay it before starting anything",
			money.Format(-bal.ReceivableFen))
	}
	if needFen > 0 {
		w, err := walletOf(bal)
		if err != nil {
			return err
		}
		reserve, err := s.reserveFen(ctx, s.store, accountID, except)
		if err != nil {
			return err
		}
		if err := Short(w.SpendableFen(s.now()), reserve, needFen); err != nil {
			return err
		}
	}
	v, err := s.limits(ctx, accountID)
	if err != nil {
		return err
	}
	switch v.Reached {
	case "daily":
		return gpurent.Errorf(gpurent.CodePaymentRequired, "your daily spend limit (%s) is reached: no new rentals until tomorrow (Asia/Shanghai), or raise it",
			money.Format(v.DailyFen))
	case "monthly":
		return gpurent.Errorf(gpurent.CodePaymentRequired, "your monthly spend limit (%s) is reached: no new rentals this month, or raise it",
			money.Format(v.MonthlyFen))
	}
	return nil
}

// StopAtCap says whether the account's running instances must stop: a cap
// is reached and the customer chose to stop them then.
func (s *Service) StopAtCap(ctx context.Context, accountID string) (bool, error) {
	v, err := s.limits(ctx, accountID)
	if err != nil {
		return false, err
	}
	return v.Reached != "" && v.StopRunning, nil
}

// Short is the start gate's refusal (CodePaymentRequired), nil when
// haveFen spendable covers needFen on top of reserveFen kept for the
// instances already running by the hour. The rent, start and plan
// conversion paths answer with it, so the API, the CLI and the console
// show one message for one cause.
func Short(haveFen, reserveFen, needFen int64) error {
	if haveFen-reserveFen >= needFen {
		return nil
	}
	if reserveFen > 0 {
		return gpurent.Errorf(gpurent.CodePaymentRequired,
			"the wallet holds %s, of which %s is kept for an hour of your running instances: %s left, less than this rental's first charge (%s: an hour, or the package's first period): top up first (`gpurent wallet`)",
			money.Format(haveFen), money.Format(reserveFen), money.Format(max(haveFen-reserveFen, 0)), money.Format(needFen))
	}
	return gpurent.Errorf(gpurent.CodePaymentRequired,
		"the wallet holds %s, less than this rental's first charge (%s: an hour, or the package's first period): top up first (`gpurent wallet`)",
		money.Format(haveFen), money.Format(needFen))
}
