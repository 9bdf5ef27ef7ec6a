package wallet

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/money"
)

// ReleaseAfter is how long an account may stay in arrears before its
// stopped instances and their data are released; notices go out 72 h and
// 24 h before.
const ReleaseAfter = 15 * 24 * time.Hour

// ReviewArrears follows an account's arrears: it records when they began
// (and clears that when a top-up paid them), sends the release notices at
// 72 h and 24 h before the release (account events and the webhook, once
// each), and answers whether the account's stopped instances must now be
// released.
func (s *Service) ReviewArrears(ctx context.Context, accountID string) (release bool, err error) {
	bal, err := s.store.LedgerBalances(ctx, accountID)
	if err != nil {
		return false, err
	}
	since, notice, err := s.store.Arrears(ctx, accountID)
	if err != nil {
		return false, err
	}
	now := s.now().UTC()
	if bal.ReceivableFen >= 0 {
		if since != nil {
			return false, s.store.SetArrears(ctx, accountID, nil)
		}
		return false, nil
	}
	if since == nil {
		since = &now
		if err := s.store.SetArrears(ctx, accountID, since); err != nil {
			return false, err
		}
	}
	releaseAt := since.Add(ReleaseAfter)
	left := releaseAt.Sub(now)
	for _, n := range []struct {
		level  string
		before time.Duration
	}{{"72h", 72 * time.Hour}, {"24h", 24 * time.Hour}} {
		if left > n.before || severityNotice(notice) >= severityNotice(n.level) {
			continue
		}
		moved, err := s.store.SetArrearsNotice(ctx, accountID, notice, n.level)
		if err != nil {
			return false, err
		}
		if moved {
			notice = n.level
			s.arrearsNotice(ctx, accountID, -bal.ReceivableFen, *since, releaseAt, n.level)
		}
	}
	return !now.Before(releaseAt), nil
}

func severityNotice(n string) int {
	switch n {
	case "72h":
		return 1
	case "24h":
		return 2
	}
	return 0
}

func (s *Service) arrearsNotice(ctx context.Context, accountID string, owed int64, since, releaseAt time.Time, level string) {
	msg := fmt.Sprintf("The account has owed storage since %s (%s now): unless it is paid, its stopped instances and their data are released at %s, in about %s.",
		since.Format(time.DateOnly), money.Format(owed), releaseAt.Format(time.RFC3339), level)
	ev := &gpurent.AccountEvent{AccountID: accountID, At: s.now().UTC(), Kind: "arrears_release_" + level, Message: msg}
	if err := s.store.AddAccountEvent(ctx, ev); err != nil {
		s.log.Error("recording an arrears notice", "account", accountID, "err", err)
	}
	hook, err := s.store.WebhookURL(ctx, accountID)
	if err != nil || hook == "" || s.notify == nil {
		return
	}
	body, _ := json.Marshal(Alert{AccountID: accountID, Kind: ev.Kind, Message: msg, At: ev.At})
	s.notify(ctx, hook, body)
}
