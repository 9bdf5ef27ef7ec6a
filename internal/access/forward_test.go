package access

import (
	"slices"
	"testing"
)

func TestLoopbackTargets(t *testing.T) {
	t.Parallel()
	ok := map[string][]string{
		"localhost":        {"127.0.0.1:8888", "[::1]:8888"},
		"LocalHost":        {"127.0.0.1:8888", "[::1]:8888"},
		"127.0.0.1":        {"127.0.0.1:8888"},
		"127.8.9.10":       {"127.8.9.10:8888"},
		"::1":              {"[::1]:8888"},
		"[::1]":            {"[::1]:8888"},
		"::ffff:127.0.0.1": {"127.0.0.1:8888"},
	}
	for host, want := range ok {
		got, reason := loopbackTargets(host, 8888)
		if reason != "" || !slices.Equal(got, want) {
			t.Errorf("loopbackTargets(%q) = %v, %q; want %v", host, got, reason, want)
		}
	}
	for _, host := range []string{"10.0.0.1", "0.0.0.0", "::", "192.168.0.1", "169.254.169.254",
		"example.com", "localhost.", "127.0.0.1.nip.io", "fe80::1%eth0", "::ffff:10.0.0.1", ""} {
		if got, reason := loopbackTargets(host, 80); reason == "" {
			t.Errorf("loopbackTargets(%q) = %v; want refused", host, got)
		}
	}
	for _, port := range []uint32{0, 65536, 1 << 31} {
		if _, reason := loopbackTargets("127.0.0.1", port); reason == "" {
			t.Errorf("port %d accepted", port)
		}
	}
}

func TestEnvAllowed(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, value string
		ok          bool
	}{
		{"LANG", "C.UTF-8", true},
		{"LC_ALL", "en_US.UTF-8", true},
		{"TERM", "xterm-256color", true},
		{"LD_PRELOAD", "/tmp/x.so", false},
		{"PATH", "/tmp", false},
		{"LC_X", "a\nb", false},
		{"lc_all", "C", false},
		{"LC_Ä", "C", false},
	} {
		if got := envAllowed(c.name, c.value); got != c.ok {
			t.Errorf("envAllowed(%q, %q) = %v, want %v", c.name, c.value, got, c.ok)
		}
	}
}
