package sshgate

import (
	"net/netip"
	"testing"

	"golang.org/x/crypto/ssh"
)

// FuzzSessionRequestKind: no session request payload panics the audit
// classification, and what it reads is exactly what the payload marshals.
func FuzzSessionRequestKind(f *testing.F) {
	for _, typ := range []string{"shell", "exec", "subsystem", "env", "pty-req"} {
		f.Add(typ, ssh.Marshal(struct{ S string }{"nvidia-smi"}))
		f.Add(typ, ssh.Marshal(struct{ S string }{"sftp"}))
		f.Add(typ, []byte{0, 0, 0, 9})
	}
	f.Fuzz(func(t *testing.T, typ string, payload []byte) {
		kind, detail, ok := sessionRequestKind(typ, payload)
		if !ok {
			if kind != "" || detail != "" {
				t.Fatalf("%s %q: not ok but kind %q detail %q", typ, payload, kind, detail)
			}
			return
		}
		switch kind {
		case KindShell:
			if typ != "shell" || detail != "" {
				t.Fatalf("%s %q read as a shell (%q)", typ, payload, detail)
			}
		case KindExec, KindSubsystem, KindSFTP:
			want := detail
			if kind == KindSFTP {
				want = "sftp"
			}
			if string(ssh.Marshal(struct{ S string }{want})) != string(payload) {
				t.Fatalf("%s %q read as %s %q", typ, payload, kind, detail)
			}
		default:
			t.Fatalf("%s %q: kind %q", typ, payload, kind)
		}
	})
}

// FuzzForwardRequest: a direct-tcpip channel's extra data never panics the
// parser, and what goes on to the agent only ever names a literal loopback
// address and a TCP port, whatever the customer asked for.
func FuzzForwardRequest(f *testing.F) {
	for _, h := range []string{"127.0.0.1", "localhost", "localhost.", "::1", "[::1]", "10.0.0.1", "169.254.169.254",
		"::ffff:127.0.0.1", "fe80::1%eth0", "127.1", "0.0.0.0", "LOCALHOST", "metadata.google.internal", "[127.0.0.1]"} {
		f.Add(ssh.Marshal(directTCPIPMsg{Host: h, Port: 8888, OrigHost: "203.0.113.9", OrigPort: 5000}))
	}
	f.Add(ssh.Marshal(directTCPIPMsg{Host: "127.0.0.1", Port: 70000}))
	f.Add([]byte{0, 0, 0, 1})
	f.Fuzz(func(t *testing.T, extra []byte) {
		m, _, reason, malformed := parseForward(extra)
		if malformed || reason != "" {
			return
		}
		a, err := netip.ParseAddr(m.Host)
		if err != nil || !a.IsLoopback() || a.Zone() != "" || m.Host != a.String() || m.Port == 0 || m.Port > 65535 {
			t.Fatalf("forward %q goes on to the agent as %q port %d", extra, m.Host, m.Port)
		}
		var back directTCPIPMsg
		if err := ssh.Unmarshal(ssh.Marshal(&m), &back); err != nil || back != m {
			t.Fatalf("forward %+v does not round-trip: %+v, %v", m, back, err)
		}
	})
}
