.PHONY: test test-fast build demo bench

# The whole test suite, with the Docker Engine and PostgreSQL it needs
# (installed and started on a Debian machine as root).
test:
	./scripts/test.sh

# The fast tier: SQLite and the pure packages, no root, no services; the
# tests of real dependencies skip, each with a line naming what it needs.
test-fast:
	./scripts/test-fast.sh

build:
	CGO_ENABLED=0 go build -o bin/gpurent ./cmd/gpurent

demo:
	go run ./cmd/gpurent serve --demo

# Benchmarks named in BENCHMARKS.md.
bench:
	./scripts/bench.sh
