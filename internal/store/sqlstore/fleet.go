package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"time"

	"github.com/gpurent/gpurent"
)

const hostCols = `id, name, zone_id, state, cpu_milli, memory_mib, disk_gib, runtime, agent_version,
agent_token_hash, generation, last_seen_at, registered_at`

// hostReadCols are what reads return: hostCols and the access fields.
const hostReadCols = hostCols + `, access_addr, access_host_key`

func scanHost(r rowScanner) (*gpurent.Host, error) {
	var h gpurent.Host
	var state string
	err := r.Scan(&h.ID, &h.Name, &h.ZoneID, &state, &h.CPUMilli, &h.MemoryMiB, &h.DiskGiB, &h.Runtime,
		&h.AgentVersion, &h.AgentTokenHash, &h.Generation, nullTimeCol{&h.LastSeenAt}, timeCol{&h.RegisteredAt},
		&h.AccessAddr, &h.AccessHostKey)
	h.State = gpurent.HostState(state)
	return &h, err
}

// UpsertHost inserts h, or updates the host with the same Name (zone,
// resources, runtime, agent version, agent token hash) keeping its ID,
// state, generation, last-seen and registration times. h is updated to the
// stored row: its ID, State, Generation, LastSeenAt and RegisteredAt. A new
// host with no State is ready; with no RegisteredAt, registered now.
func (s *Store) UpsertHost(ctx context.Context, h *gpurent.Host) error {
	return s.saveHost(ctx, h, `ON CONFLICT (name) DO UPDATE SET
	zone_id = excluded.zone_id, cpu_milli = excluded.cpu_milli, memory_mib = excluded.memory_mib,
	disk_gib = excluded.disk_gib, runtime = excluded.runtime, agent_version = excluded.agent_version,
	agent_token_hash = excluded.agent_token_hash`)
}

// CreateHost inserts h; a host of the same name is a conflict, never
// updated.
func (s *Store) CreateHost(ctx context.Context, h *gpurent.Host) error {
	err := s.saveHost(ctx, h, `ON CONFLICT (name) DO NOTHING`)
	if errors.Is(err, sql.ErrNoRows) {
		return gpurent.Errorf(gpurent.CodeConflict, "a host called %q exists", h.Name)
	}
	return err
}

