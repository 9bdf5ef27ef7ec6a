package app

import (
	"net"
	"os"
	"strings"
	"testing"
)

// TestAccessListensOnAdvertisedAddress: by default the access server
// listens on the one address the gateway dials, never on every interface
// (where containers on a bridge reach it at any host address), and an
// advertised address that is not this machine's is refused rather than
// widened.
func TestAccessListensOnAdvertisedAddress(t *testing.T) {
	if got := agentCommand().Flags().Lookup("access-listen").DefValue; os.Getenv("GPURENT_ACCESS_LISTEN") == "" && got != AccessListenAdvertised {
		t.Errorf("--access-listen defaults to %q; want %q", got, AccessListenAdvertised)
	}
	for _, tc := range []struct{ advertise, listen string }{
		{"127.0.0.1:2999", "127.0.0.1:2999"},
		{"localhost:2998", ""}, // a loopback address, whichever the resolver answers
	} {
		listen, adv, err := accessListenAddr(tc.advertise)
		if err != nil {
			t.Fatalf("advertise %s: %v", tc.advertise, err)
		}
		host, port, _ := net.SplitHostPort(listen)
		if ip := net.ParseIP(host); ip == nil || ip.IsUnspecified() || (tc.listen != "" && listen != tc.listen) || port != tc.advertise[strings.LastIndex(tc.advertise, ":")+1:] {
			t.Errorf("advertise %s: listen %s; want %s (one address)", tc.advertise, listen, tc.listen)
		}
		if adv != tc.advertise {
			t.Errorf("advertise %s: advertised %s", tc.advertise, adv)
		}
	}
	// Without --access-advertise: this machine's name's address, port 2223.
	listen, adv, err := accessListenAddr("")
	if err != nil {
		t.Fatalf("no advertise: %v", err)
	}
	host, port, _ := net.SplitHostPort(listen)
	if ip := net.ParseIP(host); ip == nil || ip.IsUnspecified() || port != DefaultAccessPort {
		t.Errorf("no advertise: listen %s; want one address, port %s", listen, DefaultAccessPort)
	}
	if name, _ := os.Hostname(); adv != net.JoinHostPort(name, DefaultAccessPort) {
		t.Errorf("no advertise: advertised %s", adv)
	}
	for _, bad := range []string{"0.0.0.0:2223", "[::]:2223", "203.0.113.7:2223", "no-port"} {
		if listen, _, err := accessListenAddr(bad); err == nil {
			t.Errorf("advertise %s: listen %s; want it refused", bad, listen)
		}
	}
}
