package sshgate_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gpurent/gpurent/internal/sshgate"
	"golang.org/x/crypto/ssh"
)

// sink accepts connections, reads each to EOF, then answers one byte: a
// transfer is complete when the byte arrives.
func sink(b *testing.B) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				_, _ = io.Copy(io.Discard, c)
				_, _ = c.Write([]byte{1})
			}()
		}
	}()
	return ln.Addr().String()
}

type halfCloser interface {
	net.Conn
	CloseWrite() error
}

// transfer sends n bytes over c and waits for the sink's answer.
func transfer(b *testing.B, c net.Conn, buf []byte, n int) time.Duration {
	start := time.Now()
	for sent := 0; sent < n; sent += len(buf) {
		if _, err := c.Write(buf); err != nil {
			b.Fatal(err)
		}
	}
	if err := c.(halfCloser).CloseWrite(); err != nil {
		b.Fatal(err)
	}
	if _, err := io.ReadFull(c, make([]byte, 1)); err != nil {
		b.Fatal(err)
	}
	d := time.Since(start)
	c.Close()
	return d
}

// BenchmarkForwardThroughput sends 16 MiB per iteration to a loopback sink
// three ways in the same run: a plain loopback TCP connection, a direct-tcpip
// channel straight to the agent (one SSH hop, what the gateway cannot beat),
// and a direct-tcpip channel through the gateway (customer → gateway → agent).
// It reports MB/s of each and the gateway's share of loopback and of one hop.
func BenchmarkForwardThroughput(b *testing.B) {
	h := newHarness(b, nil)
	dst := sink(b)
	viaGateway := h.mustGoClient(h.ownerSig, instA)
	direct, err := ssh.Dial("tcp", h.agent.addr(), &ssh.ClientConfig{
		User: instA, Auth: []ssh.AuthMethod{ssh.PublicKeys(h.gwClientKey)},
		HostKeyCallback: ssh.FixedHostKey(h.agent.hostKey.PublicKey()),
	})
	if err != nil {
		b.Fatal(err)
	}
	defer direct.Close()
	const n = 16 << 20
	buf := make([]byte, 256<<10)
	var tLoop, tHop, tGw time.Duration
	b.SetBytes(n)
	b.ResetTimer()
	for b.Loop() {
		c, err := net.Dial("tcp", dst)
		if err != nil {
			b.Fatal(err)
		}
		tLoop += transfer(b, c, buf, n)
		c, err = direct.Dial("tcp", dst)
		if err != nil {
			b.Fatal(err)
		}
		tHop += transfer(b, c, buf, n)
		c, err = viaGateway.Dial("tcp", dst)
		if err != nil {
			b.Fatal(err)
		}
		tGw += transfer(b, c, buf, n)
	}
	mbps := func(d time.Duration) float64 { return float64(n) * float64(b.N) / d.Seconds() / 1e6 }
	b.ReportMetric(mbps(tLoop), "loopback-MB/s")
	b.ReportMetric(mbps(tHop), "one-hop-MB/s")
	b.ReportMetric(mbps(tGw), "gateway-MB/s")
	b.ReportMetric(tLoop.Seconds()/tGw.Seconds(), "gateway/loopback")
	b.ReportMetric(tHop.Seconds()/tGw.Seconds(), "gateway/one-hop")
}

