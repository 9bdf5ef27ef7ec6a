#!/usr/bin/env bash
# The real-GPU checks for a machine with one NVIDIA GPU (an H200 in
# BENCHMARKS.md): NVML discovery through the agent's provider, then the
# benchmark suite's certification tier run directly with the machine's
# python3 and PyTorch (no Docker there). Everything it finds goes to $OUT.
#
# Before: CGO_ENABLED=1 go test -c -tags nvml -o .devbin/nvml.test ./internal/gpu/nvml/
# After, here: gpurent certify judge $OUT/t2.jsonl   (verdicts and spec ratios)
#
# GEMM runs are shorter than the tier's 60 s default so that the whole
# script fits a short lease; the figures are GPU time measured with CUDA
# events either way.
set -u
OUT=${OUT:-/tmp/gpurent-device}
mkdir -p "$OUT"
cd "$(dirname "$0")/.."

{
	date -u +%FT%TZ
	nvidia-smi
	nvidia-smi topo -m
	python3 -c 'import torch, torchvision; print("torch", torch.__version__, "cuda", torch.version.cuda, "torchvision", torchvision.__version__)'
} >"$OUT/machine.txt" 2>&1

if [ -x .devbin/nvml.test ]; then
	.devbin/nvml.test -test.v -test.count=1 >"$OUT/nvml.txt" 2>&1
	echo "nvml test exit $?" >>"$OUT/nvml.txt"
fi

cd bench
PYTHONUNBUFFERED=1 timeout 480 python3 -m gpurent_bench.suite t2 \
	--gpu-type h200-141g-sxm --runs 5 --warmup 1 \
	--gemm-seconds "${GEMM_SECONDS:-10}" --preheat-seconds "${PREHEAT_SECONDS:-20}" \
	>"$OUT/t2.jsonl" 2>"$OUT/t2.err"
echo "suite exit $?" >>"$OUT/t2.err"
date -u +%FT%TZ >>"$OUT/machine.txt"
