package api

import (
	"time"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/agent/runtime"
	"github.com/gpurent/gpurent/internal/apiv1"
	"github.com/gpurent/gpurent/internal/fleet"
	"github.com/gpurent/gpurent/internal/rental"
)

// This file is the one place domain values become wire values.

// accountView maps an account; balanceFen is its spendable balance from
// the ledger (the accounts.balance_fen column is no longer the truth).
func accountView(a *gpurent.Account, balanceFen int64) apiv1.Account {
	return apiv1.Account{
		ID:            a.ID,
		Email:         a.Email,
		Name:          a.Name,
		Role:          string(a.Role),
		BalanceFen:    balanceFen,
		CreatedAt:     a.CreatedAt.UTC(),
		AcademicUntil: academicUntil(a),
	}
}

func academicUntil(a *gpurent.Account) *time.Time {
	if a.AcademicUntil == nil {
		return nil
	}
	t := a.AcademicUntil.UTC()
	return &t
}

// instanceView maps a rental detail; events go only into single-instance
// answers.
func instanceView(d *rental.Detail, withEvents bool) apiv1.Instance {
	in := d.Instance
	v := apiv1.Instance{
		ID:          in.ID,
		Name:        in.Name,
		AccountID:   in.AccountID,
		State:       string(in.State),
		StateReason: in.StateReason,
		Image:       in.Image,
		GPUType:     in.TypeID,
		GPUCount:    in.GPUCount,
		Zone:        in.ZoneID,
		HostID:      in.HostID,
		Plan:        string(in.Plan),
		CPUMilli:    in.CPUMilli,
		MemoryMiB:   in.MemoryMiB,
		GPUs:        append([]string{}, in.GPUIDs...),
		CreatedAt:   in.CreatedAt.UTC(),
		UpdatedAt:   in.UpdatedAt.UTC(),
	}
	if d.Host != nil {
		v.HostID = d.Host.ID
		v.HostName = d.Host.Name
		v.Runtime = d.Host.Runtime
		if v.Zone == "" {
			v.Zone = d.Host.ZoneID
		}
	}
	if d.Volume != nil && d.Volume.DeletedAt == nil {
		v.Volume = &apiv1.Volume{ID: d.Volume.ID, SizeGiB: d.Volume.SizeGiB, MountPath: runtime.DataPath}
	}
	if in.StartupCommand != nil {
		c := *in.StartupCommand
		v.StartupCommand = &c
	}
	if st := in.Startup; st != nil {
		v.Startup = &apiv1.StartupStatus{State: st.State, Summary: rental.StartupSummary(st),
			Command: append([]string(nil), st.Command...), StartedAt: utcp(st.StartedAt), ExitedAt: utcp(st.ExitedAt),
			ExitCode: st.ExitCode, Signal: st.Signal, Error: st.Error, ReportedAt: st.ReportedAt.UTC()}
	}
	if withEvents {
		v.Events = make([]apiv1.Event, 0, len(d.Events))
		for _, e := range d.Events {
			v.Events = append(v.Events, apiv1.Event{At: e.At.UTC(), Kind: e.Kind, Message: e.Message})
		}
	}
	return v
}

func instanceListView(ds []rental.Detail) apiv1.InstanceList {
	out := apiv1.InstanceList{Instances: make([]apiv1.Instance, 0, len(ds))}
	for i := range ds {
		out.Instances = append(out.Instances, instanceView(&ds[i], false))
	}
	return out
}

func gpuTypeListView(as []fleet.Availability) apiv1.GPUTypeList {
	out := apiv1.GPUTypeList{GPUTypes: make([]apiv1.GPUType, 0, len(as))}
	for _, a := range as {
		t := a.Type
		v := apiv1.GPUType{
			ID:              t.ID,
			Name:            t.Name,
			MemoryGB:        t.MemoryGB,
			MemBandwidthGBs: t.MemBandwidthGBs,
			FP32TFLOPS:      t.FP32TFLOPS,
			BF16TFLOPS:      t.BF16TFLOPS,
			FP8TFLOPS:       t.FP8TFLOPS,
			NVLinkGBs:       t.NVLinkGBs,
			PeerToPeer:      t.PeerToPeer,
			CPUMilliPerGPU:  t.CPUMilliPerGPU,
			MemoryMiBPerGPU: t.MemoryMiBPerGPU,
			Prices: apiv1.Prices{
				HourlyFen:  t.PriceHourlyFen,
				DailyFen:   t.PriceDailyFen,
				WeeklyFen:  t.PriceWeeklyFen,
				MonthlyFen: t.PriceMonthlyFen,
			},
			Total: a.Total,
			Free:  a.Free,
			Zones: make([]apiv1.ZoneAvailability, 0, len(a.Zones)),
		}
		for _, z := range a.Zones {
			v.Zones = append(v.Zones, apiv1.ZoneAvailability{ZoneID: z.ZoneID, Total: z.Total, Free: z.Free, MaxPerHost: z.MaxPerHost})
		}
		out.GPUTypes = append(out.GPUTypes, v)
	}
	return out
}

func zoneListView(zs []gpurent.Zone) apiv1.ZoneList {
	out := apiv1.ZoneList{Zones: make([]apiv1.Zone, 0, len(zs))}
	for _, z := range zs {
		out.Zones = append(out.Zones, apiv1.Zone{ID: z.ID, Name: z.Name, Region: z.Region, ProbeURL: z.ProbeURL})
	}
	return out
}

// hostView maps a host for operators. Total counts GPUs in service (not
// retired, not missing); free ones are healthy and held by no allocation.
func hostView(h *gpurent.Host) apiv1.Host {
	v := apiv1.Host{
		ID:           h.ID,
		Name:         h.Name,
		Zone:         h.ZoneID,
		State:        string(h.State),
		Runtime:      h.Runtime,
		CPUMilli:     h.CPUMilli,
		MemoryMiB:    h.MemoryMiB,
		AgentVersion: h.AgentVersion,
		GPUs:         make([]apiv1.HostGPU, 0, len(h.GPUs)),
	}
	if h.LastSeenAt != nil {
		t := h.LastSeenAt.UTC()
		v.LastSeenAt = &t
	}
	for _, g := range h.GPUs {
		v.GPUs = append(v.GPUs, apiv1.HostGPU{
			ID: g.ID, Index: g.Index, Type: g.TypeID, Health: string(g.Health),
			TopoGroup: g.TopoGroup, InstanceID: g.InstanceID,
		})
		if g.Health == gpurent.GPURetired || g.Health == gpurent.GPUMissing {
			continue
		}
		v.GPUsTotal++
		if g.Health == gpurent.GPUHealthy && g.AllocationID == "" && g.InstanceID == "" {
			v.GPUsFree++
		}
	}
	return v
}

func hostListView(hs []gpurent.Host) apiv1.HostList {
	out := apiv1.HostList{Hosts: make([]apiv1.Host, 0, len(hs))}
	for i := range hs {
		out.Hosts = append(out.Hosts, hostView(&hs[i]))
	}
	return out
}

// utcp is t in UTC, nil for nil.
func utcp(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}
