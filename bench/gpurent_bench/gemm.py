"""Dense matmul throughput: BF16 (every GPU) and FP8 (GPUs that have it).

A run multiplies two n x n matrices repeatedly for about `seconds` seconds of
GPU time, timed with CUDA events; TFLOPS = 2·n³·iterations / seconds / 1e12.
"""

import math

from . import cudatime


def flops(m, n, k):
    """Floating-point operations of one (m x k)·(k x n) matmul: 2·m·n·k."""
    for x in (m, n, k):
        if not isinstance(x, int) or x < 1:
            raise ValueError("matrix dimensions must be positive integers")
    return 2 * m * n * k


def tflops(total_flops, seconds):
    """TFLOP/s (1e12) of total_flops done in seconds."""
    if seconds <= 0:
        raise ValueError("seconds must be > 0")
    return total_flops / seconds / 1e12


def iterations_for(seconds, per_iter_s, minimum=10):
    """How many iterations fill `seconds`, given one takes per_iter_s."""
    if per_iter_s <= 0:
        raise ValueError("per_iter_s must be > 0")
    return max(minimum, int(math.ceil(seconds / per_iter_s)))


def has_fp8(torch, device):
    """True when the GPU (compute capability 8.9+: Ada, Hopper, later) and this
    torch build support FP8 matmul."""
    if not hasattr(torch, "float8_e4m3fn") or not hasattr(torch, "_scaled_mm"):
        return False
    return torch.cuda.get_device_capability(device) >= (8, 9)


class GemmBench:
    """n x n x n matmul on one device in "bf16" or "fp8" (e4m3 inputs, BF16 output)."""

    def __init__(self, device, dtype="bf16", n=8192, seconds=60.0, fast_accum=False):
        import torch  # noqa: PLC0415 - only on a GPU machine

        if dtype not in ("bf16", "fp8"):
            raise ValueError("dtype must be bf16 or fp8")
        self._torch = torch
        self.device = torch.device("cuda", device)
        self.n = n
        self.seconds = float(seconds)
        self._per_iter = None
        gen = torch.Generator(device=self.device)
        gen.manual_seed(1234)
        a = torch.randn(n, n, device=self.device, dtype=torch.bfloat16, generator=gen)
        b = torch.randn(n, n, device=self.device, dtype=torch.bfloat16, generator=gen)
        if dtype == "bf16":
            c = torch.empty(n, n, device=self.device, dtype=torch.bfloat16)
            self._step = lambda: torch.matmul(a, b, out=c)
        else:
            if not has_fp8(torch, self.device):
                raise RuntimeError("this GPU or torch build has no FP8 matmul")
            a8 = a.to(torch.float8_e4m3fn)
            # _scaled_mm wants the second operand column-major.
            b8 = b.t().contiguous().to(torch.float8_e4m3fn).t()
            one = torch.ones((), device=self.device, dtype=torch.float32)
            del a, b

            def step():
                return torch._scaled_mm(a8, b8, scale_a=one, scale_b=one,
                                        out_dtype=torch.bfloat16, use_fast_accum=fast_accum)
            self._step = step
        self.params = {"n": n, "dtype": dtype, "seconds": self.seconds,
                       "flops_per_iter": flops(n, n, n)}
        if dtype == "fp8":
            self.params["fast_accum"] = bool(fast_accum)
            self.params["accumulate"] = "fp32"

    def run(self, seconds=None):
        """One timed run; returns TFLOPS and records the iteration count in params."""
        seconds = self.seconds if seconds is None else seconds
        self.last_iters = None
        if self._per_iter is None:
            self._step()  # first call selects the kernel
            self._per_iter = cudatime.elapsed_s(self._torch, self.device, self._step, 3) / 3
        iters = iterations_for(seconds, self._per_iter)
        elapsed = cudatime.elapsed_s(self._torch, self.device, self._step, iters)
        self._per_iter = elapsed / iters
        self.last_iters = iters
        return tflops(flops(self.n, self.n, self.n) * iters, elapsed)
