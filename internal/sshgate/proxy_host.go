package sshgate

import (
	"net"
	"net/http"
	"strconv"
	"strings"

	"github.com/gpurent/gpurent"
)

// Instance ports live on host names of their own, <instance>-<port>.<domain>
// (the ports domain), never on the console's: a port serves the customer's
// code, which must not run in the console's origin nor see or set the
// console's cookies.

// hostName is the lower-case host name of a Host header, without its port
// and without a final dot.
func hostName(host string) string {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	return strings.TrimSuffix(strings.ToLower(host), ".")
}

// parsePortHost splits a Host header of the form <instance>-<port>.<domain>
// (any port after a colon, any case, one final dot allowed). The instance
// must be a valid host label: lower-case letters, digits and inner hyphens.
func parsePortHost(host, domain string) (instance string, port int, ok bool) {
	label, found := strings.CutSuffix(hostName(host), "."+domain)
	if !found || domain == "" || len(label) > 63 || strings.Contains(label, ".") {
		return "", 0, false
	}
	i := strings.LastIndexByte(label, '-')
	if i <= 0 {
		return "", 0, false
	}
	instance, ps := label[:i], label[i+1:]
	if !validLabel(instance) {
		return "", 0, false
	}
	if len(ps) == 0 || len(ps) > 5 || strings.Trim(ps, "0123456789") != "" || ps[0] == '0' {
		return "", 0, false
	}
	port, _ = strconv.Atoi(ps)
	if port < 1 || port > 65535 {
		return "", 0, false
	}
	return instance, port, true
}

// validLabel accepts a DNS label of lower-case letters, digits and inner
// hyphens (what gpurent ids are made of).
func validLabel(s string) bool {
	if s == "" || len(s) > 63 || s[0] == '-' || s[len(s)-1] == '-' {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-') {
			return false
		}
	}
	return true
}

// CheckPortsDomain refuses a ports domain that is not a DNS name, or that
// shares cookies with the console's host name: the same name, a parent of
// it (a port's page could set cookies for the console) or a name under it.
// consoleHost is the host name (or host:port) customers open the console
// on. Sibling names (cloud.example.com and ports.example.com) cannot be told
// apart from safe ones without the public suffix list: the documentation
// asks operators for a registrable domain of its own.
func CheckPortsDomain(domain, consoleHost string) error {
	d := strings.ToLower(domain)
	if len(d) > 200 || d == "" {
		return gpurent.Errorf(gpurent.CodeInvalid, "ports domain %q: want a DNS name such as ports.example-usercontent.com", domain)
	}
	for l := range strings.SplitSeq(d, ".") {
		if !validLabel(l) {
			return gpurent.Errorf(gpurent.CodeInvalid, "ports domain %q: want a DNS name such as ports.example-usercontent.com", domain)
		}
	}
	if net.ParseIP(d) != nil || strings.Trim(strings.ReplaceAll(d, ".", ""), "0123456789") == "" {
		return gpurent.Errorf(gpurent.CodeInvalid, "ports domain %q: an address cannot have names below it", domain)
	}
	c := hostName(consoleHost)
	switch {
	case c == d:
		return gpurent.Errorf(gpurent.CodeInvalid, "ports domain %q is the console's host name: instance ports need host names that share no cookies with the console", domain)
	case strings.HasSuffix(c, "."+d):
		return gpurent.Errorf(gpurent.CodeInvalid, "ports domain %q is a parent of the console's host %q: instance pages could set the console's cookies", domain, c)
	case strings.HasSuffix(d, "."+c):
		return gpurent.Errorf(gpurent.CodeInvalid, "ports domain %q is below the console's host %q: instance pages could set the console's cookies", domain, c)
	}
	return nil
}

// Owns reports whether a request's Host header names the ports domain or a
// name below it: such a request is the proxy's alone (an unknown name there
// gets 404), never the console's or the API's.
func (p *PortProxy) Owns(host string) bool {
	h := hostName(host)
	return h == p.domain || strings.HasSuffix(h, "."+p.domain)
}

// Host is the host name (without port) that serves port of instance.
func (p *PortProxy) Host(instance string, port int) string {
	return instance + "-" + strconv.Itoa(port) + "." + p.domain
}

// Origin is the browser origin of port of instance, e.g.
// http://i-abc-8888.localhost:8080.
func (p *PortProxy) Origin(instance string, port int) string {
	o := p.scheme + "://" + p.Host(instance, port)
	if p.linkPort != "" {
		o += ":" + p.linkPort
	}
	return o
}

// Pattern is the origin of any port, for people: e.g.
// http://<instance>-<port>.localhost:8080.
func (p *PortProxy) Pattern() string {
	o := p.scheme + "://<instance>-<port>." + p.domain
	if p.linkPort != "" {
		o += ":" + p.linkPort
	}
	return o
}

// Source is the Content-Security-Policy source of every port's origin,
// e.g. http://*.localhost:8080.
func (p *PortProxy) Source() string {
	return strings.Replace(p.Pattern(), "<instance>-<port>", "*", 1)
}

// consoleCookie reports whether a cookie name is one of gpurent's (the
// console's gpurent_session, gpurent_csrf, gpurent_lang, the proxy's own
// gpurent_port), also behind the __Host- and __Secure- prefixes.
func consoleCookie(name string) bool {
	n := strings.ToLower(strings.TrimSpace(name))
	n = strings.TrimPrefix(strings.TrimPrefix(n, "__host-"), "__secure-")
	return strings.HasPrefix(n, "gpurent")
}

// filterResponse keeps an instance's answer from acting beyond its own
// host: Set-Cookie of a gpurent cookie is dropped, a Domain attribute is
// removed (the cookie stays host-only: it cannot reach the console or other
// ports), and Service-Worker-Allowed is dropped.
func filterResponse(h http.Header) {
	h.Del("Service-Worker-Allowed")
	lines := h.Values("Set-Cookie")
	if len(lines) == 0 {
		return
	}
	var kept []string
	for _, line := range lines {
		if l, ok := hostOnlyCookie(line); ok {
			kept = append(kept, l)
		}
	}
	h.Del("Set-Cookie")
	for _, l := range kept {
		h.Add("Set-Cookie", l)
	}
}

// hostOnlyCookie rewrites one Set-Cookie line without Domain attributes;
// ok is false for a gpurent cookie, or a line without a name.
func hostOnlyCookie(line string) (string, bool) {
	parts := strings.Split(line, ";")
	name, _, found := strings.Cut(parts[0], "=")
	if !found || strings.TrimSpace(name) == "" || consoleCookie(name) {
		return "", false
	}
	out := parts[:1]
	for _, a := range parts[1:] {
		k, _, _ := strings.Cut(a, "=")
		if strings.EqualFold(strings.TrimSpace(k), "domain") {
			continue
		}
		out = append(out, a)
	}
	return strings.Join(out, ";"), true
}
