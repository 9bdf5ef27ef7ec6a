package sqlstore

import "time"

// ErrorKind is what a driver error means to the store, as a dialect
// classifies it from the driver's error codes (never from message text).
type ErrorKind int

// Error kinds.
const (
	// ErrOther is any error the dialect does not recognise.
	ErrOther ErrorKind = iota
	// ErrUnique is a unique or primary-key violation.
	ErrUnique
	// ErrForeignKey is a foreign-key violation: a row refers to a missing one.
	ErrForeignKey
	// ErrConstraint is another integrity violation (NOT NULL, CHECK).
	ErrConstraint
	// ErrRetry is a serialisation failure or deadlock: the same work may
	// succeed when tried again.
	ErrRetry
	// ErrBusy is a database that stayed locked past its busy timeout.
	ErrBusy
)

// Dialect is what differs between the SQL backends. Everything else — every
// statement, every scan — is shared.
type Dialect struct {
	// Name is what Store.Backend answers: "sqlite" or "postgres".
	Name string
	// NumberedPlaceholders rewrites the '?' placeholders the shared SQL is
	// written with into $1, $2, ... (PostgreSQL).
	NumberedPlaceholders bool
	// Classify tells what a driver error means.
	Classify func(err error) ErrorKind
	// EncodeTime turns a UTC time, already truncated to microseconds, into
	// the value bound for a time column.
	EncodeTime func(t time.Time) any
	// MigrationLock is a statement run first in the migration transaction
	// so that concurrent Opens apply migrations one at a time; "" when the
	// transaction itself already excludes other writers (SQLite's BEGIN
	// IMMEDIATE).
	MigrationLock string
	// NotifyHost, when set, is run (with the host id) after a host's
	// generation is bumped, to tell other processes (PostgreSQL's
	// pg_notify, delivered when the transaction commits).
	NotifyHost string
	// SoleWriter is a database only this process writes to (SQLite: one
	// writer connection of one process). Store.SoleWriter answers it.
	SoleWriter bool
	// CacheStatements keeps statements prepared in the store, for a
	// driver that prepares every statement it is given anew (modernc's
	// SQLite); false where the driver caches them per connection (pgx).
	CacheStatements bool
	// RowLock is the clause a SELECT ends with to lock the rows it reads
	// against other posts until the transaction ends (PostgreSQL: FOR NO
	// KEY UPDATE); "" where write transactions never overlap (SQLite's
	// one writer, BEGIN IMMEDIATE).
	RowLock string
	// StatementAtomicInTx is a database where a failed statement aborts
	// the transaction around it (PostgreSQL): inside a transaction one
	// statement is atomic by itself and needs no savepoint of its own.
	StatementAtomicInTx bool
	// ModifyingCTEs is a database whose WITH clauses may insert and update
	// (PostgreSQL): the batched writes (a post, a report's run events, a
	// pass's debits) go in one statement and one round trip instead of
	// several.
	ModifyingCTEs bool
	// CastValues is a database that needs a VALUES list's placeholders
	// cast to be typed (PostgreSQL).
	CastValues bool
}

// rebind rewrites '?' placeholders for dialects that number them. The shared
// SQL never holds a '?' inside a string literal, so a plain scan is exact.
func (d *Dialect) rebind(query string) string {
	if !d.NumberedPlaceholders {
		return query
	}
	n := 0
	for i := 0; i < len(query); i++ {
		if query[i] == '?' {
			n++
		}
	}
	if n == 0 {
		return query
	}
	b := make([]byte, 0, len(query)+n*3)
	k := 0
	for i := 0; i < len(query); i++ {
		c := query[i]
		if c != '?' {
			b = append(b, c)
			continue
		}
		k++
		b = append(b, '$')
		b = appendInt(b, k)
	}
	return string(b)
}

func appendInt(b []byte, n int) []byte {
	if n >= 10 {
		b = appendInt(b, n/10)
	}
	return append(b, byte('0'+n%10))
}
