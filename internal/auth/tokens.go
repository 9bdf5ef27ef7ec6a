package auth

import (
	"context"

	"github.com/gpurent/gpurent"
)

// ListAPITokens lists the account's API tokens, oldest first (their
// hashes, never their secrets, which are not stored).
func (s *Service) ListAPITokens(ctx context.Context, acc *gpurent.Account) ([]gpurent.Token, error) {
	if acc == nil {
		return nil, errBadToken()
	}
	cs, err := credentials(s.store)
	if err != nil {
		return nil, err
	}
	return cs.ListTokens(ctx, acc.ID, gpurent.TokenAPI)
}

// RevokeAPIToken deletes one of the account's API tokens by id; another
// account's token, or one of another kind, is not found.
func (s *Service) RevokeAPIToken(ctx context.Context, acc *gpurent.Account, id string) error {
	toks, err := s.ListAPITokens(ctx, acc)
	if err != nil {
		return err
	}
	for _, t := range toks {
		if t.ID == id {
			if err := s.store.DeleteToken(ctx, id); err != nil && !gpurent.IsCode(err, gpurent.CodeNotFound) {
				return err
			}
			return nil
		}
	}
	return gpurent.Errorf(gpurent.CodeNotFound, "API token %q not found", id)
}
