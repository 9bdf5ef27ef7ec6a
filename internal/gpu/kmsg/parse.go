// Package kmsg reads the NVIDIA driver's Xid reports from the kernel log.
// NVML stops delivering events once a GPU is lost, but the driver still
// writes to the kernel log, in NVIDIA's documented form:
//
//	NVRM: Xid (PCI:0000:3b:00): 79, pid=2511, name=python3, GPU has fallen off the bus.
//
// Parse reads one such line (as /dev/kmsg, dmesg or journald print it);
// a Reader follows /dev/kmsg (or, for tests, a plain file) from its end and
// sends every Xid it finds. The caller maps the PCI bus id to a GPU through
// its device list: BusKey puts NVML's and the kernel's spellings of one
// address into one form.
package kmsg

import (
	"strings"
	"unicode/utf8"
)

// MaxDetail bounds the driver text Parse returns, in bytes.
const MaxDetail = 512

// maxXid bounds the Xid numbers Parse accepts; NVIDIA's catalogue stays in
// the hundreds.
const maxXid = 65535

// xidMarker starts an Xid report in the driver's messages.
const xidMarker = "NVRM: Xid ("

// Parse reads an Xid report from one kernel log line. pciBusID is the
// device's address in BusKey form ("0000:3b:00"), xid the Xid number and
// detail the driver's text after it ("pid=2511, name=python3, GPU has
// fallen off the bus."), valid UTF-8 and at most MaxDetail bytes. Lines
// that are not an Xid report, or are malformed, give ok false.
func Parse(line string) (pciBusID string, xid int, detail string, ok bool) {
	_, rest, found := strings.Cut(line, xidMarker)
	if !found {
		return "", 0, "", false
	}
	addr, rest, found := strings.Cut(rest, "):")
	if !found {
		return "", 0, "", false
	}
	// Drivers print "PCI:0000:3b:00"; old ones "0000:3b:00" alone.
	addr = strings.TrimPrefix(addr, "PCI:")
	pciBusID, ok = BusKey(addr)
	if !ok {
		return "", 0, "", false
	}
	rest = strings.TrimLeft(rest, " ")
	n := 0
	for n < len(rest) && rest[n] >= '0' && rest[n] <= '9' {
		if xid = xid*10 + int(rest[n]-'0'); xid > maxXid {
			return "", 0, "", false
		}
		n++
	}
	if n == 0 {
		return "", 0, "", false
	}
	rest = rest[n:]
	switch {
	case rest == "":
	case rest[0] == ',':
		detail = cleanDetail(rest[1:])
	default:
		return "", 0, "", false // "13a, ..." is no Xid number
	}
	return pciBusID, xid, detail, true
}

// cleanDetail trims the driver's text, makes it valid UTF-8 without
// control characters, and bounds it.
func cleanDetail(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, s)
	s = strings.TrimSpace(s)
	if len(s) > MaxDetail {
		cut := MaxDetail
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = strings.TrimSpace(s[:cut])
	}
	return s
}

// BusKey puts a PCI address in one form, "dddd:bb:dd" in lower case
// (domain, bus, device; no function), so the kernel's "0000:3b:00" and
// NVML's "00000000:3B:00.0" compare equal. ok is false for anything that
// is not a PCI address.
func BusKey(addr string) (key string, ok bool) {
	addr = strings.ToLower(strings.TrimSpace(addr))
	if dot := strings.IndexByte(addr, '.'); dot >= 0 {
		// Function number: one hex digit (0-7).
		if fn := addr[dot+1:]; len(fn) != 1 || !isHex(fn) {
			return "", false
		}
		addr = addr[:dot]
	}
	parts := strings.Split(addr, ":")
	if len(parts) != 3 {
		return "", false
	}
	dom, bus, dev := parts[0], parts[1], parts[2]
	// NVML pads the domain to 8 digits; the kernel prints 4.
	if len(dom) == 8 && strings.HasPrefix(dom, "0000") {
		dom = dom[4:]
	}
	if len(dom) != 4 || len(bus) != 2 || len(dev) != 2 || !isHex(dom) || !isHex(bus) || !isHex(dev) {
		return "", false
	}
	return dom + ":" + bus + ":" + dev, true
}

func isHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return s != ""
}
