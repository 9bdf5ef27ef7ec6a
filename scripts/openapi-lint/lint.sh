#!/usr/bin/env bash
# Lints internal/api/openapi.json with Redocly and Spectral, at the versions
# package-lock.json pins (npm ci installs them here, in node_modules). Any
# error or warning fails. scripts/test.sh runs it; it needs node and npm.
set -euo pipefail
cd "$(dirname "$0")"
doc=../../internal/api/openapi.json
export REDOCLY_TELEMETRY=off REDOCLY_SUPPRESS_UPDATE_NOTICE=true NO_UPDATE_NOTIFIER=1
# npm ci installs afresh; an install newer than the lock file is kept. No
# install script runs: the linters need none (the one there, @scarf/scarf,
# only reports downloads).
if [ ! -d node_modules ] || [ package-lock.json -nt node_modules ]; then
	npm ci --ignore-scripts --no-audit --no-fund --loglevel=error
fi
npx --no-install redocly lint --config redocly.yaml --format stylish "$doc"
npx --no-install spectral lint --ruleset .spectral.yaml --fail-severity=warn "$doc"
