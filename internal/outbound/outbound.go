// Package outbound is the one HTTP client for URLs that customers give the
// control plane (runway-alert webhooks): it checks every address it dials,
// at dial time, so that neither a name that resolves to an internal address
// nor one that is re-pointed after registration (DNS rebinding) reaches
// loopback, private, link-local, CGNAT, multicast or metadata addresses; it
// follows no redirect, speaks HTTPS only unless the policy allows plain HTTP
// (the demo), bounds each request in time and reads a bounded answer.
package outbound

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"syscall"
	"time"

	"github.com/gpurent/gpurent"
)

// ErrRefused is in the chain of every error that refuses a destination (a
// scheme, an address, a redirect), so that callers can say so in their
// own words.
var ErrRefused = errors.New("outbound: destination refused")

// Policy says which destinations customer URLs may have.
type Policy struct {
	// AllowHTTP admits plain http:// URLs (serve --demo
	// --webhook-allow-http); otherwise only https://.
	AllowHTTP bool
	// TestOnlyAllowLoopback admits loopback addresses (127.0.0.0/8, ::1)
	// so that tests can prove delivery to a local receiver. No flag sets
	// it; a control plane must never.
	TestOnlyAllowLoopback bool
	// Timeout bounds one request, dial to the end of the answer (0: 10 s).
	Timeout time.Duration
	// MaxResponseBytes is how much of an answer is read (0: 64 KiB).
	MaxResponseBytes int64
}

// MaxURLBytes bounds a customer URL's length.
const MaxURLBytes = 2000

// CheckURL checks a customer URL when it is registered: its scheme, and a
// host that is not a literal internal address nor a name for this machine.
// Names are not resolved here (they may change): every dial is checked.
func (p Policy) CheckURL(raw string) error {
	if len(raw) > MaxURLBytes {
		return refused("the URL is longer than %d bytes", MaxURLBytes)
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || u.Opaque != "" {
		return refused("the URL must be an https:// URL with a host")
	}
	if err := p.checkScheme(u.Scheme); err != nil {
		return err
	}
	host := strings.TrimSuffix(strings.ToLower(u.Hostname()), ".")
	if host == "" {
		return refused("the URL must be an https:// URL with a host")
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		return p.CheckAddr(ip)
	}
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return refused("the URL names this machine (localhost)")
	}
	// Numeric forms the C resolver reads as addresses (2130706433,
	// 0x7f.1, 127.1) are no names anyone registers.
	if numeric(host) {
		return refused("the URL's host %q is not a valid address or name", host)
	}
	return nil
}

// numeric reports whether every label of host is a number (decimal, octal
// or 0x hexadecimal), as inet_aton reads them.
func numeric(host string) bool {
	for _, l := range strings.Split(host, ".") {
		digits := "0123456789"
		if rest, ok := strings.CutPrefix(l, "0x"); ok {
			l, digits = rest, "0123456789abcdef"
		}
		if strings.Trim(l, digits) != "" {
			return false
		}
	}
	return true
}

func (p Policy) checkScheme(scheme string) error {
	switch strings.ToLower(scheme) {
	case "https":
		return nil
	case "http":
		if p.AllowHTTP {
			return nil
		}
		return refused("the URL must use https://")
	}
	if p.AllowHTTP {
		return refused("the URL must be an http:// or https:// URL")
	}
	return refused("the URL must use https://")
}

// CheckAddr refuses every address that is not public unicast: loopback
// (unless the policy is a test's), unspecified, private (RFC 1918, IPv6
// ULA), link-local (and with it the 169.254.169.254 metadata service),
// CGNAT (100.64.0.0/10, Alibaba's metadata 100.100.100.200), multicast,
// broadcast and reserved ranges, also in their IPv4-mapped, NAT64 and 6to4
// forms.
func (p Policy) CheckAddr(ip netip.Addr) error {
	ip = ip.Unmap().WithZone("")
	if ip.Is6() {
		// IPv4 embedded in NAT64 (64:ff9b::/96) and 6to4 (2002::/16)
		// addresses reaches that IPv4 address.
		b := ip.As16()
		switch {
		case nat64.Contains(ip):
			return p.CheckAddr(netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]}))
		case sixToFour.Contains(ip):
			return p.CheckAddr(netip.AddrFrom4([4]byte{b[2], b[3], b[4], b[5]}))
		}
	}
	if ip.IsLoopback() && p.TestOnlyAllowLoopback {
		return nil
	}
	if !ip.IsValid() || !ip.IsGlobalUnicast() || ip.IsPrivate() {
		return refused("the address %s is internal (loopback, private, link-local or multicast)", ip)
	}
	for _, r := range reserved {
		if r.Contains(ip) {
			return refused("the address %s is internal or reserved", ip)
		}
	}
	return nil
}

