"""Runs one benchmark tier and prints one JSON record per run on stdout.

    python -m gpurent_bench.suite t0|t1|t2 [--runs N] [--warmup N] [--probe P]...

t0: inventory only (no torch needed). t1: inventory, short BF16 GEMM, copy
bandwidths. t2: inventory, pre-heat, BF16 and FP8 GEMM, copy bandwidths,
ResNet-50 AMP training, NCCL all_reduce when two or more GPUs are visible.
Warm-up runs are printed too, with "warmup": true. A probe that fails prints
a record with "error" set and "value": null; the exit status is then 1.
Progress and diagnostics go to stderr; stdout carries records only.
"""

import argparse
import concurrent.futures
import os
import re
import sys
import time

from . import inventory, record, telemetry

PROBES = tuple(record.PROBE_UNITS)

TIERS = {
    "t0": ("inventory",),
    "t1": ("inventory", "gemm_bf16", "copy_h2d", "copy_d2h", "copy_d2d"),
    "t2": ("inventory", "gemm_bf16", "gemm_fp8", "copy_h2d", "copy_d2h", "copy_d2d",
           "resnet50_amp", "nccl_allreduce"),
}

# Per-tier defaults for options left unset on the command line.
TIER_DEFAULTS = {
    "t0": {"runs": 1, "warmup": 0, "gemm_seconds": 5.0, "preheat_seconds": 0.0},
    "t1": {"runs": 3, "warmup": 1, "gemm_seconds": 5.0, "preheat_seconds": 0.0},
    "t2": {"runs": 5, "warmup": 1, "gemm_seconds": 60.0, "preheat_seconds": 60.0},
}


def _positive_int(s):
    try:
        v = int(s)
    except ValueError:
        raise argparse.ArgumentTypeError("%r is not an integer" % s) from None
    if v < 1:
        raise argparse.ArgumentTypeError("must be >= 1, got %d" % v)
    return v


def _nonneg_int(s):
    try:
        v = int(s)
    except ValueError:
        raise argparse.ArgumentTypeError("%r is not an integer" % s) from None
    if v < 0:
        raise argparse.ArgumentTypeError("must be >= 0, got %d" % v)
    return v


def _nonneg_float(s):
    try:
        v = float(s)
    except ValueError:
        raise argparse.ArgumentTypeError("%r is not a number" % s) from None
    if not v >= 0 or v == float("inf"):
        raise argparse.ArgumentTypeError("must be a finite number >= 0, got %r" % s)
    return v


def _uuid_list(s):
    uuids = [u.strip() for u in s.split(",") if u.strip()]
    if not uuids:
        raise argparse.ArgumentTypeError("empty UUID list")
    if len(set(uuids)) != len(uuids):
        raise argparse.ArgumentTypeError("duplicate UUIDs in %r" % s)
    return uuids


def build_parser():
    p = argparse.ArgumentParser(
        prog="python -m gpurent_bench.suite",
        description="gpurent GPU benchmark suite: one JSON record per run on stdout.")
    p.add_argument("tier", choices=sorted(TIERS), help="t0 inventory, t1 readiness, t2 certification")
    p.add_argument("--runs", type=_positive_int, help="timed runs per probe (t0 1, t1 3, t2 5)")
    p.add_argument("--warmup", type=_nonneg_int, help="warm-up runs per probe, printed with warmup=true (t0 0, t1 1, t2 1)")
    p.add_argument("--probe", action="append", choices=PROBES,
                   help="run only this probe (repeatable); default: every probe of the tier")
    p.add_argument("--gpu-type", help="SKU written into records (default: the GPU name nvidia-smi reports)")
    p.add_argument("--expect-uuids", type=_uuid_list,
                   help="comma-separated GPU UUIDs the listing promises; inventory fails unless exactly these are visible")
    p.add_argument("--gemm-n", type=_positive_int, default=8192, help="matmul size n (n x n x n), default 8192")
    p.add_argument("--gemm-seconds", type=_nonneg_float, help="GPU seconds per GEMM run (t1 5, t2 60)")
    p.add_argument("--fp8-fast-accum", action="store_true", help="FP8 GEMM with fast accumulation")
    p.add_argument("--preheat-seconds", type=_nonneg_float, help="BF16 GEMM load before measuring, no records (t2 60)")
    p.add_argument("--copy-bytes", type=_positive_int, default=256 << 20, help="bytes per copy, default 256 MiB")
    p.add_argument("--copy-iters", type=_positive_int, default=20, help="copies per run, default 20")
    p.add_argument("--batch-size", type=_positive_int, default=128, help="ResNet-50 batch size, default 128 (keep fixed across a fleet)")
    p.add_argument("--resnet-iters", type=_positive_int, default=100, help="ResNet-50 training steps per run, default 100")
    p.add_argument("--resnet-warmup-iters", type=_nonneg_int, default=20, help="ResNet-50 steps before the first run, default 20")
    p.add_argument("--nccl-bytes", type=_positive_int, default=256 << 20, help="all_reduce message size, default 256 MiB")
    p.add_argument("--nccl-iters", type=_positive_int, default=20, help="all_reduce calls per run, default 20")
    p.add_argument("--telemetry-interval-ms", type=_positive_int, default=1000, help="nvidia-smi sampling period, default 1000")
    p.add_argument("--no-telemetry", action="store_true", help="do not run the nvidia-smi sampler (telemetry fields null)")
    return p


