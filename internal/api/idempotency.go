package api

import (
	"crypto/sha256"
	"encoding/hex"
	"log/slog"
	"net/http"

	"github.com/gpurent/gpurent"
)

// Idempotency headers.
const (
	headerIdempotencyKey = "Idempotency-Key"
	headerReplayed       = "Idempotent-Replayed"
	maxIdempotencyKey    = 255
)

// idem says how one route takes part.
type idem struct {
	// scope is the account whose keys these are, where answers are looked
	// up. When scopeOf is set (register), answers are stored only under the
	// account it names: the one the request made, never another's.
	scope   string
	scopeOf func(status int, body []byte) string
	// keyPrefix namespaces keys of one kind (register keys live beside the
	// account's own).
	keyPrefix string
	// lockName serialises same-key requests in this process; "" is scope.
	lockName string
	// body is the raw request body, part of the request hash.
	body []byte
	// replayHeaders, when set, rebuilds headers (Location) for a replay.
	replayHeaders func(status int, body []byte) http.Header
	// redact, when set, is what of the answer is stored (secrets are not).
	redact func(status int, body []byte) []byte
}

// idempotent runs fn once per (scope, Idempotency-Key). Without the header
// fn just runs. With it: a stored answer to the same request (method, path,
// body hash) is replayed with Idempotent-Replayed: true; a stored answer to
// another request is a conflict; otherwise fn runs and its answer, unless a
// 5xx, is stored. Requests with the same key wait for each other in this
// process; across replicas the store's unique (scope, key) decides and the
// services' own idempotency (rental's create) keeps the effect single.
func (s *Server) idempotent(w http.ResponseWriter, r *http.Request, o idem, fn func(w http.ResponseWriter)) {
	key := r.Header.Get(headerIdempotencyKey)
	if key == "" {
		if _, present := r.Header[headerIdempotencyKey]; !present {
			fn(w)
			return
		}
	}
	if err := validIdempotencyKey(key); err != nil {
		s.writeProblem(w, r, err)
		return
	}
	hash := requestHash(r.Method, r.URL.Path, o.body)
	storedKey := o.keyPrefix + key

	lockName := o.lockName
	if lockName == "" {
		lockName = o.scope
	}
	unlock := s.locks.Lock(lockName + "\x00" + storedKey)
	defer unlock()

	if o.scope != "" {
		rec, err := s.store.IdempotencyByKey(r.Context(), o.scope, storedKey)
		switch {
		case err == nil:
			s.replay(w, r, o, rec, key, hash)
			return
		case !gpurent.IsCode(err, gpurent.CodeNotFound):
			s.writeProblem(w, r, err)
			return
		}
	}

	c := &captureWriter{header: http.Header{}}
	fn(c)
	if c.status == 0 {
		c.status = http.StatusOK
	}
	scope := o.scope
	if o.scopeOf != nil {
		scope = o.scopeOf(c.status, c.body)
	}
	if c.status < 500 && scope != "" {
		stored := c.body
		if o.redact != nil {
			stored = o.redact(c.status, c.body)
		}
		if stored == nil {
			stored = []byte{}
		}
		rec := &gpurent.IdempotencyRecord{
			AccountID:   scope,
			Key:         storedKey,
			Method:      r.Method,
			Path:        r.URL.Path,
			RequestHash: hash,
			Status:      c.status,
			Body:        stored,
			CreatedAt:   s.now().UTC(),
		}
		if err := s.store.SaveIdempotency(r.Context(), rec); err != nil {
			// Another replica stored the key first, or the store failed:
			// the effect already happened, so answer it all the same.
			s.log.LogAttrs(r.Context(), slog.LevelWarn, "storing an idempotent answer failed",
				slog.String("path", r.URL.Path), slog.String("error", err.Error()))
		}
	}
	for k, v := range c.header {
		w.Header()[k] = v
	}
	w.WriteHeader(c.status)
	_, _ = w.Write(c.body)
}

// replay answers from a stored record, or with a conflict when the key was
// used for another request.
func (s *Server) replay(w http.ResponseWriter, r *http.Request, o idem, rec *gpurent.IdempotencyRecord, key, hash string) {
	if rec.RequestHash != hash || rec.Method != r.Method || rec.Path != r.URL.Path {
		s.writeProblem(w, r, gpurent.Errorf(gpurent.CodeConflict,
			"Idempotency-Key %q was already used for a different request (%s %s); use a new key", key, rec.Method, rec.Path))
		return
	}
	if o.replayHeaders != nil {
		for k, v := range o.replayHeaders(rec.Status, rec.Body) {
			w.Header()[k] = v
		}
	}
	w.Header().Set(headerReplayed, "true")
	ct := contentJSON
	if rec.Status >= 400 {
		ct = contentProblem
	}
	writeRaw(w, rec.Status, ct, rec.Body)
}

// validIdempotencyKey checks a key is 1..255 printable ASCII characters.
func validIdempotencyKey(key string) error {
	if key == "" || len(key) > maxIdempotencyKey || !printableASCII(key) {
		return gpurent.Errorf(gpurent.CodeInvalid,
			"Idempotency-Key must be 1 to %d printable ASCII characters", maxIdempotencyKey)
	}
	return nil
}

// requestHash identifies a request for idempotency: method, path and body.
func requestHash(method, path string, body []byte) string {
	h := sha256.New()
	h.Write([]byte(method))
	h.Write([]byte{0})
	h.Write([]byte(path))
	h.Write([]byte{0})
	h.Write(body)
	return hex.EncodeToString(h.Sum(nil))
}