var (
	nat64     = netip.MustParsePrefix("64:ff9b::/96")
	sixToFour = netip.MustParsePrefix("2002::/16")
	// reserved are the ranges IsGlobalUnicast and IsPrivate let through
	// that no customer's receiver has.
	reserved = []netip.Prefix{
		netip.MustParsePrefix("0.0.0.0/8"),
		netip.MustParsePrefix("100.64.0.0/10"), // CGNAT, cloud metadata
		netip.MustParsePrefix("192.0.0.0/24"),  // IETF protocol assignments
		netip.MustParsePrefix("192.0.2.0/24"),  // documentation
		netip.MustParsePrefix("198.18.0.0/15"), // benchmarking
		netip.MustParsePrefix("198.51.100.0/24"),
		netip.MustParsePrefix("203.0.113.0/24"),
		netip.MustParsePrefix("240.0.0.0/4"), // reserved, broadcast
		netip.MustParsePrefix("64:ff9b:1::/48"),
		netip.MustParsePrefix("2001:db8::/32"), // documentation
		netip.MustParsePrefix("2001::/32"),     // Teredo
		netip.MustParsePrefix("100::/64"),      // discard
	}
)

func refused(format string, args ...any) error {
	return gpurent.WrapError(gpurent.CodeInvalid, ErrRefused, format, args...)
}

// Client posts to customer URLs under a Policy. Make it with New; it is
// safe for concurrent use.
type Client struct {
	policy Policy
	hc     *http.Client
}

// New builds the client for p.
func New(p Policy) *Client {
	if p.Timeout <= 0 {
		p.Timeout = 10 * time.Second
	}
	if p.MaxResponseBytes <= 0 {
		p.MaxResponseBytes = 64 << 10
	}
	d := &net.Dialer{Timeout: p.Timeout, Control: p.control}
	tr := &http.Transport{
		Proxy:                  nil, // a proxy would dial for us, unchecked
		DialContext:            d.DialContext,
		TLSHandshakeTimeout:    p.Timeout,
		ResponseHeaderTimeout:  p.Timeout,
		MaxIdleConns:           16,
		MaxIdleConnsPerHost:    1,
		IdleConnTimeout:        30 * time.Second,
		MaxResponseHeaderBytes: 16 << 10,
	}
	return &Client{policy: p, hc: &http.Client{Transport: tr, Timeout: p.Timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return refused("the URL answered with a redirect; redirects are not followed")
		}}}
}

// control checks each address the dialer is about to connect to: after
// resolution, so a name that resolves (or is re-pointed) to an internal
// address is refused.
func (p Policy) control(network, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return refused("cannot check the address %q", address)
	}
	if !strings.HasPrefix(network, "tcp") {
		return refused("network %s is not allowed", network)
	}
	return p.CheckAddr(ap.Addr())
}

// Post sends body to rawURL and returns the answer's status; it reads at
// most the policy's MaxResponseBytes of the answer. A destination the
// policy refuses is an error with ErrRefused in its chain.
func (c *Client) Post(ctx context.Context, rawURL, contentType string, body []byte) (int, error) {
	u, err := url.Parse(rawURL)
	if err != nil || u.Host == "" {
		return 0, refused("the URL must be an https:// URL with a host")
	}
	if err := c.policy.checkScheme(u.Scheme); err != nil {
		return 0, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), bytes.NewReader(body))
	if err != nil {
		return 0, refused("the URL cannot be requested")
	}
	req.Header.Set("Content-Type", contentType)
	req.Header.Set("User-Agent", "gpurent-webhook")
	resp, err := c.hc.Do(req)
	if err != nil {
		return 0, fmt.Errorf("post to %s: %w", u.Redacted(), err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, c.policy.MaxResponseBytes))
	return resp.StatusCode, nil
}