def parse_args(argv=None):
    """Parse the command line and fill tier defaults; exits 2 on bad usage."""
    p = build_parser()
    args = p.parse_args(argv)
    for k, v in TIER_DEFAULTS[args.tier].items():
        if getattr(args, k) is None:
            setattr(args, k, v)
    if args.probe:
        seen = []
        for pr in args.probe:
            if pr not in seen:
                seen.append(pr)
        args.probes = tuple(seen)
    else:
        args.probes = TIERS[args.tier]
    if args.nccl_bytes % 4:
        p.error("--nccl-bytes must be a multiple of 4 (float32 elements)")
    return args


def log(msg):
    print("gpurent-bench: " + msg, file=sys.stderr, flush=True)


class Runner:
    """Holds what every record of one suite run shares and prints records."""

    def __init__(self, args, rows, software, sampler, out=sys.stdout):
        self.args = args
        self.rows = rows
        self.software = software
        self.sampler = sampler
        self.out = out
        self.failed = 0
        self.gpu_type = args.gpu_type or (rows[0]["name"] if rows and rows[0].get("name") else "unknown")

    def emit(self, probe, uuids, value, run, warmup, params, started, ended, t0, t1, error=None):
        tel = self.sampler.window(uuids, t0, t1) if self.sampler is not None else None
        rec = record.make_record(probe, uuids, self.gpu_type, value, run, warmup, params,
                                 started, ended, tel, self.software, error)
        if error is not None:
            self.failed += 1
        self.out.write(record.dumps(rec) + "\n")
        self.out.flush()

    def now(self):
        return self.sampler.now() if self.sampler is not None else time.monotonic()

    def fail(self, probe, uuids, params, exc, run=1):
        t = record.utc_now()
        m = self.now()
        msg = "%s: %s" % (type(exc).__name__, exc) if isinstance(exc, BaseException) else str(exc)
        log("%s on %s failed: %s" % (probe, ",".join(uuids), msg))
        self.emit(probe, uuids, None, run, False, params, t, t, m, m, error=msg)

    def series(self, probe, benches, params_of):
        """Warm-up and timed runs of built benches [(uuid, bench)], all GPUs in
        parallel per run (each GPU measured by its own thread)."""
        live = list(benches)
        phases = [(True, i) for i in range(1, self.args.warmup + 1)]
        phases += [(False, i) for i in range(1, self.args.runs + 1)]

        def one(bench):
            started = record.utc_now()
            t0 = self.now()
            try:
                value, err = bench.run(), None
            except Exception as e:  # one GPU's failure must not hide the others
                value, err = None, "%s: %s" % (type(e).__name__, e)
            return value, err, started, record.utc_now(), t0, self.now()

        with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, len(live))) as pool:
            for warm, run in phases:
                if not live:
                    return
                results = list(pool.map(lambda ub: one(ub[1]), live))
                still = []
                for (uuid, bench), (value, err, started, ended, t0, t1) in zip(live, results):
                    self.emit(probe, [uuid], value, run, warm, params_of(bench), started, ended, t0, t1, err)
                    if err is None:
                        still.append((uuid, bench))
                    else:
                        log("%s on %s failed: %s" % (probe, uuid, err))
                live = still