// saveHost inserts h with the conflict clause onConflict and reads back
// the stored row's fields (sql.ErrNoRows, unwrapped, when the clause wrote
// nothing).
func (s *Store) saveHost(ctx context.Context, h *gpurent.Host, onConflict string) error {
	if h.Name == "" {
		return gpurent.Errorf(gpurent.CodeInvalid, "host name is required")
	}
	id := h.ID
	if id == "" {
		id = gpurent.NewID(gpurent.PrefixHost)
	}
	state := h.State
	if state == "" {
		state = gpurent.HostReady
	}
	var st string
	err := s.writeRow(ctx, `INSERT INTO hosts (`+hostCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
`+onConflict+`
RETURNING id, state, generation, last_seen_at, registered_at`,
		id, h.Name, h.ZoneID, string(state), h.CPUMilli, h.MemoryMiB, h.DiskGiB, h.Runtime, h.AgentVersion,
		h.AgentTokenHash, h.Generation, s.tsp(h.LastSeenAt), s.ts(nowOr(h.RegisteredAt))).
		Scan(&h.ID, &st, &h.Generation, nullTimeCol{&h.LastSeenAt}, timeCol{&h.RegisteredAt})
	if errors.Is(err, sql.ErrNoRows) {
		return err
	}
	if err != nil {
		return s.dbErr(err, "save host")
	}
	h.State = gpurent.HostState(st)
	return nil
}

const gpuCols = `g.id, g.host_id, g.gpu_index, g.type_id, g.memory_mib, g.health, g.health_reason, g.topo_group,
g.numa_node`

// gpuHolderCols are what a GPU read adds to gpuCols through gpuHolderJoin:
// the open allocation holding the GPU, the open benchmark job holding it,
// and its certification's listing price and state.
const gpuHolderCols = `, a.id, a.instance_id, bh.job_id, gc.price_permille, gc.state`

// gpuHolderJoin adds, to gpus g, the open allocation and the open benchmark
// job holding each GPU, and its certification.
const gpuHolderJoin = ` FROM gpus g
LEFT JOIN allocation_gpus ag ON ag.gpu_id = g.id AND ag.released_at IS NULL
LEFT JOIN allocations a ON a.id = ag.allocation_id
LEFT JOIN bench_holds bh ON bh.gpu_id = g.id AND bh.released_at IS NULL
LEFT JOIN gpu_certs gc ON gc.gpu_id = g.id`

func scanGPU(r rowScanner) (gpurent.GPU, error) {
	var g gpurent.GPU
	var health string
	var allocID, instID, jobID, certState sql.NullString
	var price sql.NullInt64
	err := r.Scan(&g.ID, &g.HostID, &g.Index, &g.TypeID, &g.MemoryMiB, &health, &g.HealthReason, &g.TopoGroup,
		&g.NUMANode, &allocID, &instID, &jobID, &price, &certState)
	g.Health = gpurent.GPUHealth(health)
	g.AllocationID = allocID.String
	g.InstanceID = instID.String
	g.BenchJobID = jobID.String
	g.PricePermille = int(price.Int64)
	g.Degraded = certState.String == string(gpurent.CertDegraded)
	return g, err
}

// SyncHostGPUs upserts the host's GPUs by ID (moving a GPU reported by
// another host to this one only when that host has no agent credential:
// a conflict otherwise, writing nothing) and marks the host's GPUs missing from gpus
// with health "missing". No GPU row is ever deleted. A GPU keeps its health
// reason while its health stays as it was; a new health comes with the
// reason g.HealthReason ("" for none).
func (s *Store) SyncHostGPUs(ctx context.Context, hostID string, gpus []gpurent.GPU) error {
	seen := make(map[string]bool, len(gpus))
	for _, g := range gpus {
		if g.ID == "" {
			return gpurent.Errorf(gpurent.CodeInvalid, "GPU id is required")
		}
		if seen[g.ID] {
			return gpurent.Errorf(gpurent.CodeInvalid, "GPU %s is listed twice", g.ID)
		}
		seen[g.ID] = true
	}
	return s.atomic(ctx, func(st *Store) error {
		ok, err := st.exists(ctx, `SELECT 1 FROM hosts WHERE id = ?`, hostID)
		if err != nil {
			return st.dbErr(err, "sync GPUs")
		}
		if !ok {
			return notFound("host", hostID)
		}
		const batch = 100
		for i := 0; i < len(gpus); i += batch {
			part := gpus[i:min(i+batch, len(gpus))]
			var q strings.Builder
			q.WriteString(`INSERT INTO gpus (id, host_id, gpu_index, type_id, memory_mib, health, health_reason,
	topo_group, numa_node) VALUES `)
			args := make([]any, 0, len(part)*9)
			for j, g := range part {
				if j > 0 {
					q.WriteString(", ")
				}
				q.WriteString("(?, ?, ?, ?, ?, ?, ?, ?, ?)")
				health := g.Health
				if health == "" {
					health = gpurent.GPUHealthy
				}
				args = append(args, g.ID, hostID, g.Index, g.TypeID, g.MemoryMiB, string(health), g.HealthReason,
					g.TopoGroup, g.NUMANode)
			}
			// A GPU another host holds moves only when that host has no
			// agent credential (an operator reset it): the row's WHERE is
			// evaluated on the locked row, so that two hosts racing for one
			// UUID cannot both have it.
			q.WriteString(` ON CONFLICT (id) DO UPDATE SET
	host_id = excluded.host_id, gpu_index = excluded.gpu_index, type_id = excluded.type_id,
	memory_mib = excluded.memory_mib, health = excluded.health,
	health_reason = CASE WHEN gpus.health = excluded.health AND excluded.health_reason = ''
		THEN gpus.health_reason ELSE excluded.health_reason END,
	topo_group = excluded.topo_group, numa_node = excluded.numa_node
WHERE gpus.host_id = excluded.host_id
	OR NOT EXISTS (SELECT 1 FROM hosts o WHERE o.id = gpus.host_id AND o.agent_token_hash <> '')
RETURNING id`)
			rows, err := st.writeRows(ctx, q.String(), args...)
			if err != nil {
				return st.dbErr(err, "sync GPUs")
			}
			written := make(map[string]bool, len(part))
			for rows.Next() {
				var id string
				if err := rows.Scan(&id); err != nil {
					rows.Close()
					return st.dbErr(err, "sync GPUs")
				}
				written[id] = true
			}
			rows.Close()
			if err := rows.Err(); err != nil {
				return st.dbErr(err, "sync GPUs")
			}
			for _, g := range part {
				if !written[g.ID] {
					return gpurent.Errorf(gpurent.CodeConflict,
						"GPU %s belongs to another host; an operator must reset that host before it can move", g.ID)
				}
			}
		}
		// Mark the rest missing. The ids are passed as one bound list per
		// batch of the NOT IN; a host has a handful of GPUs.
		args := []any{string(gpurent.GPUMissing), hostID, string(gpurent.GPUMissing)}
		q := `UPDATE gpus SET health = ?, health_reason = '' WHERE host_id = ? AND health <> ?`
		if len(gpus) > 0 {
			q += ` AND id NOT IN (` + placeholders(len(gpus)) + `)`
			for _, g := range gpus {
				args = append(args, g.ID)
			}
		}
		if _, err := st.exec(ctx, q, args...); err != nil {
			return st.dbErr(err, "sync GPUs")
		}
		return nil
	})
}

// HostByID returns the host with its GPUs, each with its holder.
func (s *Store) HostByID(ctx context.Context, id string) (*gpurent.Host, error) {
	h, err := scanHost(s.queryRow(ctx, `SELECT `+hostReadCols+` FROM hosts WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, notFound("host", id)
	}
	if err != nil {
		return nil, s.dbErr(err, "read host")
	}
	rows, err := s.query(ctx, `SELECT `+gpuCols+gpuHolderCols+gpuHolderJoin+`
WHERE g.host_id = ? ORDER BY g.gpu_index, g.id`, id)
	if err != nil {
		return nil, s.dbErr(err, "read host GPUs")
	}
	defer rows.Close()
	for rows.Next() {
		g, err := scanGPU(rows)
		if err != nil {
			return nil, s.dbErr(err, "read host GPUs")
		}
		h.GPUs = append(h.GPUs, g)
	}
	if err := rows.Err(); err != nil {
		return nil, s.dbErr(err, "read host GPUs")
	}
	return h, nil
}

