"""T0 inventory: what nvidia-smi says about the GPUs this container can see.

query() runs nvidia-smi once; parse_inventory() and parse_cuda_version() are
pure and unit tested. The suite uses the inventory rows (ordered by index, that
is by PCI bus id) to map CUDA device i to its UUID: the container sets
CUDA_DEVICE_ORDER=PCI_BUS_ID so both count the same way.
"""

import re
import subprocess

from .telemetry import missing_to_none

INVENTORY_FIELDS = (
    "index",
    "uuid",
    "name",
    "pci.bus_id",
    "memory.total",
    "pcie.link.gen.current",
    "pcie.link.gen.max",
    "pcie.link.width.current",
    "pcie.link.width.max",
    "ecc.mode.current",
    "power.limit",
    "power.default_limit",
    "driver_version",
)

# Output key of each field: memory in MiB, power in W (nounits).
_KEYS = {
    "index": "index",
    "uuid": "uuid",
    "name": "name",
    "pci.bus_id": "pci_bus_id",
    "memory.total": "memory_mib",
    "pcie.link.gen.current": "pcie_gen_current",
    "pcie.link.gen.max": "pcie_gen_max",
    "pcie.link.width.current": "pcie_width_current",
    "pcie.link.width.max": "pcie_width_max",
    "ecc.mode.current": "ecc_mode",
    "power.limit": "power_limit_w",
    "power.default_limit": "power_default_limit_w",
    "driver_version": "driver",
}
_INTS = {"index", "memory.total", "pcie.link.gen.current", "pcie.link.gen.max",
         "pcie.link.width.current", "pcie.link.width.max"}
_FLOATS = {"power.limit", "power.default_limit"}


class InventoryError(RuntimeError):
    """nvidia-smi is missing, failed, or printed something unexpected."""


def parse_inventory(text):
    """Rows of `nvidia-smi --query-gpu=INVENTORY_FIELDS --format=csv,noheader,nounits`.

    Returns a list of dicts (keys from _KEYS) sorted by index; fields that
    nvidia-smi reports as "[Not Supported]" or "[N/A]" are None.
    """
    rows = []
    for line in text.splitlines():
        if not line.strip():
            continue
        # GPU names contain no commas; a defensive split keeps extra commas in the name.
        parts = [p.strip() for p in line.split(",")]
        extra = len(parts) - len(INVENTORY_FIELDS)
        if extra < 0:
            raise InventoryError("want %d fields, got %d in %r" % (len(INVENTORY_FIELDS), len(parts), line))
        if extra:
            parts = parts[:2] + [", ".join(parts[2:3 + extra])] + parts[3 + extra:]
        row = {}
        for name, raw in zip(INVENTORY_FIELDS, parts):
            v = missing_to_none(raw)
            if v is not None and name in _INTS:
                try:
                    v = int(float(v))
                except ValueError:
                    raise InventoryError("%s: %r is not a number" % (name, v)) from None
            elif v is not None and name in _FLOATS:
                try:
                    v = float(v)
                except ValueError:
                    raise InventoryError("%s: %r is not a number" % (name, v)) from None
            row[_KEYS[name]] = v
        if row["uuid"] is None or row["index"] is None:
            raise InventoryError("row without index or UUID: %r" % (line,))
        rows.append(row)
    rows.sort(key=lambda r: r["index"])
    return rows


_CUDA_RE = re.compile(r"CUDA Version:\s*([0-9]+(?:\.[0-9]+)*)")


def parse_cuda_version(text):
    """The driver's CUDA version from the plain `nvidia-smi` banner, or None."""
    m = _CUDA_RE.search(text)
    return m.group(1) if m else None


def _run(args, timeout=60):
    try:
        p = subprocess.run(args, capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise InventoryError("%s: %s" % (" ".join(args[:2]), e)) from None
    if p.returncode != 0:
        raise InventoryError("%s exited %d: %s" % (" ".join(args[:2]), p.returncode,
                                                   (p.stderr or p.stdout).strip()[:500]))
    return p.stdout


def query():
    """The inventory rows of the visible GPUs (raises InventoryError)."""
    out = _run(["nvidia-smi", "--query-gpu=" + ",".join(INVENTORY_FIELDS),
                "--format=csv,noheader,nounits"])
    rows = parse_inventory(out)
    if not rows:
        raise InventoryError("nvidia-smi lists no GPU")
    return rows


def driver_cuda_version():
    """CUDA version the driver supports, from the nvidia-smi banner (None if unknown)."""
    try:
        return parse_cuda_version(_run(["nvidia-smi"]))
    except InventoryError:
        return None


def topology():
    """`nvidia-smi topo -m` as text (GPU interconnect matrix), or None if it fails."""
    try:
        return _run(["nvidia-smi", "topo", "-m"]).rstrip()
    except InventoryError:
        return None


def software_info(rows=None, synthetic=False):
    """The record's software object: driver, CUDA, torch versions (None if unknown).

    cuda is the CUDA runtime torch was built with when torch is present, else
    the driver's CUDA version from nvidia-smi.
    """
    driver = rows[0]["driver"] if rows else None
    cuda = None
    torch_version = None
    try:
        import torch  # noqa: PLC0415 - torch is optional for T0
        torch_version = torch.__version__
        cuda = torch.version.cuda
    except ImportError:
        pass
    if cuda is None:
        cuda = driver_cuda_version()
    return {"driver": driver, "cuda": cuda, "torch": torch_version, "synthetic": synthetic}
