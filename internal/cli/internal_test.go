package cli

import (
	"testing"
	"time"

	"github.com/spf13/cobra"
)

func TestFormatAgo(t *testing.T) {
	now := time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)
	at := func(d time.Duration) *time.Time { v := now.Add(-d); return &v }
	for _, c := range []struct {
		t    *time.Time
		want string
	}{
		{nil, "never"},
		{at(0), "0s ago"},
		{at(-time.Minute), "0s ago"}, // clock skew: never "in the future"
		{at(59 * time.Second), "59s ago"},
		{at(5 * time.Minute), "5m ago"},
		{at(47 * time.Hour), "47h ago"},
		{at(72 * time.Hour), "3d ago"},
	} {
		if got := formatAgo(c.t, now); got != c.want {
			t.Errorf("formatAgo = %q, want %q", got, c.want)
		}
	}
}

func TestFormatResources(t *testing.T) {
	for m, want := range map[int64]string{0: "-", 1500: "1.5 cores", 16000: "16 cores", 250: "0.25 cores"} {
		if got := formatMilliCPU(m); got != want {
			t.Errorf("formatMilliCPU(%d) = %q, want %q", m, got, want)
		}
	}
	for m, want := range map[int64]string{0: "-", 1024: "1 GiB", 262144: "256 GiB", 1536: "1536 MiB"} {
		if got := formatMiB(m); got != want {
			t.Errorf("formatMiB(%d) = %q, want %q", m, got, want)
		}
	}
}

func TestResolveDefaultServer(t *testing.T) {
	a := &app{env: Env{ConfigDir: t.TempDir()}.withDefaults()}
	got, err := a.resolve(&cobra.Command{}, &conn{})
	if err != nil {
		t.Fatal(err)
	}
	if got.server != DefaultServer || got.token != "" {
		t.Fatalf("resolved %q %q, want the default server and no token", got.server, got.token)
	}
}

func TestNormaliseServer(t *testing.T) {
	for in, want := range map[string]string{
		"http://127.0.0.1:8080/":    "http://127.0.0.1:8080",
		"https://gpu.example.com":   "https://gpu.example.com",
		"https://example.com/cloud": "https://example.com/cloud",
	} {
		got, err := normaliseServer(in)
		if err != nil || got != want {
			t.Errorf("normaliseServer(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "127.0.0.1:8080", "ftp://x", "http://", "http://u:p@x", "http://x/?a=1"} {
		if _, err := normaliseServer(bad); err == nil {
			t.Errorf("normaliseServer(%q) accepted", bad)
		}
	}
	if !sameServer("http://Example.com/", "http://example.com") || sameServer("http://a", "http://b") {
		t.Error("sameServer")
	}
}
