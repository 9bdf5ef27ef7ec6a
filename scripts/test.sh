#!/usr/bin/env bash
# Runs the whole test suite with the services it needs: a Docker Engine and a
# PostgreSQL server. On a Debian machine as root it installs and starts what
# is missing; elsewhere it stops and names what is missing.
set -euo pipefail
cd "$(dirname "$0")/.."
# The whole suite: a fast tier inherited from the caller's environment
# would skip every test of a real dependency (internal/testtier).
unset GPURENT_TEST_TIER

say() { printf '==> %s\n' "$*" >&2; }
die() { printf 'error: %s\n' "$*" >&2; exit 1; }

can_install() { [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; }

apt_updated=
install_pkgs() {
	can_install || die "missing: $* — install them (Debian: apt-get install -y $*) or run this as root on Debian"
	if [ -z "$apt_updated" ]; then
		say "apt-get update"
		apt-get update -qq >/dev/null
		apt_updated=1
	fi
	say "installing $*"
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
}

command -v go >/dev/null 2>&1 || die "missing: Go (https://go.dev/dl), 1.26 or newer"

# The toolchain go.mod names carries the standard library's security fixes
# that govulncheck holds the build to. A Go installed with GOTOOLCHAIN=local
# would not switch to it by itself: fetch it through the module proxy.
want=$(sed -n 's/^toolchain //p' go.mod)
if [ -n "$want" ] && [ "$(go env GOVERSION)" != "$want" ]; then
	if GOTOOLCHAIN=$want go version >/dev/null 2>&1; then
		export GOTOOLCHAIN=$want
		say "Go toolchain $want (go.mod)"
	else
		say "warning: the toolchain $want (go.mod) could not be fetched; testing with $(go env GOVERSION), which govulncheck may hold to fixes it lacks"
	fi
fi

# --- Docker Engine -----------------------------------------------------------
if ! docker info >/dev/null 2>&1; then
	pkgs=()
	command -v dockerd >/dev/null 2>&1 || pkgs+=(docker.io)
	command -v docker >/dev/null 2>&1 || pkgs+=(docker.io)
	[ -x /bin/busybox ] || pkgs+=(busybox-static)
	[ ${#pkgs[@]} -gt 0 ] && install_pkgs $(printf '%s\n' "${pkgs[@]}" | sort -u)
	if ! docker info >/dev/null 2>&1; then
		[ "$(id -u)" = 0 ] || die "the Docker Engine is not running and only root can start it here"
		say "starting dockerd (--bridge=none --iptables=false --ip-masq=false)"
		mkdir -p /var/log
		nohup dockerd --bridge=none --iptables=false --ip-masq=false >/var/log/gpurent-dockerd.log 2>&1 &
		for _ in $(seq 1 60); do docker info >/dev/null 2>&1 && break; sleep 1; done
		docker info >/dev/null 2>&1 || die "dockerd did not start; see /var/log/gpurent-dockerd.log"
	fi
fi
[ -x /bin/busybox ] || install_pkgs busybox-static
# The busybox test image must be statically linked: it runs FROM scratch.
if ldd /bin/busybox >/dev/null 2>&1; then install_pkgs busybox-static; fi

# --- OpenSSH client (the access tests drive the real ssh, scp and sftp) --------
for tool in ssh scp sftp ssh-keygen; do
	command -v "$tool" >/dev/null 2>&1 || { install_pkgs openssh-client; break; }
done

# --- pasta, nft, nsenter, ip (the pasta network and egress tests, as root) ---
pkgs=()
command -v pasta >/dev/null 2>&1 || pkgs+=(passt)
command -v nft >/dev/null 2>&1 || pkgs+=(nftables)
command -v nsenter >/dev/null 2>&1 || pkgs+=(util-linux)
command -v ip >/dev/null 2>&1 || pkgs+=(iproute2)
[ ${#pkgs[@]} -gt 0 ] && install_pkgs "${pkgs[@]}"

# --- Chromium (the console's browser tests drive a real headless Chromium) ----
if ! command -v chromium >/dev/null 2>&1 && ! command -v chromium-browser >/dev/null 2>&1; then
	install_pkgs chromium
fi

# --- OCI registry (image pulls are tested against Debian's docker-registry) ---
[ -x /usr/bin/docker-registry ] || install_pkgs docker-registry

# --- SMTP server (the mail tests deliver to a real aiosmtpd on loopback) -------
# Debian's python3 has it; a python3 earlier on PATH may be another install.
if ! /usr/bin/python3 -c 'import aiosmtpd' >/dev/null 2>&1 && ! python3 -c 'import aiosmtpd' >/dev/null 2>&1; then
	install_pkgs python3-aiosmtpd
fi

# --- PostgreSQL ----------------------------------------------------------------
if [ -z "${GPURENT_TEST_POSTGRES_DSN:-}" ]; then
	command -v pg_ctlcluster >/dev/null 2>&1 || install_pkgs postgresql
	cluster=$(pg_lsclusters -h 2>/dev/null | head -n1 || true)
	if [ -z "$cluster" ]; then
		ver=$(ls /usr/lib/postgresql | sort -V | tail -n1)
		say "creating PostgreSQL $ver cluster"
		pg_createcluster "$ver" main >/dev/null
		cluster=$(pg_lsclusters -h | head -n1)
	fi
	read -r ver name port status _ <<<"$cluster"
	if [ "$status" != online ]; then
		say "starting PostgreSQL $ver/$name on port $port"
		pg_ctlcluster "$ver" "$name" start
	fi
	for _ in $(seq 1 30); do pg_isready -q -p "$port" -h 127.0.0.1 && break; sleep 1; done
	su postgres -c "psql -q -p $port -c \"ALTER USER postgres PASSWORD 'postgres'\"" >/dev/null
	export GPURENT_TEST_POSTGRES_DSN="postgres://postgres:postgres@127.0.0.1:$port/postgres?sslmode=disable"
fi

# --- Python: the benchmark programs (no PyTorch here: compile + pure parts) --
command -v python3 >/dev/null 2>&1 || install_pkgs python3
say "benchmark programs: py_compile and unit tests (standard library only)"
python3 -m py_compile bench/gpurent_bench/*.py
(cd bench && python3 -m unittest discover -s tests)

# --- OpenAPI lint: Redocly and Spectral, pinned in scripts/openapi-lint -----
{ command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1; } || install_pkgs nodejs npm
say "openapi.json: Redocly and Spectral (scripts/openapi-lint)"
./scripts/openapi-lint/lint.sh

say "go vet"
go vet ./...
say "staticcheck (go.mod tool)"
go tool staticcheck ./...
# govulncheck needs the Go vulnerability database: GOVULNDB when set (a
# mirror, or file:///path of a copy), else vuln.go.dev when it answers,
# else a copy built from the golang.org/x/vulndb module, fetched through
# the Go module proxy like any module (scripts/vulndb.py). When none can be
# had the check does not run, and this says so plainly; a finding fails.
vulndb=${GOVULNDB:-}
if [ -z "$vulndb" ] && curl -fsS -m 20 -o /dev/null https://vuln.go.dev/index/db.json.gz 2>/dev/null; then
	vulndb=https://vuln.go.dev
fi
if [ -z "$vulndb" ] && command -v python3 >/dev/null 2>&1 &&
	src=$(cd "${TMPDIR:-/tmp}" && go mod download -json golang.org/x/vulndb@latest 2>/dev/null |
		sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p') && [ -n "$src" ]; then
	vulndir=$(mktemp -d)
	trap 'rm -rf "$vulndir"' EXIT
	python3 scripts/vulndb.py "$src" "$vulndir"
	vulndb="file://$vulndir"
fi
if [ -z "$vulndb" ]; then
	say "govulncheck: database unreachable (neither vuln.go.dev nor golang.org/x/vulndb through the module proxy); the check did not run"
else
	say "govulncheck (database $vulndb)"
	go tool govulncheck -db "$vulndb" ./...
fi
say "go test -race ./... (SQLite, PostgreSQL, Docker Engine)"
go test -race -count=1 -timeout 30m ./... "$@"
say "fuzz targets, each for a bounded time (scripts/fuzz.sh)"
./scripts/fuzz.sh
say "NVML provider built with cgo and -tags nvml (no driver here: its guard must hold)"
CGO_ENABLED=1 go test -count=1 -tags nvml ./internal/gpu/nvml/
say "CGO_ENABLED=0 build"
CGO_ENABLED=0 go build -o /dev/null ./cmd/gpurent
