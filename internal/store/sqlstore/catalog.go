package sqlstore

import (
	"context"
	"database/sql"
	"errors"

	"github.com/gpurent/gpurent"
)

const gpuTypeCols = `id, name, memory_gb, mem_bandwidth_gbs, fp32_tflops, bf16_tflops, fp8_tflops,
nvlink_gbs, peer_to_peer, tdp_watts, pcie_gen, cpu_milli_per_gpu, memory_mib_per_gpu,
price_hourly_fen, price_daily_fen, price_weekly_fen, price_monthly_fen`

func scanGPUType(r rowScanner) (*gpurent.GPUType, error) {
	var t gpurent.GPUType
	err := r.Scan(&t.ID, &t.Name, &t.MemoryGB, &t.MemBandwidthGBs, &t.FP32TFLOPS, &t.BF16TFLOPS, &t.FP8TFLOPS,
		&t.NVLinkGBs, &t.PeerToPeer, &t.TDPWatts, &t.PCIeGen, &t.CPUMilliPerGPU, &t.MemoryMiBPerGPU,
		&t.PriceHourlyFen, &t.PriceDailyFen, &t.PriceWeeklyFen, &t.PriceMonthlyFen)
	return &t, err
}

// UpsertGPUType inserts t or replaces the type with its ID.
func (s *Store) UpsertGPUType(ctx context.Context, t gpurent.GPUType) error {
	if t.ID == "" {
		return gpurent.Errorf(gpurent.CodeInvalid, "GPU type id is required")
	}
	_, err := s.exec(ctx, `INSERT INTO gpu_types (`+gpuTypeCols+`)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (id) DO UPDATE SET
	name = excluded.name, memory_gb = excluded.memory_gb,
	mem_bandwidth_gbs = excluded.mem_bandwidth_gbs, fp32_tflops = excluded.fp32_tflops,
	bf16_tflops = excluded.bf16_tflops, fp8_tflops = excluded.fp8_tflops,
	nvlink_gbs = excluded.nvlink_gbs, peer_to_peer = excluded.peer_to_peer,
	tdp_watts = excluded.tdp_watts, pcie_gen = excluded.pcie_gen,
	cpu_milli_per_gpu = excluded.cpu_milli_per_gpu, memory_mib_per_gpu = excluded.memory_mib_per_gpu,
	price_hourly_fen = excluded.price_hourly_fen, price_daily_fen = excluded.price_daily_fen,
	price_weekly_fen = excluded.price_weekly_fen, price_monthly_fen = excluded.price_monthly_fen`,
		t.ID, t.Name, t.MemoryGB, t.MemBandwidthGBs, t.FP32TFLOPS, t.BF16TFLOPS, t.FP8TFLOPS,
		t.NVLinkGBs, t.PeerToPeer, t.TDPWatts, t.PCIeGen, t.CPUMilliPerGPU, t.MemoryMiBPerGPU,
		t.PriceHourlyFen, t.PriceDailyFen, t.PriceWeeklyFen, t.PriceMonthlyFen)
	return s.dbErr(err, "save GPU type")
}

// GPUType returns the type with id.
func (s *Store) GPUType(ctx context.Context, id string) (*gpurent.GPUType, error) {
	t, err := scanGPUType(s.queryRow(ctx, `SELECT `+gpuTypeCols+` FROM gpu_types WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, notFound("GPU type", id)
	}
	if err != nil {
		return nil, s.dbErr(err, "read GPU type")
	}
	return t, nil
}

// GPUTypes returns every type, by id.
func (s *Store) GPUTypes(ctx context.Context) ([]gpurent.GPUType, error) {
	rows, err := s.query(ctx, `SELECT `+gpuTypeCols+` FROM gpu_types ORDER BY id`)
	if err != nil {
		return nil, s.dbErr(err, "list GPU types")
	}
	defer rows.Close()
	var out []gpurent.GPUType
	for rows.Next() {
		t, err := scanGPUType(rows)
		if err != nil {
			return nil, s.dbErr(err, "list GPU types")
		}
		out = append(out, *t)
	}
	if err := rows.Err(); err != nil {
		return nil, s.dbErr(err, "list GPU types")
	}
	return out, nil
}

// UpsertZone inserts z or replaces the zone with its ID.
func (s *Store) UpsertZone(ctx context.Context, z gpurent.Zone) error {
	if z.ID == "" {
		return gpurent.Errorf(gpurent.CodeInvalid, "zone id is required")
	}
	_, err := s.exec(ctx, `INSERT INTO zones (id, name, region, probe_url) VALUES (?, ?, ?, ?)
ON CONFLICT (id) DO UPDATE SET name = excluded.name, region = excluded.region, probe_url = excluded.probe_url`,
		z.ID, z.Name, z.Region, z.ProbeURL)
	return s.dbErr(err, "save zone")
}

// Zone returns the zone with id.
func (s *Store) Zone(ctx context.Context, id string) (*gpurent.Zone, error) {
	var z gpurent.Zone
	err := s.queryRow(ctx, `SELECT id, name, region, probe_url FROM zones WHERE id = ?`, id).
		Scan(&z.ID, &z.Name, &z.Region, &z.ProbeURL)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, notFound("zone", id)
	}
	if err != nil {
		return nil, s.dbErr(err, "read zone")
	}
	return &z, nil
}

// Zones returns every zone, by id.
func (s *Store) Zones(ctx context.Context) ([]gpurent.Zone, error) {
	rows, err := s.query(ctx, `SELECT id, name, region, probe_url FROM zones ORDER BY id`)
	if err != nil {
		return nil, s.dbErr(err, "list zones")
	}
	defer rows.Close()
	var out []gpurent.Zone
	for rows.Next() {
		var z gpurent.Zone
		if err := rows.Scan(&z.ID, &z.Name, &z.Region, &z.ProbeURL); err != nil {
			return nil, s.dbErr(err, "list zones")
		}
		out = append(out, z)
	}
	if err := rows.Err(); err != nil {
		return nil, s.dbErr(err, "list zones")
	}
	return out, nil
}
