#!/usr/bin/env bash
# Runs the benchmarks recorded in BENCHMARKS.md. Needs what `make test`
# starts (Docker Engine, PostgreSQL); set GPURENT_TEST_POSTGRES_DSN.
set -euo pipefail
cd "$(dirname "$0")/.."
: "${GPURENT_TEST_POSTGRES_DSN:?set GPURENT_TEST_POSTGRES_DSN (make test prints how it starts PostgreSQL)}"
go test -run '^$' -bench 'RentDecisions' -benchtime 3000x -count 3 ./internal/app/
go test -run '^$' -bench 'RentToRunning' -benchtime 20x -count 1 ./internal/app/
go test -run '^$' -bench . ./internal/sched/
go test -run '^$' -bench . -benchtime 2000x ./internal/store/sqlite/ ./internal/store/postgres/
