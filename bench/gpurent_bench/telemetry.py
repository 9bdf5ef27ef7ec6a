"""GPU telemetry at 1 Hz from nvidia-smi, and the parser of its CSV lines.

The sampler runs
    nvidia-smi --query-gpu=<QUERY_FIELDS> --format=csv,noheader,nounits -lms 1000 -i <uuids>
in the background and keeps every sample with the monotonic time it arrived;
summarize() reduces the samples of one GPU set over one run's time window to the
record's telemetry object.
"""

import subprocess
import threading
import time

QUERY_FIELDS = (
    "timestamp",
    "index",
    "uuid",
    "temperature.gpu",
    "clocks.sm",
    "power.draw",
    "clocks_throttle_reasons.active",
)

# NVML clock-throttle (clock-event) reason bits, as nvidia-smi prints them in hex.
THROTTLE_REASONS = (
    (0x0000000000000001, "gpu_idle"),
    (0x0000000000000002, "applications_clocks_setting"),
    (0x0000000000000004, "sw_power_cap"),
    (0x0000000000000008, "hw_slowdown"),
    (0x0000000000000010, "sync_boost"),
    (0x0000000000000020, "sw_thermal_slowdown"),
    (0x0000000000000040, "hw_thermal_slowdown"),
    (0x0000000000000080, "hw_power_brake_slowdown"),
    (0x0000000000000100, "display_clock_setting"),
)

# What nvidia-smi prints for a figure it cannot give.
_MISSING = {"[not supported]", "[n/a]", "n/a", "[unknown error]", "[gpu is lost]", ""}


class TelemetryParseError(ValueError):
    """A line that is not a sample of QUERY_FIELDS."""


class Sample:
    """One nvidia-smi line: one GPU at one instant. Missing figures are None."""

    __slots__ = ("timestamp", "index", "uuid", "temp_c", "sm_clock_mhz",
                 "power_w", "throttle_mask", "at")

    def __init__(self, timestamp, index, uuid, temp_c, sm_clock_mhz, power_w,
                 throttle_mask, at=0.0):
        self.timestamp = timestamp
        self.index = index
        self.uuid = uuid
        self.temp_c = temp_c
        self.sm_clock_mhz = sm_clock_mhz
        self.power_w = power_w
        self.throttle_mask = throttle_mask
        self.at = at

    def __repr__(self):
        return "Sample(%s)" % ", ".join("%s=%r" % (k, getattr(self, k)) for k in self.__slots__)


def missing_to_none(s):
    """The stripped field, or None where nvidia-smi printed [Not Supported], [N/A] and the like."""
    s = s.strip()
    return None if s.lower() in _MISSING else s


def _float(s, name):
    s = missing_to_none(s)
    if s is None:
        return None
    try:
        return float(s)
    except ValueError:
        raise TelemetryParseError("%s: %r is not a number" % (name, s)) from None


def _mask(s):
    s = missing_to_none(s)
    if s is None:
        return None
    try:
        return int(s, 16) if s.lower().startswith("0x") else int(s)
    except ValueError:
        raise TelemetryParseError("throttle reasons: %r is not a bit mask" % (s,)) from None


def parse_line(line, at=0.0):
    """Parse one line of nvidia-smi CSV (noheader, nounits) of QUERY_FIELDS."""
    parts = [p.strip() for p in line.rstrip("\r\n").split(",")]
    if len(parts) != len(QUERY_FIELDS):
        raise TelemetryParseError("want %d fields, got %d in %r" % (len(QUERY_FIELDS), len(parts), line))
    index = missing_to_none(parts[1])
    uuid = missing_to_none(parts[2])
    if uuid is None:
        raise TelemetryParseError("no GPU UUID in %r" % (line,))
    try:
        index = int(index) if index is not None else None
    except ValueError:
        raise TelemetryParseError("index %r is not an integer" % (index,)) from None
    return Sample(
        timestamp=parts[0],
        index=index,
        uuid=uuid,
        temp_c=_float(parts[3], "temperature.gpu"),
        sm_clock_mhz=_float(parts[4], "clocks.sm"),
        power_w=_float(parts[5], "power.draw"),
        throttle_mask=_mask(parts[6]),
        at=at,
    )


