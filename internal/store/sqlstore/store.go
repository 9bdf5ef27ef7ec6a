// Package sqlstore implements gpurent.Store once, over database/sql, for
// every SQL backend. A small Dialect holds what differs between SQLite and
// PostgreSQL (placeholders, how driver errors are classified, how times are
// bound, how migrations are serialised); the SQL itself is hand-written and
// shared.
//
// The rules the contract promises are enforced by the database: uniqueness
// by unique indexes (conflicting inserts use ON CONFLICT DO NOTHING, so a
// conflict never aborts a surrounding PostgreSQL transaction), at most one
// open allocation per GPU by a partial unique index, and optimistic
// concurrency by conditional updates.
//
// Times are stored in UTC at microsecond precision (PostgreSQL's timestamptz
// precision, used by both backends so they behave the same); every time
// written is normalised that way and the caller's struct is updated to the
// stored value, so what was written compares equal to what is read back.
package sqlstore

import (
	"container/list"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/gpurent/gpurent"
)

// querier is what *sql.DB and *sql.Tx have in common.
type querier interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// Store is a gpurent.Store over database/sql. The value returned by New runs
// each call on its own; the value handed to an InTx callback runs every call
// inside that transaction.
type Store struct {
	d      *Dialect
	read   *sql.DB // the pool reads use outside a transaction
	write  *sql.DB // the pool writes and transactions use
	tx     *sql.Tx // set inside InTx
	closer func() error
	// readStmts and writeStmts keep prepared statements of each pool (nil
	// where the driver caches them itself: pgx does, per connection).
	readStmts, writeStmts *stmtCache
}

var _ gpurent.Store = (*Store)(nil)

// New makes a store. read serves reads made outside a transaction; write
// serves every write and every transaction (for SQLite, a pool of exactly one
// connection; for PostgreSQL, the same pool as read). closer, if not nil, is
// what Close runs; otherwise Close closes both pools.
func New(d Dialect, read, write *sql.DB, closer func() error) *Store {
	if closer == nil {
		closer = func() error {
			err := write.Close()
			if read != write {
				err = errors.Join(err, read.Close())
			}
			return err
		}
	}
	st := &Store{d: &d, read: read, write: write, closer: closer}
	if d.CacheStatements {
		// The driver prepares every statement it is given anew: keep
		// them prepared.
		st.writeStmts = newStmtCache(write, stmtCacheSize)
		st.readStmts = st.writeStmts
		if read != write {
			st.readStmts = newStmtCache(read, stmtCacheSize)
		}
	}
	return st
}

// Backend names the database.
func (s *Store) Backend() string { return s.d.Name }

// SoleWriter reports whether this process is the database's only writer
// (the dialect's SoleWriter).
func (s *Store) SoleWriter() bool { return s.d.SoleWriter }

// Ping checks that both pools reach the database.
func (s *Store) Ping(ctx context.Context) error {
	if err := s.write.PingContext(ctx); err != nil {
		return gpurent.WrapError(gpurent.CodeUnavailable, err, "database unreachable")
	}
	if s.read != s.write {
		if err := s.read.PingContext(ctx); err != nil {
			return gpurent.WrapError(gpurent.CodeUnavailable, err, "database unreachable")
		}
	}
	return nil
}

// Close closes the pools. A store handed to an InTx callback cannot be
// closed.
func (s *Store) Close() error {
	if s.tx != nil {
		return gpurent.Errorf(gpurent.CodeInternal, "close called inside a transaction")
	}
	s.writeStmts.closeAll()
	if s.readStmts != s.writeStmts {
		s.readStmts.closeAll()
	}
	return s.closer()
}

// InTx runs fn in one write transaction: fn's Queries see its own writes,
// and an error or a panic from fn rolls everything back (the panic goes on
// after the rollback). Called on the Queries of an enclosing InTx, it nests
// as a savepoint. fn must make every call through the Queries it is given:
// on SQLite a write through the outer store would wait for the one writer
// connection this transaction holds.
func (s *Store) InTx(ctx context.Context, fn func(q gpurent.Queries) error) error {
	return s.atomic(ctx, func(st *Store) error { return fn(st) })
}

