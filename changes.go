package gpurent

import "context"

// HostWatcher is implemented by stores that can tell this process, at
// once, when another process changed a host's desired state — PostgreSQL,
// with LISTEN/NOTIFY, where several control-plane replicas share one
// database. Agents' long polls wake on it instead of re-reading hosts.
type HostWatcher interface {
	// WatchHosts calls fn with the id of each host whose generation a
	// committed transaction bumped (in any process, this one included),
	// until ctx ends. It reconnects by itself after a lost connection and
	// calls fn with "" after each reconnect, since changes may have been
	// missed meanwhile. It returns ctx's error.
	WatchHosts(ctx context.Context, fn func(hostID string)) error
}