def decode_throttle(mask):
    """Names of the reason bits set in mask, in bit order; unknown bits as 'bit_N'."""
    if mask is None:
        return []
    names = []
    known = 0
    for bit, name in THROTTLE_REASONS:
        known |= bit
        if mask & bit:
            names.append(name)
    rest = mask & ~known
    n = 0
    while rest:
        if rest & 1:
            names.append("bit_%d" % n)
        rest >>= 1
        n += 1
    return names


def summarize(samples, uuids=None, start=None, end=None):
    """The record's telemetry object for samples of `uuids` with start <= at <= end.

    max_temp_c and min_sm_clock_mhz are extremes over all GPUs and samples;
    mean_sm_clock_mhz and mean_power_w are means over all GPUs and samples (so
    mean_power_w is the mean power of one GPU); throttle_reasons is the union
    of reasons seen, except gpu_idle (a loaded GPU under test is not idle; an
    idle reason while measuring is itself worth a look, so it is kept only if
    it is the sole reason the GPU ever reported).
    """
    want = set(uuids) if uuids is not None else None
    sel = [s for s in samples
           if (want is None or s.uuid in want)
           and (start is None or s.at >= start)
           and (end is None or s.at <= end)]
    temps = [s.temp_c for s in sel if s.temp_c is not None]
    clocks = [s.sm_clock_mhz for s in sel if s.sm_clock_mhz is not None]
    power = [s.power_w for s in sel if s.power_w is not None]
    mask = 0
    for s in sel:
        if s.throttle_mask is not None:
            mask |= s.throttle_mask
    reasons = decode_throttle(mask)
    if len(reasons) > 1 and "gpu_idle" in reasons:
        reasons.remove("gpu_idle")
    return {
        "max_temp_c": max(temps) if temps else None,
        "mean_sm_clock_mhz": sum(clocks) / len(clocks) if clocks else None,
        "min_sm_clock_mhz": min(clocks) if clocks else None,
        "mean_power_w": sum(power) / len(power) if power else None,
        "throttle_reasons": reasons,
    }


def command(uuids, interval_ms=1000):
    """The nvidia-smi argument list of the sampler."""
    if interval_ms < 1:
        raise ValueError("interval_ms must be >= 1")
    cmd = ["nvidia-smi", "--query-gpu=" + ",".join(QUERY_FIELDS),
           "--format=csv,noheader,nounits", "-lms", str(int(interval_ms))]
    if uuids:
        cmd += ["-i", ",".join(uuids)]
    return cmd


class Sampler:
    """Runs nvidia-smi in loop mode and keeps its samples, with a monotonic time.

    Use as a context manager. Lines that do not parse are counted in
    `bad_lines` and their text kept in `last_error`; they never stop sampling.
    If nvidia-smi cannot start, `start_error` says why and no samples arrive
    (records then carry all-null telemetry rather than invented figures).
    """

    def __init__(self, uuids, interval_ms=1000, clock=time.monotonic):
        self._cmd = command(uuids, interval_ms)
        self._clock = clock
        self._lock = threading.Lock()
        self._samples = []
        self._proc = None
        self._thread = None
        self.bad_lines = 0
        self.last_error = None
        self.start_error = None

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.stop()
        return False

    def start(self):
        try:
            self._proc = subprocess.Popen(self._cmd, stdout=subprocess.PIPE,
                                          stderr=subprocess.DEVNULL, text=True, bufsize=1)
        except OSError as e:
            self.start_error = "nvidia-smi: %s" % e
            return
        self._thread = threading.Thread(target=self._read, name="telemetry", daemon=True)
        self._thread.start()

    def _read(self):
        for line in self._proc.stdout:
            if not line.strip():
                continue
            try:
                s = parse_line(line, at=self._clock())
            except TelemetryParseError as e:
                with self._lock:
                    self.bad_lines += 1
                    self.last_error = str(e)
                continue
            with self._lock:
                self._samples.append(s)

    def stop(self):
        if self._proc is not None and self._proc.poll() is None:
            self._proc.terminate()
            try:
                self._proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
        if self._thread is not None:
            self._thread.join(timeout=5)
        if self._proc is not None and self._proc.stdout is not None:
            self._proc.stdout.close()

    def now(self):
        return self._clock()

    def samples(self):
        with self._lock:
            return list(self._samples)

    def window(self, uuids, start, end):
        """Telemetry of `uuids` between two values of now()."""
        return summarize(self.samples(), uuids, start, end)