// atomic runs fn so that either all its writes stay or none do: in a new
// transaction, or, inside one already, under a savepoint.
func (s *Store) atomic(ctx context.Context, fn func(st *Store) error) (err error) {
	if s.tx != nil {
		return s.savepoint(ctx, fn)
	}
	// Statements first met inside a transaction are prepared now, while
	// no transaction holds the writer connection.
	s.writeStmts.preparePending(ctx)
	tx, err := s.write.BeginTx(ctx, nil)
	if err != nil {
		return s.dbErr(err, "begin transaction")
	}
	st := &Store{d: s.d, read: s.read, write: s.write, tx: tx, closer: s.closer, readStmts: s.readStmts, writeStmts: s.writeStmts}
	done := false
	defer func() {
		if done {
			return
		}
		// fn panicked (or runtime.Goexit ran): roll back and let it go on.
		_ = tx.Rollback()
	}()
	if err := fn(st); err != nil {
		done = true
		if rbErr := tx.Rollback(); rbErr != nil && !errors.Is(rbErr, sql.ErrTxDone) {
			return errors.Join(err, rbErr)
		}
		return err
	}
	done = true
	if err := tx.Commit(); err != nil {
		return s.dbErr(err, "commit transaction")
	}
	return nil
}

const savepointName = "gpurent_sp"

func (s *Store) savepoint(ctx context.Context, fn func(st *Store) error) (err error) {
	if _, err := s.exec(ctx, "SAVEPOINT "+savepointName); err != nil {
		return s.dbErr(err, "savepoint")
	}
	done := false
	defer func() {
		if done {
			return
		}
		_, _ = s.tx.ExecContext(context.WithoutCancel(ctx), "ROLLBACK TO SAVEPOINT "+savepointName)
		_, _ = s.tx.ExecContext(context.WithoutCancel(ctx), "RELEASE SAVEPOINT "+savepointName)
	}()
	if err := fn(s); err != nil {
		done = true
		// A failed rollback leaves the transaction unusable; its commit
		// will fail, so nothing half-written can stay.
		_, rbErr := s.tx.ExecContext(context.WithoutCancel(ctx), "ROLLBACK TO SAVEPOINT "+savepointName)
		if rbErr == nil {
			_, rbErr = s.tx.ExecContext(context.WithoutCancel(ctx), "RELEASE SAVEPOINT "+savepointName)
		}
		if rbErr != nil {
			return errors.Join(err, s.dbErr(rbErr, "roll back to savepoint"))
		}
		return err
	}
	done = true
	if _, err := s.exec(ctx, "RELEASE SAVEPOINT "+savepointName); err != nil {
		return s.dbErr(err, "release savepoint")
	}
	return nil
}

// reader is where reads go: the transaction, or the read pool.
func (s *Store) reader() querier {
	if s.tx != nil {
		return s.tx
	}
	return s.read
}

// writer is where single-statement writes go: the transaction, or the
// write pool.
func (s *Store) writer() querier {
	if s.tx != nil {
		return s.tx
	}
	return s.write
}

func (s *Store) exec(ctx context.Context, query string, args ...any) (sql.Result, error) {
	query = s.d.rebind(query)
	st, done := s.stmt(ctx, s.writeStmts, query)
	if st == nil {
		return s.writer().ExecContext(ctx, query, args...)
	}
	defer done()
	return st.ExecContext(ctx, args...)
}

// stmt answers the prepared statement of query for this store's reads
// (cache readStmts) or writes (writeStmts), inside the transaction when
// there is one, and a func to call once the statement was run (its rows
// may stay open after). It answers nil where there is no cache, or the
// statement is not prepared yet inside a transaction (it will be before
// the next one: preparing now would wait for the connection the
// transaction holds).
func (s *Store) stmt(ctx context.Context, cache *stmtCache, query string) (*sql.Stmt, func()) {
	if cache == nil {
		return nil, nil
	}
	if s.tx != nil {
		cache = s.writeStmts // a transaction reads and writes on the writer
		cs := cache.lookup(query)
		if cs == nil {
			return nil, nil
		}
		// The transaction's copy runs on its connection, where the
		// statement is prepared already, and closes with it.
		st := s.tx.StmtContext(ctx, cs.st)
		cache.release(cs)
		return st, func() {}
	}
	cs, err := cache.get(ctx, query)
	if err != nil {
		return nil, nil // run unprepared; a real fault shows there too
	}
	return cs.st, func() { cache.release(cs) }
}

