// Package egress decides what an instance may reach on the network and
// writes it down as an nftables ruleset. It is pure: the Docker runtime
// installs the ruleset inside each instance's own network namespace, where
// the instance (without CAP_NET_ADMIN) cannot change it.
//
// The policy: an instance reaches the internet and nothing else. Its own
// loopback is open (the agent's port forwarding dials in there); the host's
// own addresses are always refused; then the operator's allow-list is
// accepted; then the denied ranges (loopback, link-local and metadata,
// private, shared, multicast and reserved ranges) are refused with an
// "administratively prohibited" reject, so a connection fails at once
// instead of timing out. Everything else goes out through the instance's
// userspace NAT.
package egress

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/gpurent/gpurent"
)

// Table is the nftables table (family inet) the ruleset owns.
const Table = "gpurent_egress"

// Denied are the ranges an instance never reaches unless the operator allows
// them: this network, loopback, private (RFC 1918), shared address space
// (100.64/10, carrier-grade NAT), link-local (169.254/16: cloud metadata),
// IETF protocol assignments, multicast, reserved and broadcast; for IPv6
// the unspecified and loopback addresses, IPv4-mapped and NAT64 prefixes
// (which reach the IPv4 ranges in disguise), unique local (fc00::/7),
// link-local (fe80::/10), site-local and multicast.
func Denied() []netip.Prefix {
	return mustPrefixes(
		"0.0.0.0/8",
		"10.0.0.0/8",
		"100.64.0.0/10",
		"127.0.0.0/8",
		"169.254.0.0/16",
		"172.16.0.0/12",
		"192.0.0.0/24",
		"192.168.0.0/16",
		"224.0.0.0/4",
		"240.0.0.0/4",
		"::/128",
		"::1/128",
		"::ffff:0:0/96",
		"64:ff9b::/96",
		"64:ff9b:1::/48",
		"fc00::/7",
		"fe80::/10",
		"fec0::/10",
		"ff00::/8",
	)
}

func mustPrefixes(ss ...string) []netip.Prefix {
	out := make([]netip.Prefix, len(ss))
	for i, s := range ss {
		out[i] = netip.MustParsePrefix(s)
	}
	return out
}

// Policy is what one instance may reach.
type Policy struct {
	// Allow are ranges the operator opens although Denied lists them (an
	// internal package mirror, a storage network). They never open the
	// host's own addresses.
	Allow []netip.Prefix
	// HostAddrs are the host's own addresses, always refused: the agent's
	// access server, the control plane, anything listening on the host.
	HostAddrs []netip.Addr
	// DNS, when valid, is the address the NAT answers DNS queries on
	// (UDP port 53 only); it is opened before the denied ranges.
	DNS netip.Addr
}

// ParseAllow reads an operator's comma-separated list of CIDRs (or plain
// addresses, taken as one address each).
func ParseAllow(s string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		p, err := netip.ParsePrefix(f)
		if err != nil {
			a, aerr := netip.ParseAddr(f)
			if aerr != nil {
				return nil, gpurent.Errorf(gpurent.CodeInvalid, "egress allow-list: %q is not a CIDR or an address", f)
			}
			p = netip.PrefixFrom(a, a.BitLen())
		}
		out = append(out, p.Masked())
	}
	return out, nil
}

// Ruleset is the nftables script that installs p in a network namespace,
// replacing what an earlier Ruleset installed there, in one transaction.
func Ruleset(p Policy) string {
	v4, v6 := split(Denied())
	a4, a6 := split(p.Allow)
	var h4, h6 []string
	for _, a := range p.HostAddrs {
		a = a.Unmap()
		if !a.IsValid() || a.IsLoopback() || a.IsUnspecified() {
			continue // loopback is the instance's own; covered by Denied via non-lo interfaces
		}
		if a.Is4() {
			h4 = append(h4, a.String())
		} else {
			h6 = append(h6, a.WithZone("").String())
		}
	}
	slices.Sort(h4)
	h4 = slices.Compact(h4)
	slices.Sort(h6)
	h6 = slices.Compact(h6)

	var b strings.Builder
	// Declaring the table first makes the delete succeed on a fresh
	// namespace; the whole script is one atomic transaction.
	fmt.Fprintf(&b, "table inet %s {}\ndelete table inet %s\n", Table, Table)
	fmt.Fprintf(&b, "table inet %s {\n", Table)
	set := func(name, typ string, elems []string) {
		if len(elems) == 0 {
			return
		}
		fmt.Fprintf(&b, "\tset %s {\n\t\ttype %s\n\t\tflags interval\n\t\tauto-merge\n\t\telements = { %s }\n\t}\n", name, typ, strings.Join(elems, ", "))
	}
	set("host4", "ipv4_addr", h4)
	set("host6", "ipv6_addr", h6)
	set("allow4", "ipv4_addr", a4)
	set("allow6", "ipv6_addr", a6)
	set("deny4", "ipv4_addr", v4)
	set("deny6", "ipv6_addr", v6)
	const reject = "reject with icmpx type admin-prohibited"
	b.WriteString("\tchain output {\n\t\ttype filter hook output priority 0; policy accept;\n")
	b.WriteString("\t\toif \"lo\" accept\n")
	if len(h4) > 0 {
		fmt.Fprintf(&b, "\t\tip daddr @host4 %s\n", reject)
	}
	if len(h6) > 0 {
		fmt.Fprintf(&b, "\t\tip6 daddr @host6 %s\n", reject)
	}
	if d := p.DNS.Unmap(); d.IsValid() {
		fam := "ip"
		if d.Is6() {
			fam = "ip6"
		}
		fmt.Fprintf(&b, "\t\t%s daddr %s udp dport 53 accept\n", fam, d)
	}
	if len(a4) > 0 {
		b.WriteString("\t\tip daddr @allow4 accept\n")
	}
	if len(a6) > 0 {
		b.WriteString("\t\tip6 daddr @allow6 accept\n")
	}
	fmt.Fprintf(&b, "\t\tip daddr @deny4 %s\n", reject)
	fmt.Fprintf(&b, "\t\tip6 daddr @deny6 %s\n", reject)
	b.WriteString("\t}\n}\n")
	return b.String()
}

// split sorts prefixes into IPv4 and IPv6 set elements.
func split(ps []netip.Prefix) (v4, v6 []string) {
	for _, p := range ps {
		p = p.Masked()
		if !p.IsValid() {
			continue
		}
		if p.Addr().Is4() {
			v4 = append(v4, p.String())
		} else {
			v6 = append(v6, p.String())
		}
	}
	return v4, v6
}

// Allowed reports whether p lets an instance reach addr: the same decision
// the ruleset makes, for callers that check an address before dialling.
func Allowed(p Policy, addr netip.Addr) bool {
	addr = addr.Unmap()
	if !addr.IsValid() {
		return false
	}
	for _, h := range p.HostAddrs {
		if h.Unmap().WithZone("") == addr.WithZone("") {
			return false
		}
	}
	if p.DNS.IsValid() && p.DNS.Unmap() == addr {
		return true
	}
	for _, a := range p.Allow {
		if a.Contains(addr) {
			return true
		}
	}
	for _, d := range Denied() {
		if d.Contains(addr) {
			return false
		}
	}
	return true
}
