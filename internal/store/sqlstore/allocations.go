package sqlstore

import (
	"context"
	"sort"
	"time"

	"github.com/gpurent/gpurent"
)

const allocationCols = `id, instance_id, host_id, started_at, ended_at, start_reason, end_reason, price_permille`

func scanAllocation(r rowScanner) (*gpurent.Allocation, error) {
	var a gpurent.Allocation
	err := r.Scan(&a.ID, &a.InstanceID, &a.HostID, timeCol{&a.StartedAt}, nullTimeCol{&a.EndedAt},
		&a.StartReason, &a.EndReason, &a.PricePermille)
	return &a, err
}

// insertAllocation writes the allocation's own row.
func (s *Store) insertAllocation(ctx context.Context, id string, a *gpurent.Allocation, started time.Time) error {
	n, err := s.execN(ctx, `INSERT INTO allocations (`+allocationCols+`) VALUES (?, ?, ?, ?, NULL, ?, '', ?)
ON CONFLICT DO NOTHING`, id, a.InstanceID, a.HostID, s.ts(started), a.StartReason, a.PricePermille)
	if err != nil {
		return s.dbErr(err, "create allocation")
	}
	if n == 0 {
		return gpurent.Errorf(gpurent.CodeConflict, "allocation %q already exists", id)
	}
	return nil
}

