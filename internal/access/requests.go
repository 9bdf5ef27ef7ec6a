package access

import "golang.org/x/crypto/ssh"

// The parsers of what a client sends on a session channel and in a
// forwarding request (RFC 4254), apart from the session so that they can be
// fuzzed: each takes the request's payload as the client sent it.

// parsePtyReq reads a pty-req: the terminal name, which must be one TERM
// may hold (envAllowed), and the size, clamped.
func parsePtyReq(payload []byte) (term string, cols, rows uint16, ok bool) {
	var m ptyRequestMsg
	if ssh.Unmarshal(payload, &m) != nil || !envAllowed("TERM", m.Term) {
		return "", 0, 0, false
	}
	return m.Term, clampSize(m.Cols), clampSize(m.Rows), true
}

// parseEnv reads an env request; whether the variable may be set is
// envAllowed's answer.
func parseEnv(payload []byte) (name, value string, ok bool) {
	var m envMsg
	if ssh.Unmarshal(payload, &m) != nil {
		return "", "", false
	}
	return m.Name, m.Value, true
}

// parseWindowChange reads a window-change: the new size, clamped.
func parseWindowChange(payload []byte) (cols, rows uint16, ok bool) {
	var m windowChangeMsg
	if ssh.Unmarshal(payload, &m) != nil {
		return 0, 0, false
	}
	return clampSize(m.Cols), clampSize(m.Rows), true
}

// parseString reads the one string of an exec (the command), subsystem
// (its name) or signal (the signal's name) request.
func parseString(payload []byte) (string, bool) {
	var m stringMsg
	if ssh.Unmarshal(payload, &m) != nil {
		return "", false
	}
	return m.Value, true
}

// parseForward reads a direct-tcpip channel's extra data: the destination
// as sent, and the addresses inside the instance to dial, or the reason it
// is refused (malformed when the payload cannot be read).
func parseForward(extra []byte) (m directTCPIPMsg, targets []string, reason string, malformed bool) {
	if err := ssh.Unmarshal(extra, &m); err != nil {
		return m, nil, "malformed direct-tcpip request", true
	}
	targets, reason = loopbackTargets(m.Host, m.Port)
	return m, targets, reason, false
}
