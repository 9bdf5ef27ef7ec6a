// Package testtier tells the tests which tier of the suite runs them.
//
// `make test` (CI's command) runs the whole real suite: PostgreSQL, the
// Docker Engine, Chromium, the OpenSSH client, aiosmtpd, root with pasta
// and nft. There a missing dependency fails the test that needs it; no
// test skips. `make test-fast` sets GPURENT_TEST_TIER=fast and runs what a
// newcomer's machine can: SQLite and the pure packages, without root. Every
// helper that reaches for a real dependency calls Require first, which in
// the fast tier skips the test with one line naming what it needs.
package testtier

import (
	"os"
	"testing"
)

// Env is the environment variable naming the tier; Fast is its value in
// `make test-fast`. Unset (or anything else) is the whole suite.
const (
	Env  = "GPURENT_TEST_TIER"
	Fast = "fast"
)

// IsFast reports whether the fast tier runs the tests.
func IsFast() bool { return os.Getenv(Env) == Fast }

// Require marks t as needing what (a dependency named for people, such as
// "the Docker Engine"). In the fast tier it skips t, whether or not what
// is there, so that the tier is the same on every machine; otherwise it
// does nothing, and the caller goes on to fail t when what is missing.
func Require(t testing.TB, what string) {
	t.Helper()
	if IsFast() {
		t.Skip("skipped: needs " + what + " (make test runs it)")
	}
}