// execN runs a write and returns the number of rows it touched.
func (s *Store) execN(ctx context.Context, query string, args ...any) (int64, error) {
	res, err := s.exec(ctx, query, args...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

func (s *Store) query(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	query = s.d.rebind(query)
	st, done := s.stmt(ctx, s.readStmts, query)
	if st == nil {
		return s.reader().QueryContext(ctx, query, args...)
	}
	defer done()
	return st.QueryContext(ctx, args...)
}

func (s *Store) queryRow(ctx context.Context, query string, args ...any) *sql.Row {
	query = s.d.rebind(query)
	st, done := s.stmt(ctx, s.readStmts, query)
	if st == nil {
		return s.reader().QueryRowContext(ctx, query, args...)
	}
	defer done()
	return st.QueryRowContext(ctx, args...)
}

// writeRow runs a write that returns a row (RETURNING).
func (s *Store) writeRow(ctx context.Context, query string, args ...any) *sql.Row {
	query = s.d.rebind(query)
	st, done := s.stmt(ctx, s.writeStmts, query)
	if st == nil {
		return s.writer().QueryRowContext(ctx, query, args...)
	}
	defer done()
	return st.QueryRowContext(ctx, args...)
}

// writeRows runs a write that returns rows (RETURNING).
func (s *Store) writeRows(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	query = s.d.rebind(query)
	st, done := s.stmt(ctx, s.writeStmts, query)
	if st == nil {
		return s.writer().QueryContext(ctx, query, args...)
	}
	defer done()
	return st.QueryContext(ctx, args...)
}

// stmtCacheSize is how many prepared statements each pool keeps. Texts
// that vary (a list of n values) take an entry per n; the least recently
// used statement goes first.
const stmtCacheSize = 256

// stmtCache keeps one pool's prepared statements by query text, least
// recently used first out. A statement is closed once evicted and no
// longer in use (rows it opened keep it alive until they close).
type stmtCache struct {
	db      *sql.DB
	max     int
	mu      sync.Mutex
	m       map[string]*list.Element // of *cachedStmt
	lru     list.List                // front: most recently used
	pending map[string]bool          // met inside a transaction, to prepare
}

type cachedStmt struct {
	query   string
	st      *sql.Stmt
	refs    int
	evicted bool
}

func newStmtCache(db *sql.DB, max int) *stmtCache {
	return &stmtCache{db: db, max: max, m: map[string]*list.Element{}, pending: map[string]bool{}}
}

// lookup answers the cached statement (in use until release), or nil and
// remembers the query to prepare later.
func (c *stmtCache) lookup(query string) *cachedStmt {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.m[query]; ok {
		c.lru.MoveToFront(e)
		cs := e.Value.(*cachedStmt)
		cs.refs++
		return cs
	}
	if len(c.pending) < c.max {
		c.pending[query] = true
	}
	return nil
}

// get answers the statement, preparing it when it is not cached.
func (c *stmtCache) get(ctx context.Context, query string) (*cachedStmt, error) {
	if cs := c.lookup(query); cs != nil {
		return cs, nil
	}
	st, err := c.db.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	return c.add(query, st), nil
}

// add caches a statement just prepared (or answers the one another caller
// cached meanwhile), in use until release.
func (c *stmtCache) add(query string, st *sql.Stmt) *cachedStmt {
	c.mu.Lock()
	delete(c.pending, query)
	if e, ok := c.m[query]; ok {
		c.lru.MoveToFront(e)
		cs := e.Value.(*cachedStmt)
		cs.refs++
		c.mu.Unlock()
		_ = st.Close()
		return cs
	}
	cs := &cachedStmt{query: query, st: st, refs: 1}
	c.m[query] = c.lru.PushFront(cs)
	var closing []*sql.Stmt
	for c.lru.Len() > c.max {
		old := c.lru.Back().Value.(*cachedStmt)
		c.lru.Remove(c.lru.Back())
		delete(c.m, old.query)
		old.evicted = true
		if old.refs == 0 {
			closing = append(closing, old.st)
		}
	}
	c.mu.Unlock()
	for _, st := range closing {
		_ = st.Close()
	}
	return cs
}

// release ends a use of a statement.
func (c *stmtCache) release(cs *cachedStmt) {
	c.mu.Lock()
	cs.refs--
	done := cs.evicted && cs.refs == 0
	c.mu.Unlock()
	if done {
		_ = cs.st.Close()
	}
}

// preparePending prepares the statements met inside transactions. A
// statement that fails to prepare is left to run unprepared.
func (c *stmtCache) preparePending(ctx context.Context) {
	if c == nil {
		return
	}
	c.mu.Lock()
	if len(c.pending) == 0 {
		c.mu.Unlock()
		return
	}
	queries := make([]string, 0, len(c.pending))
	for q := range c.pending {
		queries = append(queries, q)
	}
	clear(c.pending)
	c.mu.Unlock()
	for _, q := range queries {
		st, err := c.db.PrepareContext(ctx, q)
		if err != nil {
			continue
		}
		c.release(c.add(q, st))
	}
}

// closeAll closes every cached statement.
func (c *stmtCache) closeAll() {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for e := c.lru.Front(); e != nil; e = e.Next() {
		cs := e.Value.(*cachedStmt)
		cs.evicted = true
		if cs.refs == 0 {
			_ = cs.st.Close()
		}
	}
	c.lru.Init()
	clear(c.m)
}

// exists reports whether query (SELECT 1 ...) finds a row.
func (s *Store) exists(ctx context.Context, query string, args ...any) (bool, error) {
	var one int
	err := s.queryRow(ctx, query, args...).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return true, nil
}

// dbErr turns a driver error into a gpurent error. An error that already is
// one passes through.
func (s *Store) dbErr(err error, op string) error {
	if err == nil {
		return nil
	}
	var ge *gpurent.Error
	if errors.As(err, &ge) {
		return err
	}
	switch s.d.Classify(err) {
	case ErrUnique:
		return gpurent.WrapError(gpurent.CodeConflict, err, "%s: already exists", op)
	case ErrForeignKey:
		return gpurent.WrapError(gpurent.CodeInvalid, err, "%s: refers to a record that does not exist", op)
	case ErrConstraint:
		return gpurent.WrapError(gpurent.CodeInvalid, err, "%s: invalid value", op)
	case ErrRetry:
		return gpurent.WrapError(gpurent.CodeConflict, err, "%s: concurrent change, retry", op)
	case ErrBusy:
		return gpurent.WrapError(gpurent.CodeUnavailable, err, "%s: database busy", op)
	}
	return gpurent.WrapError(gpurent.CodeInternal, err, "%s: database error", op)
}

// notFound is the error for a missing record.
func notFound(what, id string) error {
	return gpurent.Errorf(gpurent.CodeNotFound, "%s %q not found", what, id)
}

// normTime is how every time is stored: UTC, microsecond precision.
func normTime(t time.Time) time.Time { return t.UTC().Truncate(time.Microsecond) }

// nowOr returns t normalised, or now when t is zero.
func nowOr(t time.Time) time.Time {
	if t.IsZero() {
		return normTime(time.Now())
	}
	return normTime(t)
}

// ts binds a time.
func (s *Store) ts(t time.Time) any { return s.d.EncodeTime(normTime(t)) }

// tsp binds a nullable time.
func (s *Store) tsp(t *time.Time) any {
	if t == nil {
		return nil
	}
	return s.d.EncodeTime(normTime(*t))
}

// normTimePtr normalises a nullable time in place.
func normTimePtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	n := normTime(*t)
	return &n
}

// timeCol scans a NOT NULL time column from either backend: time.Time
// (PostgreSQL) or text (SQLite).
type timeCol struct{ t *time.Time }

func (c timeCol) Scan(src any) error {
	t, ok, err := decodeTime(src)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("sqlstore: NULL in a NOT NULL time column")
	}
	*c.t = t
	return nil
}