// CreateAllocation inserts the open allocation a and one row per GPU. The
// GPUs must exist on a.HostID. If any is held by another open allocation,
// the partial unique index on allocation_gpus refuses it and the call fails
// with CodeConflict having written nothing (its own transaction, or a
// savepoint inside the caller's). A GPU an open benchmark job holds is a
// conflict too: the GPU rows are locked (on PostgreSQL; SQLite's one
// writer serialises anyway) before the holds are read, as CreateBenchJob
// locks them before it reads the allocations, so of the two only one can
// win a GPU. An allocation of no GPUs (an instance in no-GPU mode) holds
// only its host. An empty ID gets a new one, a zero StartedAt now;
// a.GPUIDs is reordered by GPU index, as reads return it. a.PricePermille
// must be within 0..1000.
func (s *Store) CreateAllocation(ctx context.Context, a *gpurent.Allocation) error {
	if a.InstanceID == "" || a.HostID == "" {
		return gpurent.Errorf(gpurent.CodeInvalid, "allocation instance and host are required")
	}
	if a.EndedAt != nil {
		return gpurent.Errorf(gpurent.CodeInvalid, "a new allocation must be open")
	}
	if err := checkPermille(a.PricePermille); err != nil {
		return err
	}
	// Claim GPUs in one global order so that concurrent claims on
	// PostgreSQL wait for each other instead of deadlocking.
	ids := append([]string(nil), a.GPUIDs...)
	sort.Strings(ids)
	for i, id := range ids {
		if id == "" {
			return gpurent.Errorf(gpurent.CodeInvalid, "GPU id is required")
		}
		if i > 0 && ids[i-1] == id {
			return gpurent.Errorf(gpurent.CodeInvalid, "GPU %s is listed twice", id)
		}
	}
	id := a.ID
	if id == "" {
		id = gpurent.NewID(gpurent.PrefixAllocation)
	}
	started := nowOr(a.StartedAt)
	var ordered []string
	err := s.atomic(ctx, func(st *Store) error {
		if len(ids) == 0 {
			return st.insertAllocation(ctx, id, a, started)
		}
		// Lock the GPU rows (in one global order, by id) and check they
		// are on the host; whether a GPU is free of other allocations is
		// decided by the index.
		gpus, err := st.lockGPUs(ctx, a.HostID, ids, "create allocation")
		if err != nil {
			return err
		}
		held, err := st.openBenchHolds(ctx, ids)
		if err != nil {
			return st.dbErr(err, "create allocation")
		}
		for _, g := range ids {
			if _, ok := held[g]; ok {
				return gpurent.Errorf(gpurent.CodeConflict, "GPU %s is being benchmarked", g)
			}
		}
		ordered = make([]string, len(gpus))
		for i, g := range gpus {
			ordered[i] = g.id
		}
		if err := st.insertAllocation(ctx, id, a, started); err != nil {
			return err
		}
		for _, g := range ids {
			n, err := st.execN(ctx, `INSERT INTO allocation_gpus (allocation_id, gpu_id, released_at) VALUES (?, ?, NULL)
ON CONFLICT DO NOTHING`, id, g)
			if err != nil {
				return st.dbErr(err, "create allocation")
			}
			if n == 0 {
				return gpurent.Errorf(gpurent.CodeConflict, "GPU %s is already allocated", g)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	a.ID = id
	a.StartedAt = started
	a.EndReason = ""
	a.GPUIDs = ordered
	return nil
}

// AllocationByID returns the allocation with id.
func (s *Store) AllocationByID(ctx context.Context, id string) (*gpurent.Allocation, error) {
	list, err := s.allocations(ctx, `id = ?`, id)
	if err != nil {
		return nil, err
	}
	if len(list) == 0 {
		return nil, notFound("allocation", id)
	}
	return &list[0], nil
}

// OpenAllocation returns the instance's open allocation; where it has more
// than one (a migration holding its target), the most recently started.
func (s *Store) OpenAllocation(ctx context.Context, instanceID string) (*gpurent.Allocation, error) {
	list, err := s.allocations(ctx, `instance_id = ? AND ended_at IS NULL`, instanceID)
	if err != nil {
		return nil, err
	}
	if len(list) == 0 {
		return nil, gpurent.Errorf(gpurent.CodeNotFound, "instance %q has no open allocation", instanceID)
	}
	return &list[len(list)-1], nil
}

// ListAllocations returns the instance's allocations, oldest first.
func (s *Store) ListAllocations(ctx context.Context, instanceID string) ([]gpurent.Allocation, error) {
	return s.allocations(ctx, `instance_id = ?`, instanceID)
}

// allocations reads the allocations cond selects, by start then insertion,
// with their GPUs by index.
func (s *Store) allocations(ctx context.Context, cond string, args ...any) ([]gpurent.Allocation, error) {
	rows, err := s.query(ctx, `SELECT `+allocationCols+` FROM allocations WHERE `+cond+`
ORDER BY started_at, seq`, args...)
	if err != nil {
		return nil, s.dbErr(err, "read allocations")
	}
	var list []gpurent.Allocation
	for rows.Next() {
		a, err := scanAllocation(rows)
		if err != nil {
			rows.Close()
			return nil, s.dbErr(err, "read allocations")
		}
		list = append(list, *a)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, s.dbErr(err, "read allocations")
	}
	if len(list) == 0 {
		return list, nil
	}
	byID := make(map[string]int, len(list))
	for i := range list {
		byID[list[i].ID] = i
	}
	rows, err = s.query(ctx, `SELECT ag.allocation_id, ag.gpu_id FROM allocation_gpus ag
JOIN gpus g ON g.id = ag.gpu_id
WHERE ag.allocation_id IN (SELECT id FROM allocations WHERE `+cond+`)
ORDER BY ag.allocation_id, g.gpu_index, g.id`, args...)
	if err != nil {
		return nil, s.dbErr(err, "read allocation GPUs")
	}
	defer rows.Close()
	for rows.Next() {
		var aid, gid string
		if err := rows.Scan(&aid, &gid); err != nil {
			return nil, s.dbErr(err, "read allocation GPUs")
		}
		if i, ok := byID[aid]; ok {
			list[i].GPUIDs = append(list[i].GPUIDs, gid)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, s.dbErr(err, "read allocation GPUs")
	}
	return list, nil
}

// EndAllocation ends the allocation at at with reason and releases its GPUs.
// Ending an ended allocation changes nothing.
func (s *Store) EndAllocation(ctx context.Context, id string, at time.Time, reason string) error {
	ended := nowOr(at)
	return s.atomic(ctx, func(st *Store) error {
		n, err := st.execN(ctx, `UPDATE allocations SET ended_at = ?, end_reason = ? WHERE id = ? AND ended_at IS NULL`,
			st.ts(ended), reason, id)
		if err != nil {
			return st.dbErr(err, "end allocation")
		}
		if n == 0 {
			ok, err := st.exists(ctx, `SELECT 1 FROM allocations WHERE id = ?`, id)
			if err != nil {
				return st.dbErr(err, "end allocation")
			}
			if !ok {
				return notFound("allocation", id)
			}
			return nil
		}
		if _, err := st.exec(ctx, `UPDATE allocation_gpus SET released_at = ? WHERE allocation_id = ? AND released_at IS NULL`,
			st.ts(ended), id); err != nil {
			return st.dbErr(err, "end allocation")
		}
		return nil
	})
}
