package auth

import (
	"context"

	"github.com/gpurent/gpurent"
)

// Accounts lists every account (operators only), as the store orders them.
func (s *Service) Accounts(ctx context.Context, acc *gpurent.Account) ([]gpurent.Account, error) {
	if acc == nil || acc.Role != gpurent.RoleOperator {
		return nil, gpurent.Errorf(gpurent.CodeForbidden, "operators only")
	}
	return s.store.ListAccounts(ctx)
}
