package nvml

import (
	"os"
	"path/filepath"
	"testing"
)

func TestTypeID(t *testing.T) {
	cases := []struct {
		name string
		mib  int64
		want string
	}{
		// Names and memory as NVML reports them.
		{"NVIDIA GeForce RTX 4090", 24564, "rtx4090-24g"},
		{"NVIDIA GeForce RTX 4090", 49140, "rtx4090-48g"},
		{"NVIDIA GeForce RTX 4090 D", 24564, "rtx4090d-24g"},
		{"NVIDIA GeForce RTX 3090", 24576, "rtx3090-24g"},
		{"NVIDIA GeForce RTX 5090", 32607, "rtx5090-32g"},
		{"NVIDIA A100-SXM4-80GB", 81920, "a100-80g-sxm"},
		{"NVIDIA A100-SXM4-40GB", 40960, "a100-40g-sxm"},
		{"NVIDIA A100 80GB PCIe", 81920, "a100-80g-pcie"},
		{"NVIDIA A100-PCIE-40GB", 40536, "a100-40g-pcie"},
		{"NVIDIA A800-SXM4-80GB", 81920, "a800-80g-sxm"},
		{"NVIDIA H100 80GB HBM3", 81559, "h100-80g-sxm"},
		{"NVIDIA H100 PCIe", 81559, "h100-80g-pcie"},
		{"NVIDIA H100 NVL", 95830, "h100-94g-nvl"},
		{"NVIDIA H800", 81559, "h800-80g-sxm"},
		{"NVIDIA H200", 143771, "h200-141g-sxm"},
		{"NVIDIA H200 NVL", 143771, "h200-141g-nvl"},
		{"NVIDIA H20", 97871, "h20-96g"},
		{"NVIDIA L40S", 46068, "l40s-48g"},
		{"NVIDIA L40", 46068, "l40-48g"},
		{"NVIDIA L20", 46068, "l20-48g"},
		{"NVIDIA A10", 23028, "a10-24g"},
		{"Tesla T4", 15360, "t4-16g"},
		{"Tesla V100-SXM2-32GB", 32768, "v100-32g-sxm"},
		{"Tesla V100-PCIE-16GB", 16384, "v100-16g-pcie"},
		{"Tesla V100S-PCIE-32GB", 32768, "v100s-32g-pcie"},
		{"NVIDIA B200", 183359, "b200-180g-sxm"},
		// Unknown models and memory that fits no size of the model.
		{"NVIDIA GH200 480GB", 97871, ""},
		{"NVIDIA GeForce RTX 4090", 16000, ""},
		{"NVIDIA H100 80GB HBM3", 0, ""},
		{"", 81920, ""},
		{"Matrox G200", 16, ""},
	}
	for _, c := range cases {
		if got := TypeID(c.name, c.mib); got != c.want {
			t.Errorf("TypeID(%q, %d) = %q, want %q", c.name, c.mib, got, c.want)
		}
	}
}

func TestTopologyGroups(t *testing.T) {
	bus := func(n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = "00000000:" + string(rune('A'+i)) + "0:00.0"
		}
		return out
	}
	// An HGX board: all eight on NVSwitch.
	hgx := topology{busIDs: bus(8), nvswitch: []int{0, 1, 2, 3, 4, 5, 6, 7}}
	for i, g := range hgx.groups() {
		if g != "nvlink:00000000:A0:00.0" {
			t.Errorf("HGX GPU %d group %q", i, g)
		}
	}
	// Two NVLink-bridged pairs of PCIe A100s, plus a 4090 pair under one
	// PCIe switch and a lone card.
	mixed := topology{
		busIDs: bus(7),
		nvlink: [][2]int{{0, 1}, {1, 0}, {2, 3}},
		pcie:   [][2]int{{4, 5}, {0, 4}},
	}
	want := []string{
		"nvlink:00000000:A0:00.0", "nvlink:00000000:A0:00.0",
		"nvlink:00000000:C0:00.0", "nvlink:00000000:C0:00.0",
		"pcie:00000000:E0:00.0", "pcie:00000000:E0:00.0",
		"pci:00000000:G0:00.0",
	}
	got := mixed.groups()
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("GPU %d group %q, want %q", i, got[i], want[i])
		}
	}
	if g := (topology{}).groups(); len(g) != 0 {
		t.Errorf("no GPUs: %v", g)
	}
}

func TestNUMANodeFromSysfs(t *testing.T) {
	root := t.TempDir()
	write := func(id, v string) {
		dir := filepath.Join(root, "bus", "pci", "devices", id)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "numa_node"), []byte(v), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("0000:3b:00.0", "1\n")
	write("0000:18:00.0", "-1\n")
	if n, err := numaNodeFromSysfs(root, "00000000:3B:00.0"); err != nil || n != 1 {
		t.Errorf("node = %d, %v; want 1", n, err)
	}
	if n, err := numaNodeFromSysfs(root, "00000000:18:00.0"); err != nil || n != 0 {
		t.Errorf("node without NUMA = %d, %v; want 0", n, err)
	}
	if _, err := numaNodeFromSysfs(root, "00000000:99:00.0"); err == nil {
		t.Error("missing device: no error")
	}
	if _, err := numaNodeFromSysfs(root, "garbage"); err == nil {
		t.Error("bad bus id: no error")
	}
}