// BenchmarkPortProxy fetches a 1 MiB body from the application inside the
// instance through the port proxy and directly over loopback, in the same
// run, and reports the proxy's share of direct throughput.
func BenchmarkPortProxy(b *testing.B) {
	h := newHarness(b, nil)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	_, lnPort, _ := net.SplitHostPort(ln.Addr().String())
	proxy, err := sshgate.NewPortProxy(h.gw, sshgate.ProxyConfig{Secret: []byte(proxySecret), Domain: "localhost", LinkPort: lnPort})
	if err != nil {
		b.Fatal(err)
	}
	defer proxy.Close()
	body := make([]byte, 1<<20)
	app := loopbackHTTP(b, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write(body) }))
	srv := &http.Server{Handler: proxy}
	go srv.Serve(ln)
	defer srv.Close()

	// Port hosts (*.localhost) resolve to the proxy's listener.
	var d net.Dialer
	toProxy := func(ctx context.Context, network, addr string) (net.Conn, error) {
		if strings.HasSuffix(addr, ".localhost:"+lnPort) {
			addr = ln.Addr().String()
		}
		return d.DialContext(ctx, network, addr)
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4, DialContext: toProxy}}
	// Exchange the link for the cookie once.
	noFollow := &http.Client{Transport: &http.Transport{DialContext: toProxy},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := noFollow.Get(proxy.Link(instA, app, accountA, time.Minute))
	if err != nil {
		b.Fatal(err)
	}
	resp.Body.Close()
	var cookie string
	for _, c := range resp.Cookies() {
		if c.Name == sshgate.ProxyCookie {
			cookie = c.Name + "=" + c.Value
		}
	}
	if cookie == "" {
		b.Fatalf("no cookie (%d)", resp.StatusCode)
	}
	fetch := func(url, cookie string) time.Duration {
		start := time.Now()
		req, _ := http.NewRequest("GET", url, nil)
		if cookie != "" {
			req.Header.Set("Cookie", cookie)
		}
		resp, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		n, err := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if err != nil || n != int64(len(body)) || resp.StatusCode != 200 {
			b.Fatalf("GET %s: %d, %d bytes, %v", url, resp.StatusCode, n, err)
		}
		return time.Since(start)
	}
	proxied := proxy.Origin(instA, app) + "/big"
	directURL := fmt.Sprintf("http://127.0.0.1:%d/big", app)
	var tDirect, tProxy time.Duration
	b.SetBytes(int64(len(body)))
	b.ResetTimer()
	for b.Loop() {
		tDirect += fetch(directURL, "")
		tProxy += fetch(proxied, cookie)
	}
	b.ReportMetric(float64(len(body))*float64(b.N)/tDirect.Seconds()/1e6, "direct-MB/s")
	b.ReportMetric(float64(len(body))*float64(b.N)/tProxy.Seconds()/1e6, "proxy-MB/s")
	b.ReportMetric(tDirect.Seconds()/tProxy.Seconds(), "proxy/direct")
}

// BenchmarkSessionSetup measures a customer's login and a command's first
// byte (`ssh gw true`-like, with the Go client): with the agent connection
// reused (the default), with a new agent connection for every customer
// connection, and straight to the agent for reference.
func BenchmarkSessionSetup(b *testing.B) {
	run := func(b *testing.B, dial func() (*ssh.Client, error)) {
		for b.Loop() {
			c, err := dial()
			if err != nil {
				b.Fatal(err)
			}
			s, err := c.NewSession()
			if err != nil {
				b.Fatal(err)
			}
			out, err := s.Output("echo ok")
			if err != nil || !strings.HasPrefix(string(out), "ok") {
				b.Fatalf("%q %v", out, err)
			}
			c.Close()
		}
	}
	b.Run("gateway-reuse", func(b *testing.B) {
		h := newHarness(b, nil)
		run(b, func() (*ssh.Client, error) { return h.goClient(h.ownerSig, instA) })
	})
	b.Run("gateway-no-reuse", func(b *testing.B) {
		h := newHarness(b, func(c *sshgate.Config) { c.UpstreamLinger = -1 })
		run(b, func() (*ssh.Client, error) { return h.goClient(h.ownerSig, instA) })
	})
	b.Run("agent-direct", func(b *testing.B) {
		h := newHarness(b, nil)
		run(b, func() (*ssh.Client, error) {
			return ssh.Dial("tcp", h.agent.addr(), &ssh.ClientConfig{
				User: instA, Auth: []ssh.AuthMethod{ssh.PublicKeys(h.gwClientKey)},
				HostKeyCallback: ssh.FixedHostKey(h.agent.hostKey.PublicKey()),
			})
		})
	})
}
