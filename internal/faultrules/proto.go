package faultrules

import (
	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/agentproto"
	"github.com/gpurent/gpurent/internal/gpu"
)

// GPUEventFromProto is the control plane's record of a health event an
// agent of hostID reported, with its time in UTC.
func GPUEventFromProto(hostID string, h agentproto.HealthEvent) gpurent.GPUEvent {
	return gpurent.GPUEvent{
		ID:     h.ID,
		HostID: hostID,
		GPUID:  h.UUID,
		At:     h.At.UTC(),
		Kind:   h.Kind,
		Xid:    h.Xid,
		Detail: h.Detail,
	}
}

// SampleFromProto is the gpu.Sample of a telemetry sample an agent
// reported, for an Assessor on the control plane.
func SampleFromProto(p agentproto.GPUSample) gpu.Sample {
	return gpu.Sample{
		UUID:           p.UUID,
		At:             p.At.UTC(),
		UtilPercent:    p.UtilPercent,
		MemUsedMiB:     p.MemUsedMiB,
		TemperatureC:   p.TemperatureC,
		PowerW:         p.PowerW,
		PowerLimitW:    p.PowerLimitW,
		DefaultPowerW:  p.DefaultPowerW,
		ThrottleMask:   p.ThrottleMask,
		ECCSingleBit:   p.ECCSingleBit,
		ECCDoubleBit:   p.ECCDoubleBit,
		RemapPending:   p.RemapPending,
		RemapFailure:   p.RemapFailure,
		PCIeGen:        p.PCIeGen,
		PCIeWidth:      p.PCIeWidth,
		PCIeMaxGen:     p.PCIeMaxGen,
		PCIeMaxWidth:   p.PCIeMaxWidth,
		NVLinkDown:     p.NVLinkDown,
		XidErrorsTotal: p.XidTotal,
	}
}
