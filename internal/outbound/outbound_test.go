package outbound_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gpurent/gpurent"
	"github.com/gpurent/gpurent/internal/outbound"
)

func TestCheckURL(t *testing.T) {
	strict := outbound.Policy{}
	demo := outbound.Policy{AllowHTTP: true}
	for _, c := range []struct {
		url    string
		policy outbound.Policy
		ok     bool
	}{
		{"https://hooks.example.com/gpurent", strict, true},
		{"https://8.8.8.8/hook", strict, true},
		{"https://[2606:4700::1111]/hook", strict, true},
		{"http://hooks.example.com/gpurent", strict, false},
		{"http://hooks.example.com/gpurent", demo, true},
		{"ftp://hooks.example.com/x", demo, false},
		{"https://127.0.0.1:8080/hook", strict, false},
		{"http://127.0.0.1:8080/hook", demo, false},
		{"https://localhost/hook", strict, false},
		{"https://api.localhost/hook", strict, false},
		{"https://10.1.2.3/", strict, false},
		{"https://172.16.0.1/", strict, false},
		{"https://192.168.1.1/", strict, false},
		{"https://169.254.169.254/latest/meta-data/", strict, false},
		{"https://100.100.100.200/", strict, false},
		{"https://100.64.0.1/", strict, false},
		{"https://0.0.0.0/", strict, false},
		{"https://224.0.0.1/", strict, false},
		{"https://255.255.255.255/", strict, false},
		{"https://[::1]/", strict, false},
		{"https://[::]/", strict, false},
		{"https://[fd00:ec2::254]/", strict, false},
		{"https://[fe80::1]/", strict, false},
		{"https://[::ffff:127.0.0.1]/", strict, false},
		{"https://[::ffff:169.254.169.254]/", strict, false},
		{"https://[64:ff9b::a9fe:a9fe]/", strict, false},
		{"https://[2002:7f00:1::]/", strict, false},
		{"https://2130706433/", strict, false},
		{"https://0x7f.1/", strict, false},
		{"https:///nohost", strict, false},
		{"https://" + strings.Repeat("a", 2000) + ".example/", strict, false},
	} {
		err := c.policy.CheckURL(c.url)
		if (err == nil) != c.ok {
			t.Errorf("CheckURL(%q, %+v) = %v, want ok %v", c.url, c.policy, err, c.ok)
		}
		if err != nil && (!errors.Is(err, outbound.ErrRefused) || !gpurent.IsCode(err, gpurent.CodeInvalid)) {
			t.Errorf("CheckURL(%q): %v is not an invalid refusal", c.url, err)
		}
	}
	if err := (outbound.Policy{TestOnlyAllowLoopback: true, AllowHTTP: true}).CheckURL("http://127.0.0.1:9/hook"); err != nil {
		t.Errorf("the test policy refused loopback: %v", err)
	}
	if err := (outbound.Policy{TestOnlyAllowLoopback: true}).CheckAddr(netip.MustParseAddr("10.0.0.1")); err == nil {
		t.Error("the test policy admitted a private address")
	}
}

// receiver is a loopback server counting the requests it got.
func receiver(t *testing.T, h http.HandlerFunc) (*httptest.Server, *atomic.Int32) {
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		if h != nil {
			h(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

func post(t *testing.T, c *outbound.Client, url string) (int, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return c.Post(ctx, url, "application/json", []byte(`{}`))
}

// TestPostRefusesInternal: a loopback receiver is refused at dial time, also
// when it is named by a host name that resolves to 127.0.0.1 (the check
// sees the resolved address, as it would after DNS rebinding), and plain
// http is refused outside the demo.
func TestPostRefusesInternal(t *testing.T) {
	srv, hits := receiver(t, nil)
	port := srv.URL[strings.LastIndex(srv.URL, ":")+1:]
	c := outbound.New(outbound.Policy{AllowHTTP: true})
	for _, u := range []string{srv.URL + "/hook", "http://localhost:" + port + "/hook", "http://[::ffff:127.0.0.1]:" + port + "/hook"} {
		if _, err := post(t, c, u); !errors.Is(err, outbound.ErrRefused) {
			t.Errorf("post %s: %v, want a refusal", u, err)
		}
	}
	if _, err := post(t, outbound.New(outbound.Policy{TestOnlyAllowLoopback: true}), srv.URL+"/hook"); !errors.Is(err, outbound.ErrRefused) {
		t.Errorf("plain http outside the demo: %v, want a refusal", err)
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("the loopback receiver got %d requests", n)
	}
}

// TestPostRefusesRedirect: a receiver that redirects (here to another
// loopback server) is not followed, even by the test policy.
func TestPostRefusesRedirect(t *testing.T) {
	inner, innerHits := receiver(t, nil)
	outer, outerHits := receiver(t, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, inner.URL+"/internal", http.StatusTemporaryRedirect)
	})
	c := outbound.New(outbound.Policy{AllowHTTP: true, TestOnlyAllowLoopback: true})
	if _, err := post(t, c, outer.URL+"/hook"); !errors.Is(err, outbound.ErrRefused) {
		t.Fatalf("post through a redirect: %v, want a refusal", err)
	}
	if outerHits.Load() != 1 || innerHits.Load() != 0 {
		t.Errorf("outer got %d, the redirect's target %d; want 1 and 0", outerHits.Load(), innerHits.Load())
	}
}

// TestPostDelivers: under the test policy a loopback receiver gets the
// body, and a huge answer is read only up to the bound.
func TestPostDelivers(t *testing.T) {
	var got atomic.Value
	srv, _ := receiver(t, func(w http.ResponseWriter, r *http.Request) {
		b := make([]byte, 100)
		n, _ := r.Body.Read(b)
		got.Store(string(b[:n]))
		w.WriteHeader(http.StatusAccepted)
		chunk := []byte(strings.Repeat("x", 64<<10))
		for i := 0; i < 64; i++ { // 4 MiB, more than is read
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	})
	c := outbound.New(outbound.Policy{AllowHTTP: true, TestOnlyAllowLoopback: true, MaxResponseBytes: 1024})
	status, err := post(t, c, srv.URL+"/hook")
	if err != nil || status != http.StatusAccepted || got.Load() != "{}" {
		t.Fatalf("post: %d %v, body %v", status, err, got.Load())
	}
}
