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
go test -run '^$' -bench BearerLookup -benchtime 20000x -count 3 ./internal/auth/
go test -run '^$' -bench . -cpu 1 ./internal/rating/
go test -run '^$' -bench . -count 3 ./internal/ledger/
go test -run '^$' -bench Ingest -benchtime 5000x -count 3 ./internal/metering/
go test -run '^$' -bench EventToBalance -benchtime 300x ./internal/app/
go test -run '^$' -bench Access -benchtime 20x ./internal/app/
go test -run '^$' -bench . -benchtime 20x ./internal/access/ ./internal/sshgate/
go test -run '^$' -bench Sync ./internal/delta/
go test -run '^$' -bench UpgradeDowntime -benchtime 5x ./internal/agent/runtime/docker/
GPURENT_BENCH_10G=1 go test -run '^$' -bench BenchmarkMove -benchtime 1x -timeout 30m ./internal/transfer/
GPURENT_BENCH_10G=1 go test -run '^$' -bench MoveDowntime -benchtime 1x -timeout 30m ./internal/app/
go test -run '^$' -bench Failover -benchtime 3x ./internal/app/
go test -run '^$' -bench . ./internal/faultrules/ ./internal/sla/
go test -run '^$' -bench . -benchtime 20x ./internal/certification/
go test -run '^$' -bench . -benchtime 10x ./internal/transparency/
go test -run '^$' -bench LatestSummaries -benchtime 10x ./internal/store/sqlite/ ./internal/store/postgres/
go test -run '^$' -bench Render -benchtime 300x ./internal/console/browser/
go test -run '^$' -bench 'MarketFleetReading|OpsFleetRender' -benchtime 20x ./internal/console/
