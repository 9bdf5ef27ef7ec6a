#!/usr/bin/env bash
# Runs every fuzz target of the module for a bounded time each: FUZZTIME per
# target (default: a FUZZBUDGET of 120 s shared out, 2 to 10 s each) with
# FUZZPARALLEL (default 2) workers. Targets are found by grep, so a new
# `func FuzzX(f *testing.F)` in a _test.go file is run without a change here.
# Extra arguments are passed to go test.
set -euo pipefail
cd "$(dirname "$0")/.."

targets=$(grep -rEo --include='*_test.go' '^func Fuzz[A-Za-z0-9_]*\(f \*testing\.F\)' . |
	sed -E 's#^\./##; s#:func (Fuzz[A-Za-z0-9_]*)\(.*#:\1#' | sort -u)
count=$(printf '%s\n' "$targets" | grep -c . || true)
[ "$count" -gt 0 ] || { echo "error: no fuzz targets found" >&2; exit 1; }
each=$(( ${FUZZBUDGET:-120} / count ))
each=$(( each < 2 ? 2 : each > 10 ? 10 : each ))
fuzztime=${FUZZTIME:-${each}s}
parallel=${FUZZPARALLEL:-2}
n=0
failed=()
while IFS=: read -r file name; do
	pkg="./$(dirname "$file")"
	n=$((n + 1))
	printf '==> fuzz %s %s (%s)\n' "$pkg" "$name" "$fuzztime" >&2
	out=$(mktemp)
	if ! go test -run '^$' -fuzz "^${name}\$" -fuzztime "$fuzztime" -parallel "$parallel" "$@" "$pkg" 2>&1 | tee "$out"; then
		# Go's fuzzing coordinator can end a run with "context deadline
		# exceeded" when -fuzztime runs out while a worker restarts: no input
		# failed and none is written. That run is tried once more; a failing
		# input ("Failing input written to ...") never is.
		if grep -q 'context deadline exceeded' "$out" && ! grep -q 'Failing input written' "$out"; then
			printf '==> %s %s: the fuzzing run ended on its deadline without a failing input; once more\n' "$pkg" "$name" >&2
			go test -run '^$' -fuzz "^${name}\$" -fuzztime "$fuzztime" -parallel "$parallel" "$@" "$pkg" || failed+=("$pkg $name")
		else
			failed+=("$pkg $name")
		fi
	fi
	rm -f "$out"
done <<<"$targets"
if [ ${#failed[@]} -gt 0 ]; then
	printf 'error: fuzz target failed: %s\n' "${failed[@]}" >&2
	exit 1
fi
printf '==> %d fuzz targets ran %s each\n' "$n" "$fuzztime" >&2
