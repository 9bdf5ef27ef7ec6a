package sshgate

import (
	"context"
	"log/slog"
	"time"

	"github.com/gpurent/gpurent"
	"golang.org/x/crypto/ssh"
)

// Directory is what the gateway asks the control plane. The composition root
// implements it over the store.
type Directory interface {
	// AccountForKey returns the account a login with this public key to
	// instanceID (the SSH user name) speaks for: one key may be registered
	// on several accounts, and the instance owner's registration wins. An
	// unknown key is an error with code not_found.
	AccountForKey(ctx context.Context, instanceID string, key ssh.PublicKey) (accountID string, err error)
	// Target says where accountID may reach instanceID: the access address of
	// the agent of the instance's host and that agent's host key. It fails
	// with code not_found or forbidden when the instance does not exist or
	// belongs to another account, conflict when it is not running (the
	// message is shown to the owner), unavailable when its host is away.
	Target(ctx context.Context, accountID, instanceID string) (Target, error)
}

// Target is where a running instance is reached.
type Target struct {
	Addr       string        // host:port of the agent's access server
	HostKey    ssh.PublicKey // the agent's host key, as reported at registration
	InstanceID string
	AccountID  string
}

// Kind says what an audit record is about.
type Kind string

// The kinds of audit records.
const (
	KindLogin     Kind = "login"     // one customer SSH connection, handshake to close
	KindShell     Kind = "shell"     // an interactive shell
	KindExec      Kind = "exec"      // a command (Detail holds it)
	KindSFTP      Kind = "sftp"      // the sftp subsystem (also scp since OpenSSH 9)
	KindSubsystem Kind = "subsystem" // another subsystem (Detail holds its name)
	KindSession   Kind = "session"   // a session channel that never started anything
	KindForward   Kind = "forward"   // a TCP forward (Detail holds host:port)
	KindProxy     Kind = "proxy"     // one connection of the browser port proxy
)

// Record is one audit entry: a session, a forward, a proxied connection or a
// refusal. The gateway hands records to Config.Audit when they end.
type Record struct {
	ID         string
	ConnID     string // the customer connection the record belongs to
	AccountID  string // "" when the key was unknown
	InstanceID string // as the client named it
	Kind       Kind
	Detail     string // command, subsystem, forward destination, key fingerprint
	ClientAddr string
	Start      time.Time // UTC
	End        time.Time // UTC
	ExitStatus int       // -1 when none was reported
	ExitSignal string    // set when the command died of a signal
	BytesIn    int64     // from the customer toward the instance
	BytesOut   int64     // from the instance toward the customer
	// Refusal is empty for what was allowed, otherwise why it was refused.
	// It never says anything about instances of other accounts.
	Refusal string
	// EndReason says why the gateway ended a connection it did not refuse:
	// "idle timeout", "keepalive timeout", "agent connection lost",
	// "shutdown"; empty when the client closed it.
	EndReason string
}

// AuditFunc persists a record. It is called synchronously when a session ends,
// from the goroutine of that session.
type AuditFunc func(ctx context.Context, r Record)

// Config configures a Gateway. HostKey, ClientKey, Directory and Audit are
// required; zero durations and limits take the defaults below.
type Config struct {
	// HostKey is the key customers verify (see LoadOrCreateHostKey). Every
	// control-plane replica must use the same one.
	HostKey ssh.Signer
	// ClientKey is the key the gateway logs in to agents with; agents trust
	// its public half.
	ClientKey ssh.Signer
	Directory Directory
	Audit     AuditFunc

	// MaxSessionsPerAccount bounds the concurrent SSH connections of one
	// account (each may carry several channels). Default 32.
	MaxSessionsPerAccount int
	// MaxChannelsPerConn bounds the concurrent channels of one connection.
	// Default 64.
	MaxChannelsPerConn int
	// IdleTimeout closes a connection through which no channel data moved for
	// this long. Zero disables it.
	IdleTimeout time.Duration
	// KeepaliveInterval is how often keepalive@openssh.com goes to customers
	// and agents; a peer that leaves KeepaliveCountMax of them unanswered is
	// dropped. Default 30s and 3; a negative interval disables keepalives.
	KeepaliveInterval time.Duration
	KeepaliveCountMax int
	// HandshakeTimeout bounds a customer's handshake and authentication,
	// including the lookups and the agent dial. Default 30s.
	HandshakeTimeout time.Duration
	// DialTimeout bounds connecting and logging in to an agent. Default 10s.
	DialTimeout time.Duration
	// UpstreamLinger keeps an agent connection open this long after its last
	// user, for reuse. Default 30s; negative closes it at once.
	UpstreamLinger time.Duration
	// Logger receives operational logs. Default: discard.
	Logger *slog.Logger
	// Now is the clock for audit times. Default time.Now.
	Now func() time.Time
}

// The defaults of Config.
const (
	DefaultMaxSessionsPerAccount = 32
	DefaultMaxChannelsPerConn    = 64
	DefaultKeepaliveInterval     = 30 * time.Second
	DefaultKeepaliveCountMax     = 3
	DefaultHandshakeTimeout      = 30 * time.Second
	DefaultDialTimeout           = 10 * time.Second
	DefaultUpstreamLinger        = 30 * time.Second
)

func (c Config) withDefaults() (Config, error) {
	if c.HostKey == nil {
		return c, gpurent.Errorf(gpurent.CodeInvalid, "ssh gateway: a host key is required")
	}
	if c.ClientKey == nil {
		return c, gpurent.Errorf(gpurent.CodeInvalid, "ssh gateway: a client key for agents is required")
	}
	if c.Directory == nil {
		return c, gpurent.Errorf(gpurent.CodeInvalid, "ssh gateway: a directory is required")
	}
	if c.Audit == nil {
		return c, gpurent.Errorf(gpurent.CodeInvalid, "ssh gateway: an audit sink is required")
	}
	if c.MaxSessionsPerAccount <= 0 {
		c.MaxSessionsPerAccount = DefaultMaxSessionsPerAccount
	}
	if c.MaxChannelsPerConn <= 0 {
		c.MaxChannelsPerConn = DefaultMaxChannelsPerConn
	}
	if c.IdleTimeout < 0 {
		c.IdleTimeout = 0
	}
	if c.KeepaliveInterval == 0 {
		c.KeepaliveInterval = DefaultKeepaliveInterval
	}
	if c.KeepaliveCountMax <= 0 {
		c.KeepaliveCountMax = DefaultKeepaliveCountMax
	}
	if c.HandshakeTimeout <= 0 {
		c.HandshakeTimeout = DefaultHandshakeTimeout
	}
	if c.DialTimeout <= 0 {
		c.DialTimeout = DefaultDialTimeout
	}
	if c.UpstreamLinger == 0 {
		c.UpstreamLinger = DefaultUpstreamLinger
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c, nil
}