// HostByAgentTokenHash returns the host whose agent token hashes to hash,
// without its GPUs (it serves every agent request's authentication).
func (s *Store) HostByAgentTokenHash(ctx context.Context, hash string) (*gpurent.Host, error) {
	if hash == "" {
		return nil, gpurent.Errorf(gpurent.CodeNotFound, "host not found")
	}
	h, err := scanHost(s.queryRow(ctx, `SELECT `+hostReadCols+` FROM hosts WHERE agent_token_hash = ?
ORDER BY registered_at, id LIMIT 1`, hash))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, gpurent.Errorf(gpurent.CodeNotFound, "host not found")
	}
	if err != nil {
		return nil, s.dbErr(err, "read host")
	}
	return h, nil
}

// ListHosts returns every host with its GPUs (by index), ordered by name,
// each GPU with the open allocation holding it: two queries whatever the
// fleet's size.
func (s *Store) ListHosts(ctx context.Context) ([]gpurent.Host, error) {
	rows, err := s.query(ctx, `SELECT `+hostReadCols+` FROM hosts ORDER BY name`)
	if err != nil {
		return nil, s.dbErr(err, "list hosts")
	}
	var hosts []gpurent.Host
	for rows.Next() {
		h, err := scanHost(rows)
		if err != nil {
			rows.Close()
			return nil, s.dbErr(err, "list hosts")
		}
		hosts = append(hosts, *h)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, s.dbErr(err, "list hosts")
	}
	byID := make(map[string]int, len(hosts))
	for i := range hosts {
		byID[hosts[i].ID] = i
	}
	rows, err = s.query(ctx, `SELECT `+gpuCols+gpuHolderCols+gpuHolderJoin+`
ORDER BY g.host_id, g.gpu_index, g.id`)
	if err != nil {
		return nil, s.dbErr(err, "list host GPUs")
	}
	defer rows.Close()
	for rows.Next() {
		g, err := scanGPU(rows)
		if err != nil {
			return nil, s.dbErr(err, "list host GPUs")
		}
		// A host inserted between the two queries is not listed; its
		// GPUs are left out with it.
		if i, ok := byID[g.HostID]; ok {
			hosts[i].GPUs = append(hosts[i].GPUs, g)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, s.dbErr(err, "list host GPUs")
	}
	return hosts, nil
}

// SetHostState sets the host's state.
func (s *Store) SetHostState(ctx context.Context, id string, state gpurent.HostState) error {
	if state == "" {
		return gpurent.Errorf(gpurent.CodeInvalid, "host state is required")
	}
	n, err := s.execN(ctx, `UPDATE hosts SET state = ? WHERE id = ?`, string(state), id)
	if err != nil {
		return s.dbErr(err, "set host state")
	}
	if n == 0 {
		return notFound("host", id)
	}
	return nil
}

// TouchHost records that the host's agent was seen at at.
func (s *Store) TouchHost(ctx context.Context, id string, at time.Time) error {
	n, err := s.execN(ctx, `UPDATE hosts SET last_seen_at = ? WHERE id = ?`, s.ts(nowOr(at)), id)
	if err != nil {
		return s.dbErr(err, "touch host")
	}
	if n == 0 {
		return notFound("host", id)
	}
	return nil
}

// BumpHostGeneration increments the host's desired-state generation and
// returns the new value.
func (s *Store) BumpHostGeneration(ctx context.Context, hostID string) (int64, error) {
	var g int64
	err := s.writeRow(ctx, `UPDATE hosts SET generation = generation + 1 WHERE id = ? RETURNING generation`, hostID).Scan(&g)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, notFound("host", hostID)
	}
	if err != nil {
		return 0, s.dbErr(err, "bump host generation")
	}
	if s.d.NotifyHost != "" {
		if _, err := s.exec(ctx, s.d.NotifyHost, hostID); err != nil {
			return 0, s.dbErr(err, "notify host change")
		}
	}
	return g, nil
}
