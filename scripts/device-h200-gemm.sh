#!/usr/bin/env bash
# The BF16 GEMM anchor, side by side on one GPU: short bursts (about ten
# 8192-cube products, as the anchor in reference/gpus.md was measured) from a
# cool card, then sustained 10 s runs, then short bursts again on the hot
# card. Shows what the power cap does to a sustained matrix product.
set -u
OUT=${OUT:-/tmp/gpurent-device}
mkdir -p "$OUT"
cd "$(dirname "$0")/../bench"
run() { # name seconds
	PYTHONUNBUFFERED=1 timeout 200 python3 -m gpurent_bench.suite t1 --probe gemm_bf16 \
		--gpu-type h200-141g-sxm --runs 5 --warmup 1 --gemm-seconds "$2" --preheat-seconds 0 --telemetry-interval-ms 100 \
		>"$OUT/gemm-$1.jsonl" 2>>"$OUT/gemm.err"
}
nvidia-smi -q -d POWER,CLOCK,PERFORMANCE >"$OUT/power.txt" 2>&1
run burst-cool 0.01
run sustained 10
run burst-hot 0.01
