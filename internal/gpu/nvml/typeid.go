// Package nvml discovers a host's GPUs through NVIDIA's NVML library: a
// gpu.Provider for real hosts. The NVML part needs cgo and the build tag
// "nvml" (CGO_ENABLED=1 go build -tags nvml); any other build gets a New
// that says so, so CGO_ENABLED=0 binaries still build and run on the fake
// provider.
//
// go-nvml has a trap: after a failed nvml.Init, any later NVML call, even
// Shutdown, kills the process. New therefore calls Init once and, when it
// fails, returns an error and never touches NVML again.
//
// The mapping from a device's name and memory to a GPU type id, and the
// grouping of GPUs by topology, are pure Go and build everywhere.
package nvml

import (
	"math"
	"strconv"
	"strings"
)

// family is one GPU model as NVML names it.
type family struct {
	id    string // the type id's model part, "h100"
	sizes []int  // the memory sizes it ships with, GB as marketed
	// formFactor is the default board ("sxm") for models sold in several;
	// "" for models sold in one, whose ids carry none.
	formFactor string
}

// families maps the model token of a device name to its family. A value,
// built per call: the package holds no mutable state.
func families() map[string]family {
	return map[string]family{
		// GeForce. 48 GB RTX 4090 boards exist (re-ballasted), and are
		// rented as such; they get their own id.
		"RTX3090":  {id: "rtx3090", sizes: []int{24}},
		"RTX4090":  {id: "rtx4090", sizes: []int{24, 48}},
		"RTX4090D": {id: "rtx4090d", sizes: []int{24, 48}},
		"RTX5090":  {id: "rtx5090", sizes: []int{32}},
		// Data centre, one board each.
		"T4":   {id: "t4", sizes: []int{16}},
		"A10":  {id: "a10", sizes: []int{24}},
		"A30":  {id: "a30", sizes: []int{24}},
		"A40":  {id: "a40", sizes: []int{48}},
		"L4":   {id: "l4", sizes: []int{24}},
		"L20":  {id: "l20", sizes: []int{48}},
		"L40":  {id: "l40", sizes: []int{48}},
		"L40S": {id: "l40s", sizes: []int{48}},
		"H20":  {id: "h20", sizes: []int{96, 141}},
		// Data centre, several boards: NVML names say "SXM", "PCIe" or
		// "NVL"; H-class names without one are SXM ("NVIDIA H100 80GB
		// HBM3", "NVIDIA H200").
		"V100":  {id: "v100", sizes: []int{16, 32}, formFactor: "sxm"},
		"V100S": {id: "v100s", sizes: []int{32}, formFactor: "pcie"},
		"A100":  {id: "a100", sizes: []int{40, 80}, formFactor: "sxm"},
		"A800":  {id: "a800", sizes: []int{40, 80}, formFactor: "sxm"},
		"H100":  {id: "h100", sizes: []int{80, 94}, formFactor: "sxm"},
		"H800":  {id: "h800", sizes: []int{80}, formFactor: "sxm"},
		"H200":  {id: "h200", sizes: []int{141}, formFactor: "sxm"},
		"B200":  {id: "b200", sizes: []int{180}, formFactor: "sxm"},
	}
}

// sizeTolerance is how far the memory NVML reports may sit from a marketed
// size: GDDR cards with ECC on lose 1/16 of it (an L40S reports 46,068 MiB
// of 48 GB), and HBM parts reserve a little.
const sizeTolerance = 0.10

// TypeID maps a device's NVML name ("NVIDIA H100 80GB HBM3") and total
// memory in MiB to our GPU type id ("h100-80g-sxm"): model, memory size as
// marketed, and the board for models sold in several. A device it does not
// know, or whose memory fits none of its model's sizes, maps to "".
func TypeID(name string, memoryMiB int64) string {
	model, form := parseName(name)
	fam, ok := families()[model]
	if !ok || memoryMiB <= 0 {
		return ""
	}
	size := nearestSize(fam.sizes, memoryMiB)
	if size == 0 {
		return ""
	}
	id := fam.id + "-" + strconv.Itoa(size) + "g"
	if fam.formFactor == "" {
		return id
	}
	if form == "" {
		form = fam.formFactor
		if model == "H100" && size == 94 {
			form = "nvl" // the 94 GB H100 is the NVL board
		}
	}
	return id + "-" + form
}

// parseName finds the model token ("H100", "RTX4090D") and the board
// ("sxm", "pcie", "nvl", or "") in an NVML device name.
func parseName(name string) (model, form string) {
	up := strings.ToUpper(strings.TrimSpace(name))
	fields := strings.FieldsFunc(up, func(r rune) bool { return r == ' ' || r == '-' || r == '_' })
	// Drop the vendor and brand words.
	for len(fields) > 0 {
		switch fields[0] {
		case "NVIDIA", "TESLA", "GEFORCE", "QUADRO":
			fields = fields[1:]
			continue
		}
		break
	}
	if len(fields) == 0 {
		return "", ""
	}
	model = fields[0]
	rest := fields[1:]
	if model == "RTX" && len(rest) > 0 {
		model += rest[0]
		rest = rest[1:]
		if len(rest) > 0 && rest[0] == "D" { // "RTX 4090 D"
			model += "D"
			rest = rest[1:]
		}
	}
	for _, f := range rest {
		switch {
		case strings.HasPrefix(f, "SXM"):
			form = "sxm"
		case f == "PCIE":
			form = "pcie"
		case f == "NVL":
			form = "nvl"
		}
	}
	return model, form
}

// nearestSize picks the marketed size closest to the reported memory, or 0
// when none is within sizeTolerance.
func nearestSize(sizes []int, memoryMiB int64) int {
	best, bestDiff := 0, math.Inf(1)
	for _, gb := range sizes {
		nominal := float64(gb) * 1024
		diff := math.Abs(float64(memoryMiB)-nominal) / nominal
		if diff <= sizeTolerance && diff < bestDiff {
			best, bestDiff = gb, diff
		}
	}
	return best
}
