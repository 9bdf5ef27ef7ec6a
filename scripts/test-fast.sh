#!/usr/bin/env bash
# The fast tier: SQLite and the pure packages, on
# any machine with Go, without root and without PostgreSQL, the Docker
# Engine, Chromium, the OpenSSH client, aiosmtpd, pasta or nft. The tests
# that need one of them skip, each with one line naming it
# (internal/testtier); `make test` runs them all and skips none.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v go >/dev/null 2>&1 || { echo "error: missing: Go (https://go.dev/dl), 1.26 or newer" >&2; exit 1; }
export GPURENT_TEST_TIER=fast
# The environment's services are not used even where they are there.
unset GPURENT_TEST_POSTGRES_DSN
go vet ./...
# Without the race detector: it is the slow part here, and make test (CI)
# runs every test under it.
go test -count=1 -timeout 10m ./... "$@"
