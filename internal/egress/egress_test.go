package egress_test

import (
	"net/netip"
	"os/exec"
	"strings"
	"testing"

	"github.com/gpurent/gpurent/internal/egress"
	"github.com/gpurent/gpurent/internal/testtier"
)

func TestAllowedDecision(t *testing.T) {
	p := egress.Policy{
		Allow:     []netip.Prefix{netip.MustParsePrefix("10.20.0.0/16")},
		HostAddrs: []netip.Addr{netip.MustParseAddr("10.20.0.5"), netip.MustParseAddr("203.0.113.7")},
		DNS:       netip.MustParseAddr("169.254.0.53"),
	}
	for addr, want := range map[string]bool{
		"169.254.169.254": false, // metadata
		"10.1.2.3":        false,
		"172.17.0.1":      false,
		"192.168.1.1":     false,
		"100.64.0.1":      false,
		"127.0.0.1":       false,
		"fd00::1":         false,
		"fe80::1":         false,
		"::ffff:10.0.0.1": false,
		"203.0.113.7":     false, // the host's own public address
		"10.20.0.5":       false, // a host address inside an allowed range
		"10.20.9.9":       true,  // allowed by the operator
		"169.254.0.53":    true,  // the NAT's DNS
		"198.18.0.2":      true,
		"8.8.8.8":         true,
		"2001:db8::1":     true,
	} {
		if got := egress.Allowed(p, netip.MustParseAddr(addr)); got != want {
			t.Errorf("Allowed(%s) = %v, want %v", addr, got, want)
		}
	}
}

func TestParseAllow(t *testing.T) {
	got, err := egress.ParseAllow(" 10.1.0.0/16, 192.168.5.7 ,fd12::/16,")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"10.1.0.0/16", "192.168.5.7/32", "fd12::/16"}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for i := range want {
		if got[i].String() != want[i] {
			t.Errorf("got %v, want %v", got, want)
		}
	}
	if _, err := egress.ParseAllow("10.0.0.0/8,nope"); err == nil {
		t.Error("a bad entry was accepted")
	}
}

// TestRulesetLoadsInANamespace loads the ruleset twice (a replacement) into
// a network namespace of the test's own with the real nft, and reads it back.
func TestRulesetLoadsInANamespace(t *testing.T) {
	testtier.Require(t, "root with nft")
	for _, bin := range []string{"nft", "ip"} {
		if _, err := exec.LookPath(bin); err != nil {
			t.Fatalf("%s is not installed (Debian package nftables / iproute2): %v", bin, err)
		}
	}
	ns := "gpurent-egress-test"
	_ = exec.Command("ip", "netns", "del", ns).Run()
	if out, err := exec.Command("ip", "netns", "add", ns).CombinedOutput(); err != nil {
		t.Fatalf("ip netns add: %v: %s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", ns).Run() })
	load := func(p egress.Policy) string {
		t.Helper()
		cmd := exec.Command("ip", "netns", "exec", ns, "nft", "-f", "-")
		cmd.Stdin = strings.NewReader(egress.Ruleset(p))
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("nft -f: %v: %s\n%s", err, out, egress.Ruleset(p))
		}
		out, err := exec.Command("ip", "netns", "exec", ns, "nft", "list", "ruleset").CombinedOutput()
		if err != nil {
			t.Fatalf("nft list: %v: %s", err, out)
		}
		return string(out)
	}
	first := load(egress.Policy{HostAddrs: []netip.Addr{netip.MustParseAddr("192.0.2.2"), netip.MustParseAddr("fd00::2"), netip.MustParseAddr("::1")}})
	for _, want := range []string{"169.254.0.0/16", "10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "100.64.0.0/10", "fc00::/7", "fe80::",
		"192.0.2.2", "fd00::2", `oif "lo" accept`, "admin-prohibited"} {
		if !strings.Contains(first, want) {
			t.Errorf("ruleset lacks %q:\n%s", want, first)
		}
	}
	second := load(egress.Policy{
		Allow:     []netip.Prefix{netip.MustParsePrefix("10.9.0.0/16"), netip.MustParsePrefix("10.9.1.0/24")},
		HostAddrs: []netip.Addr{netip.MustParseAddr("192.0.2.3")},
		DNS:       netip.MustParseAddr("169.254.0.53"),
	})
	if strings.Count(second, "table inet "+egress.Table) != 1 || strings.Contains(second, "192.0.2.2") {
		t.Errorf("the second load did not replace the first:\n%s", second)
	}
	for _, want := range []string{"10.9.0.0/16", "192.0.2.3", "169.254.0.53 udp dport 53 accept"} {
		if !strings.Contains(second, want) {
			t.Errorf("ruleset lacks %q:\n%s", want, second)
		}
	}
}
