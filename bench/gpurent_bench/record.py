"""The benchmark result record: one JSON object per line on stdout.

Schema version 1. The Go side (internal/certify) parses the same records, so
the field names here are a contract: change them only with a new schema
version. bench/README.md documents every field.
"""

import datetime
import json
import math

from . import SCHEMA_VERSION

# Probe name -> the only unit a record of that probe may carry.
PROBE_UNITS = {
    "inventory": "gpus",
    "gemm_bf16": "TFLOPS",
    "gemm_fp8": "TFLOPS",
    "copy_h2d": "GB/s",
    "copy_d2h": "GB/s",
    "copy_d2d": "GB/s",
    "resnet50_amp": "img/s",
    "nccl_allreduce": "GB/s",
}

FIELDS = (
    "schema", "probe", "uuids", "gpu_type", "value", "unit", "run", "warmup",
    "params", "started_at", "ended_at", "telemetry", "software", "error",
)
TELEMETRY_FIELDS = (
    "max_temp_c", "mean_sm_clock_mhz", "min_sm_clock_mhz", "mean_power_w",
    "throttle_reasons",
)
SOFTWARE_FIELDS = ("driver", "cuda", "torch", "synthetic")


class RecordError(ValueError):
    """A record that does not follow schema version 1."""


def utc_now():
    """The current time as an aware UTC datetime."""
    return datetime.datetime.now(datetime.timezone.utc)


