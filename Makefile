.PHONY: test build demo bench

# The whole test suite, with the Docker Engine and PostgreSQL it needs
# (installed and started on a Debian machine as root).
test:
	./scripts/test.sh

build:
	CGO_ENABLED=0 go build -o bin/gpurent ./cmd/gpurent

demo:
	go run ./cmd/gpurent serve --demo

# Benchmarks named in BENCHMARKS.md.
bench:
	./scripts/bench.sh