def _hex32(u):
    """The 32 hex digits of a GPU UUID in any spelling ("GPU-xxxxxxxx-...", bare), or None."""
    if u is None:
        return None
    digits = re.sub(r"[^0-9a-f]", "", str(u).lower().replace("gpu-", "", 1))
    return digits if len(digits) == 32 else None


def torch_devices(rows):
    """[(cuda index, uuid)] for the visible GPUs, checked against torch."""
    import torch  # noqa: PLC0415

    if not torch.cuda.is_available():
        raise RuntimeError("torch sees no CUDA device")
    n = torch.cuda.device_count()
    if n != len(rows):
        raise RuntimeError("torch sees %d GPUs, nvidia-smi %d" % (n, len(rows)))
    out = []
    for i, row in enumerate(rows):
        props = torch.cuda.get_device_properties(i)
        torch_uuid = _hex32(getattr(props, "uuid", None))
        smi_uuid = _hex32(row["uuid"])
        if torch_uuid and smi_uuid and torch_uuid != smi_uuid:
            raise RuntimeError("CUDA device %d is %s, nvidia-smi row %d is %s; set CUDA_DEVICE_ORDER=PCI_BUS_ID"
                               % (i, props.uuid, i, row["uuid"]))
        out.append((i, row["uuid"]))
    return out


def inventory_check(rows, expect):
    """An error message if the visible GPUs are not exactly `expect`, else None."""
    if expect is None:
        return None
    have = [r["uuid"] for r in rows]
    missing = [u for u in expect if u not in have]
    extra = [u for u in have if u not in expect]
    if not missing and not extra:
        return None
    parts = []
    if missing:
        parts.append("missing " + ",".join(missing))
    if extra:
        parts.append("unexpected " + ",".join(extra))
    return "visible GPUs do not match the listing: " + "; ".join(parts)


def run_inventory(r):
    rows = r.rows
    started = record.utc_now()
    t0 = r.now()
    params = {"gpus": rows, "cuda_driver": inventory.driver_cuda_version(), "topology": inventory.topology()}
    err = inventory_check(rows, r.args.expect_uuids)
    uuids = [row["uuid"] for row in rows]
    r.emit("inventory", uuids, None if err else len(rows), 1, False, params,
           started, record.utc_now(), t0, r.now(), err)


def run_gemm(r, devices, dtype, seconds=None, warm_only=False):
    from . import gemm  # noqa: PLC0415
    import torch  # noqa: PLC0415

    probe = "gemm_" + dtype
    benches = []
    for idx, uuid in devices:
        if dtype == "fp8" and not gemm.has_fp8(torch, idx):
            if not warm_only:
                log("gemm_fp8 skipped on %s: no FP8 matmul (compute capability < 8.9)" % uuid)
            continue
        try:
            benches.append((uuid, gemm.GemmBench(idx, dtype, r.args.gemm_n,
                                                 r.args.gemm_seconds if seconds is None else seconds,
                                                 r.args.fp8_fast_accum)))
        except Exception as e:
            if warm_only:
                log("pre-heat on %s failed: %s: %s" % (uuid, type(e).__name__, e))
            else:
                r.fail(probe, [uuid], {"n": r.args.gemm_n, "dtype": dtype}, e)
    if warm_only:
        with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, len(benches))) as pool:
            list(pool.map(lambda ub: ub[1].run(), benches))
    else:
        r.series(probe, benches, lambda b: dict(b.params, iters=getattr(b, "last_iters", None)))
    del benches
    torch.cuda.empty_cache()


def run_copy(r, devices, kind):
    from . import bandwidth  # noqa: PLC0415
    import torch  # noqa: PLC0415

    probe = "copy_" + kind
    # One GPU at a time: copies of several GPUs share host memory and PCIe
    # switches, and the figure is meant per GPU.
    for idx, uuid in devices:
        try:
            bench = bandwidth.CopyBench(idx, kind, r.args.copy_bytes, r.args.copy_iters)
        except Exception as e:
            r.fail(probe, [uuid], {"kind": kind, "bytes": r.args.copy_bytes}, e)
            continue
        r.series(probe, [(uuid, bench)], lambda b: b.params)
        del bench
        torch.cuda.empty_cache()


