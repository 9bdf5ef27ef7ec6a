package access

import "time"

// Kind is what a session does.
type Kind string

// Session kinds.
const (
	KindLogin   Kind = "login"   // a refused login (only ever with Err set)
	KindShell   Kind = "shell"   // a login shell
	KindExec    Kind = "exec"    // a command ("ssh host cmd", legacy scp)
	KindSFTP    Kind = "sftp"    // the sftp subsystem (sftp, scp of OpenSSH 9)
	KindForward Kind = "forward" // a direct-tcpip channel (ssh -L)
)

// Event is one session as the audit log records it. The server reports a
// session twice: when it starts (End zero) and when it ends. A refused
// session or login is reported once, with Err set and Start equal to End.
type Event struct {
	Instance string
	Kind     Kind
	// Command is the command of an exec, "sftp", or the destination
	// ("127.0.0.1:8888") of a forward; empty for a shell.
	Command string
	// TTY reports whether the session had a terminal.
	TTY bool
	// RemoteAddr is the gateway's address; KeyFingerprint the SHA256
	// fingerprint of the key it authenticated with.
	RemoteAddr     string
	KeyFingerprint string
	Start, End     time.Time // UTC
	// ExitCode is the command's exit status; -1 when there is none (a
	// forward, a session cut before its command ended).
	ExitCode int
	// BytesIn came from the client (stdin, upload); BytesOut went to it.
	BytesIn, BytesOut int64
	// Err says why the session was refused or failed; empty when it ran.
	Err string
}
