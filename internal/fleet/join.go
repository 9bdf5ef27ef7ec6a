package fleet

import (
	"context"
	"time"

	"github.com/gpurent/gpurent"
)

// Join tokens: the one way a host joins the fleet. An operator makes one
// for one host (a zone, optionally a name); it is shown once, stored as
// its SHA-256, expires, and registers one host once.

// DefaultJoinTokenTTL is how long a join token lasts when no TTL is given.
const DefaultJoinTokenTTL = 24 * time.Hour

// MaxJoinTokenTTL bounds a join token's life.
const MaxJoinTokenTTL = 30 * 24 * time.Hour

// joinTokenPrefix starts every join token's secret.
const joinTokenPrefix = "gpj_"

// CreateJoinToken makes a one-time join token for a host in zone (named
// name when name is not ""), valid for ttl (0: DefaultJoinTokenTTL), and
// answers its secret, which is not stored and cannot be shown again.
// Operators only.
func (s *Service) CreateJoinToken(ctx context.Context, acc *gpurent.Account, zone, name string, ttl time.Duration) (string, *gpurent.JoinToken, error) {
	if err := requireOperator(acc); err != nil {
		return "", nil, err
	}
	secret, jt, err := s.MintJoinToken(ctx, zone, name, ttl, acc.ID)
	if err != nil {
		return "", nil, err
	}
	s.cfg.Logger.Info("join token created", "token", jt.ID, "zone", jt.ZoneID, "name", jt.Name, "expires", jt.ExpiresAt, "by", acc.ID)
	return secret, jt, nil
}

// MintJoinToken makes a join token without an operator: for in-process
// agents (the demo, the tests), whose tokens never leave the process.
// createdBy names who asked ("" for none).
func (s *Service) MintJoinToken(ctx context.Context, zone, name string, ttl time.Duration, createdBy string) (string, *gpurent.JoinToken, error) {
	ttl, err := joinTTL(ttl)
	if err != nil {
		return "", nil, err
	}
	if name != "" && !validHostName(name) {
		return "", nil, gpurent.Errorf(gpurent.CodeInvalid, "host name must be 1-63 letters, digits, '.', '_' or '-'")
	}
	if _, err := s.cfg.Store.Zone(ctx, zone); gpurent.IsCode(err, gpurent.CodeNotFound) {
		return "", nil, gpurent.Errorf(gpurent.CodeInvalid, "unknown zone %q", zone)
	} else if err != nil {
		return "", nil, err
	}
	return s.mint(ctx, s.cfg.Store, gpurent.JoinToken{ZoneID: zone, Name: name, CreatedBy: createdBy}, ttl)
}

func (s *Service) mint(ctx context.Context, q gpurent.HostCredentialStore, jt gpurent.JoinToken, ttl time.Duration) (string, *gpurent.JoinToken, error) {
	secret := joinTokenPrefix + gpurent.RandomSecret(32)
	now := s.cfg.Now().UTC()
	jt.Hash, jt.CreatedAt, jt.ExpiresAt = HashToken(secret), now, now.Add(ttl)
	if err := q.CreateJoinToken(ctx, &jt); err != nil {
		return "", nil, err
	}
	return secret, &jt, nil
}

// JoinTokens lists every join token, newest first, without secrets
// (operators only).
func (s *Service) JoinTokens(ctx context.Context, acc *gpurent.Account) ([]gpurent.JoinToken, error) {
	if err := requireOperator(acc); err != nil {
		return nil, err
	}
	return s.cfg.Store.ListJoinTokens(ctx)
}

// RevokeJoinToken revokes an unused join token (operators only).
func (s *Service) RevokeJoinToken(ctx context.Context, acc *gpurent.Account, id string) error {
	if err := requireOperator(acc); err != nil {
		return err
	}
	if err := s.cfg.Store.RevokeJoinToken(ctx, id, s.cfg.Now()); err != nil {
		return err
	}
	s.cfg.Logger.Info("join token revoked", "token", id, "by", acc.ID)
	return nil
}

// ResetHost invalidates a host's agent credential (its agent is refused
// from now on, the host is offline and its GPUs may be claimed by another
// host) and issues a join token that re-registers this host, keeping its
// id and desired state, valid for ttl (0: DefaultJoinTokenTTL). For an
// agent that lost its state directory, a reinstalled host, or a
// credential that leaked. Operators only.
func (s *Service) ResetHost(ctx context.Context, acc *gpurent.Account, hostID string, ttl time.Duration) (string, *gpurent.JoinToken, error) {
	if err := requireOperator(acc); err != nil {
		return "", nil, err
	}
	ttl, err := joinTTL(ttl)
	if err != nil {
		return "", nil, err
	}
	var secret string
	var jt *gpurent.JoinToken
	err = s.cfg.Store.InTx(ctx, func(q gpurent.Queries) error {
		h, err := q.HostByID(ctx, hostID)
		if gpurent.IsCode(err, gpurent.CodeNotFound) {
			return gpurent.Errorf(gpurent.CodeNotFound, "host %q not found", hostID)
		} else if err != nil {
			return err
		}
		if err := q.ResetHostCredential(ctx, h.ID, s.cfg.Now()); err != nil {
			return err
		}
		secret, jt, err = s.mint(ctx, q, gpurent.JoinToken{ZoneID: h.ZoneID, Name: h.Name, HostID: h.ID, CreatedBy: acc.ID}, ttl)
		return err
	})
	if err != nil {
		return "", nil, err
	}
	s.cfg.Logger.Info("host reset: agent credential invalidated, join token issued", "host", hostID, "token", jt.ID, "by", acc.ID)
	s.cfg.OnChange()
	return secret, jt, nil
}

// joinTTL checks a join token's lifetime (0: DefaultJoinTokenTTL).
func joinTTL(ttl time.Duration) (time.Duration, error) {
	if ttl == 0 {
		ttl = DefaultJoinTokenTTL
	}
	if ttl < time.Minute || ttl > MaxJoinTokenTTL {
		return 0, gpurent.Errorf(gpurent.CodeInvalid, "a join token's lifetime must be between 1 minute and %d days", int(MaxJoinTokenTTL/(24*time.Hour)))
	}
	return ttl, nil
}

// Host reads one host with its GPUs (operators only).
func (s *Service) Host(ctx context.Context, acc *gpurent.Account, id string) (*gpurent.Host, error) {
	if err := requireOperator(acc); err != nil {
		return nil, err
	}
	return s.cfg.Store.HostByID(ctx, id)
}