def run_resnet(r, devices):
    from . import resnet50  # noqa: PLC0415
    import torch  # noqa: PLC0415

    for idx, uuid in devices:
        try:
            bench = resnet50.ResNet50Bench(idx, r.args.batch_size, r.args.resnet_iters,
                                           r.args.resnet_warmup_iters)
        except Exception as e:
            r.fail("resnet50_amp", [uuid], {"batch_size": r.args.batch_size}, e)
            continue
        r.series("resnet50_amp", [(uuid, bench)], lambda b: b.params)
        del bench
        torch.cuda.empty_cache()


def run_nccl(r, devices):
    from . import nccl  # noqa: PLC0415

    uuids = [u for _, u in devices]
    params = {"world_size": len(devices), "bytes": r.args.nccl_bytes, "iters": r.args.nccl_iters,
              "op": "all_reduce_sum_float32", "formula": "busbw = algbw*2(n-1)/n"}
    if len(devices) < 2:
        log("nccl_allreduce skipped: needs 2 or more GPUs, %d visible" % len(devices))
        return
    timed = 0
    try:
        for warm, run, bw, started, ended, t0, t1 in nccl.run_allreduce(
                len(devices), r.args.nccl_bytes, r.args.nccl_iters, r.args.warmup, r.args.runs):
            r.emit("nccl_allreduce", uuids, bw, run, warm, params, started, ended, t0, t1)
            if not warm:
                timed = run
    except Exception as e:
        r.fail("nccl_allreduce", uuids, params, e, run=timed + 1)


def main(argv=None, out=sys.stdout):
    os.environ.setdefault("CUDA_DEVICE_ORDER", "PCI_BUS_ID")
    args = parse_args(argv)
    try:
        rows = inventory.query()
    except inventory.InventoryError as e:
        if args.expect_uuids is None:
            log("cannot list GPUs: %s (pass --expect-uuids to get an error record)" % e)
            return 3
        sw = {"driver": None, "cuda": None, "torch": None, "synthetic": False}
        r = Runner(args, [], sw, None, out)
        r.gpu_type = args.gpu_type or "unknown"
        r.fail("inventory", args.expect_uuids, {}, e)
        return 1
    sw = inventory.software_info(rows)
    uuids = [row["uuid"] for row in rows]
    sampler = None if args.no_telemetry else telemetry.Sampler(uuids, args.telemetry_interval_ms)
    if sampler is not None:
        sampler.start()
        if sampler.start_error:
            log("telemetry off: " + sampler.start_error)
    try:
        r = Runner(args, rows, sw, sampler, out)
        gpu_probes = [p for p in args.probes if p != "inventory"]
        if "inventory" in args.probes:
            run_inventory(r)
        if not gpu_probes:
            return 1 if r.failed else 0
        try:
            devices = torch_devices(rows)
        except Exception as e:  # torch missing or disagreeing: every GPU probe fails
            for p in gpu_probes:
                r.fail(p, uuids, {}, e)
            return 1
        if args.preheat_seconds > 0 and any(p.startswith("gemm_") for p in gpu_probes):
            log("pre-heat: BF16 GEMM for %.0f s" % args.preheat_seconds)
            try:
                run_gemm(r, devices, "bf16", seconds=args.preheat_seconds, warm_only=True)
            except Exception as e:
                log("pre-heat failed: %s: %s" % (type(e).__name__, e))
        for p in gpu_probes:
            log("probe " + p)
            try:
                if p in ("gemm_bf16", "gemm_fp8"):
                    run_gemm(r, devices, p[5:])
                elif p.startswith("copy_"):
                    run_copy(r, devices, p[5:])
                elif p == "resnet50_amp":
                    run_resnet(r, devices)
                elif p == "nccl_allreduce":
                    run_nccl(r, devices)
            except Exception as e:
                r.fail(p, uuids, {}, e)
        return 1 if r.failed else 0
    finally:
        if sampler is not None:
            sampler.stop()
            if sampler.bad_lines:
                log("telemetry: %d unparsable nvidia-smi lines, last: %s"
                    % (sampler.bad_lines, sampler.last_error))


if __name__ == "__main__":
    sys.exit(main())