def format_time(t):
    """RFC 3339 UTC with milliseconds and a Z suffix (Go's time.RFC3339Nano parses it)."""
    if t.tzinfo is None:
        raise RecordError("naive datetime: times must be timezone-aware")
    t = t.astimezone(datetime.timezone.utc)
    return t.strftime("%Y-%m-%dT%H:%M:%S.") + "%03dZ" % (t.microsecond // 1000)


def parse_time(s):
    """Parse a time written by format_time (any RFC 3339 UTC 'Z' time)."""
    if not isinstance(s, str) or not s.endswith("Z"):
        raise RecordError("time %r is not RFC 3339 UTC ending in Z" % (s,))
    try:
        t = datetime.datetime.fromisoformat(s[:-1])
    except ValueError as e:
        raise RecordError("time %r is not RFC 3339: %s" % (s, e)) from None
    if t.tzinfo is not None:
        raise RecordError("time %r has two zones" % (s,))
    return t.replace(tzinfo=datetime.timezone.utc)


def empty_telemetry():
    """Telemetry when no sample was taken: every figure null, no throttle reasons."""
    return {
        "max_temp_c": None,
        "mean_sm_clock_mhz": None,
        "min_sm_clock_mhz": None,
        "mean_power_w": None,
        "throttle_reasons": [],
    }


def make_record(probe, uuids, gpu_type, value, run, warmup, params,
                started_at, ended_at, telemetry, software, error=None):
    """Build and validate a record dict.

    value is None exactly when error is set. started_at and ended_at are aware
    datetimes. telemetry may be None (no sampler), which becomes all-null.
    """
    rec = {
        "schema": SCHEMA_VERSION,
        "probe": probe,
        "uuids": list(uuids),
        "gpu_type": gpu_type,
        "value": None if value is None else float(value),
        "unit": PROBE_UNITS.get(probe, ""),
        "run": run,
        "warmup": warmup,
        "params": dict(params or {}),
        "started_at": format_time(started_at),
        "ended_at": format_time(ended_at),
        "telemetry": dict(telemetry) if telemetry is not None else empty_telemetry(),
        "software": dict(software),
        "error": error,
    }
    validate(rec)
    return rec


def _is_number(x):
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def _opt_number(obj, key, where):
    v = obj[key]
    if v is not None and not _is_number(v):
        raise RecordError("%s.%s must be a finite number or null, got %r" % (where, key, v))


def _opt_string(obj, key, where):
    v = obj[key]
    if v is not None and not isinstance(v, str):
        raise RecordError("%s.%s must be a string or null, got %r" % (where, key, v))


def _exact_keys(obj, keys, where):
    if not isinstance(obj, dict):
        raise RecordError("%s must be an object, got %r" % (where, type(obj).__name__))
    missing = [k for k in keys if k not in obj]
    extra = sorted(k for k in obj if k not in keys)
    if missing:
        raise RecordError("%s: missing field(s) %s" % (where, ", ".join(missing)))
    if extra:
        raise RecordError("%s: unknown field(s) %s" % (where, ", ".join(extra)))


def validate(rec):
    """Raise RecordError unless rec is a valid schema-1 record."""
    _exact_keys(rec, FIELDS, "record")
    if rec["schema"] != SCHEMA_VERSION or isinstance(rec["schema"], bool):
        raise RecordError("schema must be %d, got %r" % (SCHEMA_VERSION, rec["schema"]))
    probe = rec["probe"]
    if probe not in PROBE_UNITS:
        raise RecordError("unknown probe %r" % (probe,))
    if rec["unit"] != PROBE_UNITS[probe]:
        raise RecordError("probe %s must have unit %r, got %r" % (probe, PROBE_UNITS[probe], rec["unit"]))
    uuids = rec["uuids"]
    if not isinstance(uuids, list) or not uuids:
        raise RecordError("uuids must be a non-empty list")
    for u in uuids:
        if not isinstance(u, str) or not u.strip():
            raise RecordError("uuids must hold non-empty strings, got %r" % (u,))
    if len(set(uuids)) != len(uuids):
        raise RecordError("uuids has duplicates")
    if not isinstance(rec["gpu_type"], str) or not rec["gpu_type"]:
        raise RecordError("gpu_type must be a non-empty string")
    run = rec["run"]
    if not isinstance(run, int) or isinstance(run, bool) or run < 1:
        raise RecordError("run must be an integer >= 1, got %r" % (run,))
    if not isinstance(rec["warmup"], bool):
        raise RecordError("warmup must be a boolean")
    if not isinstance(rec["params"], dict):
        raise RecordError("params must be an object")
    start = parse_time(rec["started_at"])
    end = parse_time(rec["ended_at"])
    if end < start:
        raise RecordError("ended_at %s is before started_at %s" % (rec["ended_at"], rec["started_at"]))
    err = rec["error"]
    if err is not None and (not isinstance(err, str) or not err):
        raise RecordError("error must be null or a non-empty string")
    value = rec["value"]
    if err is None:
        if not _is_number(value) or value < 0:
            raise RecordError("value must be a finite number >= 0 when error is null, got %r" % (value,))
    elif value is not None:
        raise RecordError("value must be null when error is set")

    tel = rec["telemetry"]
    _exact_keys(tel, TELEMETRY_FIELDS, "telemetry")
    for k in TELEMETRY_FIELDS[:-1]:
        _opt_number(tel, k, "telemetry")
    tr = tel["throttle_reasons"]
    if not isinstance(tr, list) or not all(isinstance(x, str) and x for x in tr):
        raise RecordError("telemetry.throttle_reasons must be a list of names")

    sw = rec["software"]
    _exact_keys(sw, SOFTWARE_FIELDS, "software")
    for k in ("driver", "cuda", "torch"):
        _opt_string(sw, k, "software")
    if not isinstance(sw["synthetic"], bool):
        raise RecordError("software.synthetic must be a boolean")
    return rec


def dumps(rec):
    """One record as one line of JSON (no newline inside), validated first."""
    validate(rec)
    return json.dumps(rec, sort_keys=False, separators=(",", ":"), allow_nan=False)


def loads(line):
    """Parse and validate one line of JSON into a record dict."""
    try:
        rec = json.loads(line)
    except ValueError as e:
        raise RecordError("not JSON: %s" % e) from None
    return validate(rec)


def read_records(lines):
    """Parse records from lines, skipping blank lines; raises on the first bad line."""
    out = []
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            out.append(loads(line))
        except RecordError as e:
            raise RecordError("line %d: %s" % (n, e)) from None
    return out
