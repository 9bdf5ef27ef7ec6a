// Package catalog holds the default GPU types and zones an installation starts
// with, from an embedded data file whose figures name their sources. Prices
// derive from the monthly package price by fixed, documented rules; an
// operator can change every one of them afterwards.
package catalog

import (
	_ "embed"
	"encoding/json"
	"fmt"

	"github.com/gpurent/gpurent"
)

//go:embed gpu_types.json
var defaultData []byte

type fileType struct {
	ID              string  `json:"id"`
	Name            string  `json:"name"`
	MemoryGB        int     `json:"memory_gb"`
	MemBandwidthGBs int     `json:"mem_bandwidth_gbs"`
	FP32TFLOPS      float64 `json:"fp32_tflops"`
	BF16TFLOPS      float64 `json:"bf16_tflops"`
	FP8TFLOPS       float64 `json:"fp8_tflops"`
	NVLinkGBs       int     `json:"nvlink_gbs"`
	PeerToPeer      bool    `json:"peer_to_peer"`
	TDPWatts        int     `json:"tdp_watts"`
	PCIeGen         int     `json:"pcie_gen"`
	CPUMilliPerGPU  int64   `json:"cpu_milli_per_gpu"`
	MemoryMiBPerGPU int64   `json:"memory_mib_per_gpu"`
	PriceMonthlyFen int64   `json:"price_monthly_fen"`
	Source          string  `json:"source"`
}

type fileZone struct {
	ID     string `json:"id"`
	Name   string `json:"name"`
	Region string `json:"region"`
}

type file struct {
	GPUTypes []fileType `json:"gpu_types"`
	Zones    []fileZone `json:"zones"`
}

// Catalog is the default set of GPU types and zones.
type Catalog struct {
	GPUTypes []gpurent.GPUType
	Zones    []gpurent.Zone
}

// Default returns the embedded catalog.
func Default() (Catalog, error) { return Parse(defaultData) }

// Parse reads a catalog file.
func Parse(data []byte) (Catalog, error) {
	var f file
	if err := json.Unmarshal(data, &f); err != nil {
		return Catalog{}, fmt.Errorf("catalog: %w", err)
	}
	var c Catalog
	seen := map[string]bool{}
	for _, t := range f.GPUTypes {
		if t.ID == "" || seen[t.ID] {
			return Catalog{}, fmt.Errorf("catalog: GPU type id %q empty or repeated", t.ID)
		}
		seen[t.ID] = true
		if t.PriceMonthlyFen <= 0 || t.CPUMilliPerGPU <= 0 || t.MemoryMiBPerGPU <= 0 {
			return Catalog{}, fmt.Errorf("catalog: GPU type %s needs a monthly price and per-GPU CPU and memory", t.ID)
		}
		c.GPUTypes = append(c.GPUTypes, gpurent.GPUType{
			ID: t.ID, Name: t.Name, MemoryGB: t.MemoryGB, MemBandwidthGBs: t.MemBandwidthGBs,
			FP32TFLOPS: t.FP32TFLOPS, BF16TFLOPS: t.BF16TFLOPS, FP8TFLOPS: t.FP8TFLOPS,
			NVLinkGBs: t.NVLinkGBs, PeerToPeer: t.PeerToPeer, TDPWatts: t.TDPWatts, PCIeGen: t.PCIeGen,
			CPUMilliPerGPU: t.CPUMilliPerGPU, MemoryMiBPerGPU: t.MemoryMiBPerGPU,
			PriceMonthlyFen: t.PriceMonthlyFen,
			PriceHourlyFen:  HourlyFromMonthly(t.PriceMonthlyFen),
			PriceDailyFen:   ceilDiv(t.PriceMonthlyFen*115, 30*100),
			PriceWeeklyFen:  ceilDiv(t.PriceMonthlyFen*7*108, 30*100),
		})
	}
	for _, z := range f.Zones {
		if z.ID == "" || z.Name == "" {
			return Catalog{}, fmt.Errorf("catalog: zone needs an id and a name")
		}
		c.Zones = append(c.Zones, gpurent.Zone{ID: z.ID, Name: z.Name, Region: z.Region})
	}
	return c, nil
}

// HourlyFromMonthly is the default hourly list price: the monthly package
// price over 720 hours, plus 25%, rounded up to the fen.
func HourlyFromMonthly(monthlyFen int64) int64 { return ceilDiv(monthlyFen*125, 720*100) }

func ceilDiv(a, b int64) int64 { return (a + b - 1) / b }
