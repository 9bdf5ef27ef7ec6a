package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/gpurent/gpurent"
)

// hostChannel is the NOTIFY channel of host generation bumps; the payload
// is the host id.
const hostChannel = "gpurent_host"

var _ gpurent.HostWatcher = (*Store)(nil)

// WatchHosts listens on its own connection (outside the pool) and calls fn
// for every host change notification, until ctx ends. After a lost
// connection it reconnects with a bounded backoff and calls fn("") so the
// caller re-reads what it may have missed.
func (s *Store) WatchHosts(ctx context.Context, fn func(hostID string)) error {
	backoff := 100 * time.Millisecond
	for first := true; ; first = false {
		err := s.listen(ctx, fn, !first)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		_ = err // a lost connection: try again
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(backoff):
		}
		if backoff < 5*time.Second {
			backoff *= 2
		}
	}
}

// listen holds one LISTEN connection until it fails or ctx ends.
func (s *Store) listen(ctx context.Context, fn func(string), reconnected bool) error {
	conn, err := pgx.ConnectConfig(ctx, s.cfg.Copy())
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, "LISTEN "+hostChannel); err != nil {
		return err
	}
	if reconnected {
		fn("") // changes during the outage were not heard
	}
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		fn(n.Payload)
	}
}
