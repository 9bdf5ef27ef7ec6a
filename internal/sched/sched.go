// Package sched places instances on GPUs. It is a pure function over a
// snapshot of the fleet: no database, no clock, no I/O. The store's atomic
// claim decides races; a loser re-plans on a fresh snapshot.
package sched

// Request is what an instance needs.
type Request struct {
	TypeID    string
	Count     int    // GPUs, >= 1
	ZoneID    string // "" for any zone
	HostID    string // "" for any host; set to restart on the same host
	CPUMilli  int64  // total for the instance
	MemoryMiB int64  // total for the instance
}

// GPU is one GPU of a host in the snapshot.
type GPU struct {
	ID        string
	Index     int
	TypeID    string
	TopoGroup string
	NUMANode  int
	Healthy   bool
	Free      bool
}

// Host is one host in the snapshot, with what is free on it now.
type Host struct {
	ID          string
	ZoneID      string
	Schedulable bool // ready, not cordoned/draining/down
	CPUFree     int64
	MemFreeMiB  int64
	GPUs        []GPU
}

// Placement is where a request goes.
type Placement struct {
	HostID string
	GPUIDs []string
}
