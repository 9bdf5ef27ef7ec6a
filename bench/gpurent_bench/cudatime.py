"""Timing of GPU work with CUDA events (torch imported by the caller)."""


def elapsed_s(torch, device, step, iters):
    """Seconds the GPU spent on `iters` calls of step(), measured with CUDA events
    recorded on the current stream of `device`."""
    if iters < 1:
        raise ValueError("iters must be >= 1")
    with torch.cuda.device(device):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        torch.cuda.synchronize(device)
        start.record()
        for _ in range(iters):
            step()
        end.record()
        end.synchronize()
        return start.elapsed_time(end) / 1000.0
