package apiv1

import "time"

// CreateJoinTokenRequest makes a one-time join token for one host
// (operators): POST /api/v1/join-tokens.
type CreateJoinTokenRequest struct {
	Zone string `json:"zone"`
	// Name binds the token to one host name ("" admits any new name).
	Name string `json:"name,omitempty"`
	// TTLSeconds is how long the token lasts (0: 24 hours; 60 s to 30 days).
	TTLSeconds int64 `json:"ttl_seconds,omitempty"`
}

// JoinToken is a join token as listed: never its secret.
type JoinToken struct {
	ID   string `json:"id"`
	Zone string `json:"zone"`
	Name string `json:"name,omitempty"`
	// HostID is set on a token an operator's reset issued for that host.
	HostID    string     `json:"host_id,omitempty"`
	State     string     `json:"state"` // active, used, expired, revoked
	CreatedBy string     `json:"created_by,omitempty"`
	CreatedAt time.Time  `json:"created_at"`
	ExpiresAt time.Time  `json:"expires_at"`
	UsedAt    *time.Time `json:"used_at,omitempty"`
	UsedName  string     `json:"used_name,omitempty"`
	RevokedAt *time.Time `json:"revoked_at,omitempty"`
}

// CreatedJoinToken is a new join token with its secret, shown this once.
type CreatedJoinToken struct {
	JoinToken
	Token string `json:"token"`
}

// JoinTokenList is the answer of GET /api/v1/join-tokens, newest first.
type JoinTokenList struct {
	JoinTokens []JoinToken `json:"join_tokens"`
}

// HostResetRequest resets a host's agent credential: POST
// /api/v1/hosts/{id}/reset (the body may be empty).
type HostResetRequest struct {
	TTLSeconds int64 `json:"ttl_seconds,omitempty"` // of the join token issued (0: 24 hours)
}

// HostReset is the answer of a reset: the host, and the join token that
// re-registers it (its secret shown this once).
type HostReset struct {
	Host      Host             `json:"host"`
	JoinToken CreatedJoinToken `json:"join_token"`
}
