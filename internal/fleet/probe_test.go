package fleet_test

import (
	"net/url"
	"strings"
	"testing"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/fleet"
)

func TestCheckProbeURL(t *testing.T) {
	for _, ok := range []string{"", "https://probe.cd-a.example/probe", "http://10.0.0.7:8090/probe?zone=a", "https://[2001:db8::1]/p"} {
		if err := fleet.CheckProbeURL(ok); err != nil {
			t.Errorf("CheckProbeURL(%q) = %v", ok, err)
		}
	}
	for _, bad := range []string{"/probe", "probe.example", "ftp://p.example/", "https://u:p@p.example/", "https://p.example/#f",
		"https://p.example:0/", "https://p.example:70000/", "https://p_x.example/", "https://a;b.example/", "https://p.example/ x",
		"javascript:alert(1)", "https://" + strings.Repeat("a", 600) + ".example/"} {
		if err := fleet.CheckProbeURL(bad); !gpurent.IsCode(err, gpurent.CodeInvalid) {
			t.Errorf("CheckProbeURL(%q) = %v, want invalid", bad, err)
		}
	}
}

// FuzzCheckProbeURL: an accepted URL's origin is safe to put in a
// Content-Security-Policy source list: no separator, quote or space.
func FuzzCheckProbeURL(f *testing.F) {
	for _, s := range []string{"https://probe.example/probe", "http://127.0.0.1:8090/probe", "https://a;b/", "https://[::1]:1/"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		if fleet.CheckProbeURL(raw) != nil || raw == "" {
			return
		}
		u, err := url.Parse(raw)
		if err != nil {
			t.Fatalf("accepted %q, which does not parse: %v", raw, err)
		}
		if origin := u.Scheme + "://" + u.Host; strings.ContainsAny(origin, " ;,'\"\t\r\n*") {
			t.Fatalf("accepted %q with the origin %q", raw, origin)
		}
	})
}
