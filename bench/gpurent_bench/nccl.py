"""NCCL all_reduce bus bandwidth over all visible GPUs (torch.distributed).

One process per GPU on this host, rendezvous over loopback TCP. A run times
`iters` all_reduce calls of `size` bytes (float32, sum) with CUDA events on
every rank and keeps the slowest rank's time. algbw = size / time per call;
busbw = algbw · 2(n−1)/n (nccl-tests' formula for all_reduce), in GB/s (1e9).
"""

import datetime
import socket
import time


def algbw(size_bytes, seconds_per_op):
    """Algorithm bandwidth in GB/s: bytes reduced per second."""
    if seconds_per_op <= 0:
        raise ValueError("seconds_per_op must be > 0")
    return size_bytes / seconds_per_op / 1e9


def busbw(alg_bw, n_ranks):
    """Bus bandwidth of all_reduce: algbw · 2(n−1)/n."""
    if n_ranks < 1:
        raise ValueError("n_ranks must be >= 1")
    return alg_bw * 2.0 * (n_ranks - 1) / n_ranks


def free_port():
    """A TCP port free on 127.0.0.1 right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _worker(rank, world, port, size, iters, warmup, runs, queue):
    import torch  # noqa: PLC0415 - only on a GPU machine
    import torch.distributed as dist  # noqa: PLC0415

    try:
        torch.cuda.set_device(rank)
        dist.init_process_group("nccl", init_method="tcp://127.0.0.1:%d" % port,
                                rank=rank, world_size=world,
                                timeout=datetime.timedelta(minutes=5))
        buf = torch.ones(size // 4, dtype=torch.float32, device="cuda")
        dist.all_reduce(buf)  # sets up the communicator
        torch.cuda.synchronize()
        for i in range(warmup + runs):
            dist.barrier()
            torch.cuda.synchronize()
            started = datetime.datetime.now(datetime.timezone.utc)
            t0 = time.monotonic()
            start = torch.cuda.Event(enable_timing=True)
            end = torch.cuda.Event(enable_timing=True)
            start.record()
            for _ in range(iters):
                dist.all_reduce(buf)
            end.record()
            end.synchronize()
            elapsed = torch.tensor([start.elapsed_time(end) / 1000.0], device="cuda")
            dist.all_reduce(elapsed, op=dist.ReduceOp.MAX)
            t1 = time.monotonic()
            ended = datetime.datetime.now(datetime.timezone.utc)
            if rank == 0:
                queue.put(("run", i < warmup, i + 1 if i < warmup else i - warmup + 1,
                           float(elapsed.item()), started, ended, t0, t1))
        dist.destroy_process_group()
        if rank == 0:
            queue.put(("done",))
    except Exception as e:  # reported to the parent as an error record
        queue.put(("error", rank, "%s: %s" % (type(e).__name__, e)))


def run_allreduce(world, size=256 << 20, iters=20, warmup=1, runs=5):
    """Yield, per run, (warmup, run, busbw GB/s, started_at, ended_at, t0, t1)
    where t0/t1 are time.monotonic() values for the telemetry window.

    Raises RuntimeError with the first rank's error if a rank fails.
    """
    import torch.multiprocessing as mp  # noqa: PLC0415

    if world < 2:
        raise ValueError("all_reduce needs at least 2 GPUs, have %d" % world)
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    port = free_port()
    procs = [ctx.Process(target=_worker, args=(r, world, port, size, iters, warmup, runs, queue))
             for r in range(world)]
    for p in procs:
        p.start()
    try:
        while True:
            try:
                msg = queue.get(timeout=600)
            except Exception:
                raise RuntimeError("no all_reduce result within 10 minutes") from None
            if msg[0] == "done":
                break
            if msg[0] == "error":
                raise RuntimeError("rank %d: %s" % (msg[1], msg[2]))
            _, is_warmup, run, elapsed, started, ended, t0, t1 = msg
            yield (is_warmup, run, busbw(algbw(size, elapsed / iters), world),
                   started, ended, t0, t1)
    finally:
        for p in procs:
            p.join(timeout=30)
            if p.is_alive():
                p.terminate()
                p.join()
