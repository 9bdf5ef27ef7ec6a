"""Copy bandwidth: host→device and device→host from pinned memory, and
device→device within one GPU.

GB/s = bytes_counted·iterations / seconds / 1e9. For host↔device copies the
bytes counted are the bytes moved over PCIe (size once). For device→device the
bytes counted are read plus written (2·size), the memory traffic, which is what
compares with the card's memory bandwidth (about 4.3 of 4.8 TB/s on an H200).
"""

from . import cudatime

KINDS = ("h2d", "d2h", "d2d")


def bytes_counted(kind, size):
    """Bytes one copy of `size` bytes counts for in the GB/s figure."""
    if kind not in KINDS:
        raise ValueError("kind must be one of %s" % ", ".join(KINDS))
    if size < 1:
        raise ValueError("size must be >= 1")
    return 2 * size if kind == "d2d" else size


def gb_per_s(total_bytes, seconds):
    if seconds <= 0:
        raise ValueError("seconds must be > 0")
    return total_bytes / seconds / 1e9


class CopyBench:
    """Repeated copies of `size` bytes of one kind on one device."""

    def __init__(self, device, kind, size=256 << 20, iters=20):
        import torch  # noqa: PLC0415 - only on a GPU machine

        if kind not in KINDS:
            raise ValueError("kind must be one of %s" % ", ".join(KINDS))
        self._torch = torch
        self.device = torch.device("cuda", device)
        self.kind = kind
        self.size = size
        self.iters = iters
        u8 = torch.uint8
        if kind == "h2d":
            src = torch.empty(size, dtype=u8, pin_memory=True)
            dst = torch.empty(size, dtype=u8, device=self.device)
        elif kind == "d2h":
            src = torch.empty(size, dtype=u8, device=self.device)
            dst = torch.empty(size, dtype=u8, pin_memory=True)
        else:
            src = torch.empty(size, dtype=u8, device=self.device)
            dst = torch.empty(size, dtype=u8, device=self.device)
        src.fill_(0x5A)
        self._step = lambda: dst.copy_(src, non_blocking=True)
        self.params = {"kind": kind, "bytes": size, "iters": iters,
                       "bytes_counted": "read+write" if kind == "d2d" else "once"}
        if kind != "d2d":
            self.params["host_memory"] = "pinned"
        self._step()

    def run(self):
        elapsed = cudatime.elapsed_s(self._torch, self.device, self._step, self.iters)
        return gb_per_s(bytes_counted(self.kind, self.size) * self.iters, elapsed)