// nullTimeCol scans a nullable time column.
type nullTimeCol struct{ t **time.Time }

func (c nullTimeCol) Scan(src any) error {
	t, ok, err := decodeTime(src)
	if err != nil {
		return err
	}
	if !ok {
		*c.t = nil
		return nil
	}
	*c.t = &t
	return nil
}

func decodeTime(src any) (time.Time, bool, error) {
	switch v := src.(type) {
	case nil:
		return time.Time{}, false, nil
	case time.Time:
		return v.UTC(), true, nil
	case string:
		t, err := time.Parse(time.RFC3339Nano, v)
		if err != nil {
			return time.Time{}, false, fmt.Errorf("sqlstore: bad stored time %q: %w", v, err)
		}
		return t.UTC(), true, nil
	case []byte:
		t, err := time.Parse(time.RFC3339Nano, string(v))
		if err != nil {
			return time.Time{}, false, fmt.Errorf("sqlstore: bad stored time %q: %w", v, err)
		}
		return t.UTC(), true, nil
	}
	return time.Time{}, false, fmt.Errorf("sqlstore: cannot scan %T into a time", src)
}

// SQLiteTimeLayout is how the SQLite dialect stores times: fixed width, so
// that text order is time order.
const SQLiteTimeLayout = "2006-01-02T15:04:05.000000Z"

// rowScanner is *sql.Row or *sql.Rows.
type rowScanner interface{ Scan(dest ...any) error }

// placeholders returns "?, ?, ..." for n values.
func placeholders(n int) string {
	if n <= 0 {
		return ""
	}
	b := make([]byte, 0, n*3)
	for i := range n {
		if i > 0 {
			b = append(b, ", "...)
		}
		b = append(b, '?')
	}
	return string(b)
}

// queryAll runs a read and scans every row with scan; what names the read
// in errors. An empty result is an empty, non-nil slice.
func queryAll[T any](ctx context.Context, s *Store, what, query string, scan func(rowScanner) (T, error), args ...any) ([]T, error) {
	rows, err := s.query(ctx, query, args...)
	if err != nil {
		return nil, s.dbErr(err, what)
	}
	defer rows.Close()
	out := []T{}
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, s.dbErr(err, what)
		}
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		return nil, s.dbErr(err, what)
	}
	return out, nil
}
