"""gpurent_bench: the GPU benchmark suite of gpurent (issue #7).

The suite runs inside the project's pinned PyTorch container with exactly the
GPUs under test and prints one JSON result record per line on stdout (see
record.py and bench/README.md for the schema). Modules that measure a GPU
import torch inside the functions that need it, so the pure parts (records,
statistics, telemetry parsing, argument parsing, formulas) import and are
tested with the Python standard library alone.
"""

__all__ = ["SCHEMA_VERSION"]

SCHEMA_VERSION = 1
