package kmsg

import (
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestParse(t *testing.T) {
	cases := []struct {
		line   string
		bus    string
		xid    int
		detail string
		ok     bool
	}{
		// NVIDIA's documented form (r470 and later drivers print pid and
		// name), as dmesg shows it.
		{"[ 6034.521341] NVRM: Xid (PCI:0000:3b:00): 79, pid=2511, name=python3, GPU has fallen off the bus.",
			"0000:3b:00", 79, "pid=2511, name=python3, GPU has fallen off the bus.", true},
		// The same as /dev/kmsg hands it out: prio,seq,usec,flags;message.
		{"3,1582,6034521341,-;NVRM: Xid (PCI:0000:3b:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.",
			"0000:3b:00", 79, "pid='<unknown>', name=<unknown>, GPU has fallen off the bus.", true},
		// journald / syslog with the kernel: prefix.
		{"Nov 29 10:02:11 cd-a-gpu-01 kernel: NVRM: Xid (PCI:0000:CA:00): 48, pid=91821, name=torchrun, An uncorrectable double bit error (DBE) has been detected on GPU in the framebuffer at partition 6, subpartition 0.",
			"0000:ca:00", 48, "pid=91821, name=torchrun, An uncorrectable double bit error (DBE) has been detected on GPU in the framebuffer at partition 6, subpartition 0.", true},
		{"NVRM: Xid (PCI:0000:18:00): 13, pid=3120, name=python, Graphics SM Warp Exception on (GPC 1, TPC 0, SM 1): Out Of Range Address",
			"0000:18:00", 13, "pid=3120, name=python, Graphics SM Warp Exception on (GPC 1, TPC 0, SM 1): Out Of Range Address", true},
		{"NVRM: Xid (PCI:0000:9b:00): 94, pid=1244, name=train.py, Contained: SM (0x1). RST: No, D-RST: No",
			"0000:9b:00", 94, "pid=1244, name=train.py, Contained: SM (0x1). RST: No, D-RST: No", true},
		{"NVRM: Xid (PCI:0000:9b:00): 154, GPU recovery action changed from 0x0 (None) to 0x1 (GPU Reset Required)",
			"0000:9b:00", 154, "GPU recovery action changed from 0x0 (None) to 0x1 (GPU Reset Required)", true},
		// Older drivers: no "PCI:" and no pid.
		{"NVRM: Xid (0000:03:00): 31, Ch 00000010, engmask 00000101, intr 10000000",
			"0000:03:00", 31, "Ch 00000010, engmask 00000101, intr 10000000", true},
		// A number alone, and trailing noise.
		{"NVRM: Xid (PCI:0000:3b:00): 62", "0000:3b:00", 62, "", true},
		{"NVRM: Xid (PCI:0000:3b:00): 45,  \t ", "0000:3b:00", 45, "", true},
		// Not Xid reports.
		{"NVRM: GPU at PCI:0000:3b:00: GPU-8c1f2a3b-0000-0000-0000-000000000000", "", 0, "", false},
		{"NVRM: GPU 0000:3b:00.0: GPU has fallen off the bus.", "", 0, "", false},
		{"NVRM: loading NVIDIA UNIX x86_64 Kernel Module  550.54.15", "", 0, "", false},
		{"", "", 0, "", false},
		// Malformed.
		{"NVRM: Xid (PCI:0000:3b:00): , GPU has fallen off the bus.", "", 0, "", false},
		{"NVRM: Xid (PCI:0000:3b:00): 79a, x", "", 0, "", false},
		{"NVRM: Xid (PCI:0000:3b:00) 79, x", "", 0, "", false},
		{"NVRM: Xid (PCI:zzzz:3b:00): 79, x", "", 0, "", false},
		{"NVRM: Xid (PCI:0000:3b): 79, x", "", 0, "", false},
		{"NVRM: Xid (PCI:0000:3b:00): 99999999999999999999, x", "", 0, "", false},
	}
	for _, c := range cases {
		bus, xid, detail, ok := Parse(c.line)
		if bus != c.bus || xid != c.xid || detail != c.detail || ok != c.ok {
			t.Errorf("Parse(%q)\n = %q, %d, %q, %v\nwant %q, %d, %q, %v", c.line, bus, xid, detail, ok, c.bus, c.xid, c.detail, c.ok)
		}
	}
}

func TestParseBoundsDetail(t *testing.T) {
	line := "NVRM: Xid (PCI:0000:3b:00): 13, " + strings.Repeat("é", MaxDetail) + "\x01\xff"
	_, _, detail, ok := Parse(line)
	if !ok || len(detail) > MaxDetail || !utf8.ValidString(detail) {
		t.Fatalf("detail of %d bytes, valid %v, ok %v", len(detail), utf8.ValidString(detail), ok)
	}
	_, _, detail, _ = Parse("NVRM: Xid (PCI:0000:3b:00): 13, a\x00b\tc\xffd")
	if detail != "a b c\uFFFDd" {
		t.Errorf("control characters kept: %q", detail)
	}
}

func TestBusKey(t *testing.T) {
	cases := []struct{ in, want string }{
		{"00000000:3B:00.0", "0000:3b:00"}, // NVML
		{"0000:3b:00", "0000:3b:00"},       // kernel log
		{"0000:3b:00.0", "0000:3b:00"},     // sysfs
		{"00000001:0A:1F.0", "0001:0a:1f"},
		{" 0000:CA:00 ", "0000:ca:00"},
		{"0000:3b:00.8x", ""},
		{"3b:00.0", ""},
		{"00010000:3b:00.0", ""}, // a domain past 16 bits: not ours to guess
		{"", ""},
	}
	for _, c := range cases {
		got, ok := BusKey(c.in)
		if got != c.want || ok != (c.want != "") {
			t.Errorf("BusKey(%q) = %q, %v; want %q", c.in, got, ok, c.want)
		}
	}
}

// FuzzParse checks that no line makes Parse panic, and that what it
// accepts is well formed and survives a round trip.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"NVRM: Xid (PCI:0000:3b:00): 79, pid=2511, name=python3, GPU has fallen off the bus.",
		"3,1582,6034521341,-;NVRM: Xid (PCI:0000:3b:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.",
		"NVRM: Xid (0000:03:00): 31, Ch 00000010",
		"NVRM: Xid (PCI:0000:3b:00): 62",
		"NVRM: Xid (PCI:0000:3b:00):",
		"NVRM: Xid (",
		"NVRM: Xid (PCI:0000:3b:00): 13, \xff\x00",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		bus, xid, detail, ok := Parse(line)
		if !ok {
			if bus != "" || xid != 0 || detail != "" {
				t.Fatalf("rejected line gave %q %d %q", bus, xid, detail)
			}
			return
		}
		if key, good := BusKey(bus); !good || key != bus {
			t.Fatalf("bus id %q is not in BusKey form", bus)
		}
		if xid < 0 || xid > maxXid {
			t.Fatalf("xid %d out of range", xid)
		}
		if len(detail) > MaxDetail || !utf8.ValidString(detail) || strings.TrimSpace(detail) != detail {
			t.Fatalf("detail %q is not clean", detail)
		}
		for _, r := range detail {
			if r < 0x20 || r == 0x7f {
				t.Fatalf("detail %q has a control character", detail)
			}
		}
		// Printed back in the driver's form, it parses to the same.
		again := "NVRM: Xid (PCI:" + bus + "): " + strconv.Itoa(xid)
		if detail != "" {
			again += ", " + detail
		}
		b2, x2, d2, ok2 := Parse(again)
		if !ok2 || b2 != bus || x2 != xid || d2 != detail {
			t.Fatalf("round trip of %q gave %q %d %q %v", again, b2, x2, d2, ok2)
		}
	})
}

func BenchmarkParse(b *testing.B) {
	xid := "3,1582,6034521341,-;NVRM: Xid (PCI:0000:3b:00): 79, pid=2511, name=python3, GPU has fallen off the bus."
	other := "6,1583,6034521400,-;nvidia-nvswitch0: SXid (PCI:0000:05:00.0): 12028, Non-fatal, Link 33 egress non-posted PRIV error"
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if i%2 == 0 {
			Parse(xid)
		} else {
			Parse(other)
		}
	}
}
