package gpurent

import "time"

// PrefixJoinToken starts a join token's id.
const PrefixJoinToken = "jt"

// JoinToken is a one-time credential an operator creates for one host to
// join the fleet: bound to a zone (and, when Name is set, to one host
// name), valid until ExpiresAt, used at most once. Only its SHA-256 hash
// is stored; the secret is shown once, when it is made.
type JoinToken struct {
	ID     string
	Hash   string // hex SHA-256 of the secret
	ZoneID string
	// Name is the host name the token admits ("" admits any new name).
	Name string
	// HostID is set on a token an operator's reset issued: it re-registers
	// that existing host (keeping its id and desired state) and no other.
	HostID    string
	CreatedBy string // the operator's account id ("" for the demo's in-process agents)
	CreatedAt time.Time
	ExpiresAt time.Time
	UsedAt    *time.Time
	UsedName  string // the host name registered with it
	RevokedAt *time.Time
}

// JoinTokenState says what a join token can still do at now.
func (t *JoinToken) State(now time.Time) string {
	switch {
	case t.UsedAt != nil:
		return "used"
	case t.RevokedAt != nil:
		return "revoked"
	case !now.Before(t.ExpiresAt):
		return "expired"
	}
	return "active"
}
