package sshgate

import (
	"net"
	"strconv"
	"strings"

	"golang.org/x/crypto/ssh"
)

// The parsers of what a customer's client sends the gateway (RFC 4254),
// apart from the relay so that they can be fuzzed.

// sessionRequestKind says what a session request starts, for the audit
// record: shell, exec (detail: the command), sftp, another subsystem
// (detail: its name); ok is false for any other request or a payload that
// cannot be read.
func sessionRequestKind(typ string, payload []byte) (kind Kind, detail string, ok bool) {
	switch typ {
	case "shell":
		return KindShell, "", true
	case "exec":
		var cmd struct{ Command string }
		if ssh.Unmarshal(payload, &cmd) == nil {
			return KindExec, cmd.Command, true
		}
	case "subsystem":
		var sub struct{ Name string }
		if ssh.Unmarshal(payload, &sub) == nil {
			if sub.Name == "sftp" {
				return KindSFTP, "", true
			}
			return KindSubsystem, sub.Name, true
		}
	}
	return "", "", false
}

// parseForward reads a direct-tcpip channel's extra data. It answers the
// message to pass to the agent, its destination rewritten to the literal
// loopback address, and the destination as asked (for the audit record);
// or the reason it is refused, malformed when it cannot be read.
func parseForward(extra []byte) (m directTCPIPMsg, asked, reason string, malformed bool) {
	if err := ssh.Unmarshal(extra, &m); err != nil {
		return m, "", "malformed forwarding request", true
	}
	asked = net.JoinHostPort(m.Host, strconv.FormatUint(uint64(m.Port), 10))
	host, ok := loopbackDestination(m.Host)
	switch {
	case !ok:
		return m, asked, "destination outside the instance", false
	case m.Port == 0 || m.Port > 65535:
		return m, asked, "invalid port", false
	}
	m.Host = host
	return m, asked, "", false
}

// reservedSubsystem reports whether a customer's session request asks
// for a subsystem of the platform's own (agentproto.LogsSubsystem and any
// other name in the "@gpurent.dev" namespace, in any case), or for a
// subsystem whose name cannot be read: the gateway alone asks agents for
// those, over its own connections, and never relays a customer's ask.
func reservedSubsystem(typ string, payload []byte) bool {
	if typ != "subsystem" {
		return false
	}
	var sub struct{ Name string }
	if ssh.Unmarshal(payload, &sub) != nil {
		return true
	}
	return strings.HasSuffix(strings.ToLower(strings.TrimSpace(sub.Name)), "@gpurent.dev")
}
