package wallet

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"time"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/ledger"
	"github.com/gpurent/gpurent/internal/money"
)

// Runway alert levels, mildest first, and their thresholds.
const (
	alertNone = ""
	alert2h   = "2h"
	alert30m  = "30m"
	alertStop = "stop"
	// StopRunwaySeconds: at this runway the instances are stopped, so the
	// wallet never pays for more than a minute it does not have.
	StopRunwaySeconds = 60
)

func severity(level string) int {
	switch level {
	case alert2h:
		return 1
	case alert30m:
		return 2
	case alertStop:
		return 3
	}
	return 0
}

func levelFor(runway int64, running int) string {
	switch {
	case running == 0 || runway == ledger.NoLimit:
		return alertNone
	case runway <= StopRunwaySeconds:
		return alertStop
	case runway <= 30*60:
		return alert30m
	case runway <= 2*3600:
		return alert2h
	}
	return alertNone
}

// Alert is the JSON body a webhook receives.
type Alert struct {
	AccountID      string    `json:"account_id"`
	Kind           string    `json:"kind"` // runway_2h, runway_30m, runway_stop
	Message        string    `json:"message"`
	RunwaySeconds  int64     `json:"runway_seconds"`
	SpendableFen   int64     `json:"spendable_fen"`
	BurnFenPerHour int64     `json:"burn_fen_per_hour"`
	At             time.Time `json:"at"`
}

// MustStop is the billing pass's question for an account with running
// instances: must they stop? Yes at 60 s of runway or less, or at a spend
// limit the customer wants enforced on running instances. On the way it
// sends the runway alerts — at 2 h, at 30 min, and at the stop — each once
// per crossing (recorded as account events and posted to the customer's
// webhook); a top-up that lifts the runway above 2 h re-arms them.
func (s *Service) MustStop(ctx context.Context, accountID string) (bool, error) {
	acc, err := s.store.AccountByID(ctx, accountID)
	if err != nil {
		return false, err
	}
	v, err := s.Wallet(ctx, acc)
	if err != nil {
		return false, err
	}
	level := levelFor(v.RunwaySeconds, v.RunningInstances)
	prev, err := s.store.RunwayAlert(ctx, accountID)
	if err != nil {
		return false, err
	}
	switch {
	case severity(level) > severity(prev):
		moved, err := s.store.SetRunwayAlert(ctx, accountID, prev, level)
		if err != nil {
			return false, err
		}
		if moved {
			s.alert(ctx, acc, v, level)
		}
	case level == alertNone && prev != alertNone:
		if _, err := s.store.SetRunwayAlert(ctx, accountID, prev, alertNone); err != nil {
			return false, err
		}
	}
	if level == alertStop {
		return true, nil
	}
	return s.StopAtCap(ctx, accountID)
}

// alert records and sends one runway alert.
func (s *Service) alert(ctx context.Context, acc *gpurent.Account, v *View, level string) {
	a := Alert{AccountID: acc.ID, Kind: "runway_" + level, RunwaySeconds: v.RunwaySeconds, SpendableFen: v.SpendableFen,
		BurnFenPerHour: v.BurnFenPerHour, At: s.now().UTC()}
	switch level {
	case alertStop:
		a.Message = fmt.Sprintf("The wallet is empty (%s left at %s/h): running instances are being stopped; their data is kept.",
			money.Format(v.SpendableFen), money.Format(v.BurnFenPerHour))
	default:
		a.Message = fmt.Sprintf("About %s of runway left (%s at %s/h): top up to keep your instances running.",
			(time.Duration(v.RunwaySeconds) * time.Second).Round(time.Minute), money.Format(v.SpendableFen), money.Format(v.BurnFenPerHour))
	}
	if err := s.store.AddAccountEvent(ctx, &gpurent.AccountEvent{AccountID: acc.ID, At: a.At, Kind: a.Kind, Message: a.Message}); err != nil {
		s.log.Error("recording a runway alert", "account", acc.ID, "err", err)
	}
	s.log.Warn("runway alert", "account", acc.ID, "kind", a.Kind, "runway_seconds", v.RunwaySeconds)
	hook, err := s.store.WebhookURL(ctx, acc.ID)
	if err != nil || hook == "" || s.notify == nil {
		return
	}
	body, err := json.Marshal(a)
	if err != nil {
		return
	}
	s.notify(ctx, hook, body)
}

// Notice posts a notice another service recorded as an account event (an
// instance that started from the queue) to the account's webhook, if set,
// in the same JSON form as the alerts.
func (s *Service) Notice(ctx context.Context, accountID, kind, message string) {
	hook, err := s.store.WebhookURL(ctx, accountID)
	if err != nil || hook == "" || s.notify == nil {
		return
	}
	body, err := json.Marshal(Alert{AccountID: accountID, Kind: kind, Message: message, At: s.now().UTC()})
	if err != nil {
		return
	}
	s.notify(ctx, hook, body)
}

// SetWebhook sets (or, with "", clears) where the account's alerts are
// posted: an http or https URL that the configured check admits.
func (s *Service) SetWebhook(ctx context.Context, acc *gpurent.Account, raw string) error {
	if acc == nil {
		return gpurent.Errorf(gpurent.CodeUnauthorized, "sign in first")
	}
	if raw != "" {
		u, err := url.Parse(raw)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || len(raw) > 2000 {
			return gpurent.Errorf(gpurent.CodeInvalid, "the webhook must be an http(s) URL")
		}
		if s.checkHook != nil {
			if err := s.checkHook(raw); err != nil {
				return err
			}
		}
	}
	return s.store.SetWebhookURL(ctx, acc.ID, raw)
}

// Events lists the account's events, newest first.
func (s *Service) Events(ctx context.Context, acc *gpurent.Account, limit int) ([]gpurent.AccountEvent, string, error) {
	if acc == nil {
		return nil, "", gpurent.Errorf(gpurent.CodeUnauthorized, "sign in first")
	}
	evs, err := s.store.ListAccountEvents(ctx, acc.ID, limit)
	if err != nil {
		return nil, "", err
	}
	hook, err := s.store.WebhookURL(ctx, acc.ID)
	return evs, hook, err
}
