import copy
import datetime
import json
import unittest

from gpurent_bench import record

T0 = datetime.datetime(2026, 11, 30, 1, 2, 3, 456789, tzinfo=datetime.timezone.utc)
T1 = T0 + datetime.timedelta(seconds=61)
SW = {"driver": "550.54.15", "cuda": "12.4", "torch": "2.5.1", "synthetic": False}
TEL = {"max_temp_c": 71.0, "mean_sm_clock_mhz": 1975.5, "min_sm_clock_mhz": 1950.0,
       "mean_power_w": 690.25, "throttle_reasons": ["sw_power_cap"]}


def good(**kw):
    args = dict(probe="gemm_bf16", uuids=["GPU-1"], gpu_type="h200-141g-sxm", value=781.5,
                run=1, warmup=False, params={"n": 8192}, started_at=T0, ended_at=T1,
                telemetry=TEL, software=SW)
    args.update(kw)
    return record.make_record(**args)


class RecordTest(unittest.TestCase):
    def test_round_trip(self):
        rec = good()
        line = record.dumps(rec)
        self.assertNotIn("\n", line)
        back = record.loads(line)
        self.assertEqual(back, rec)
        self.assertEqual(list(back), list(record.FIELDS))
        self.assertEqual(back["schema"], 1)
        self.assertEqual(back["unit"], "TFLOPS")
        self.assertEqual(back["started_at"], "2026-11-30T01:02:03.456Z")
        self.assertEqual(back["ended_at"], "2026-11-30T01:03:04.456Z")

    def test_every_probe_has_its_unit(self):
        for probe, unit in record.PROBE_UNITS.items():
            self.assertEqual(good(probe=probe)["unit"], unit)

    def test_error_record(self):
        rec = good(value=None, error="RuntimeError: CUDA out of memory")
        self.assertIsNone(record.loads(record.dumps(rec))["value"])
        with self.assertRaises(record.RecordError):
            good(value=None)
        with self.assertRaises(record.RecordError):
            good(value=1.0, error="boom")

    def test_null_telemetry(self):
        rec = good(telemetry=None)
        self.assertEqual(rec["telemetry"], record.empty_telemetry())

    def test_non_utc_times_are_converted(self):
        cst = datetime.timezone(datetime.timedelta(hours=8))
        rec = good(started_at=T0.astimezone(cst), ended_at=T1.astimezone(cst))
        self.assertEqual(rec["started_at"], "2026-11-30T01:02:03.456Z")
        with self.assertRaises(record.RecordError):
            good(started_at=T0.replace(tzinfo=None))

    def test_invalid(self):
        base = good()
        cases = {
            "schema 2": lambda r: r.__setitem__("schema", 2),
            "schema true": lambda r: r.__setitem__("schema", True),
            "unknown probe": lambda r: r.__setitem__("probe", "gemm_fp4"),
            "wrong unit": lambda r: r.__setitem__("unit", "GB/s"),
            "no uuids": lambda r: r.__setitem__("uuids", []),
            "dup uuids": lambda r: r.__setitem__("uuids", ["GPU-1", "GPU-1"]),
            "empty gpu_type": lambda r: r.__setitem__("gpu_type", ""),
            "run 0": lambda r: r.__setitem__("run", 0),
            "run bool": lambda r: r.__setitem__("run", True),
            "run float": lambda r: r.__setitem__("run", 1.0),
            "warmup int": lambda r: r.__setitem__("warmup", 0),
            "params list": lambda r: r.__setitem__("params", []),
            "negative": lambda r: r.__setitem__("value", -1.0),
            "string value": lambda r: r.__setitem__("value", "781"),
            "value missing": lambda r: r.pop("value"),
            "extra field": lambda r: r.__setitem__("verdict", "PASS"),
            "ended before": lambda r: r.__setitem__("ended_at", "2026-11-30T01:00:00.000Z"),
            "no Z": lambda r: r.__setitem__("started_at", "2026-11-30T01:02:03.456+08:00"),
            "bad time": lambda r: r.__setitem__("started_at", "yesterdayZ"),
            "empty error": lambda r: r.__setitem__("error", ""),
            "telemetry null": lambda r: r.__setitem__("telemetry", None),
            "telemetry field": lambda r: r["telemetry"].pop("mean_power_w"),
            "telemetry string": lambda r: r["telemetry"].__setitem__("max_temp_c", "71"),
            "throttle not list": lambda r: r["telemetry"].__setitem__("throttle_reasons", "sw_power_cap"),
            "software extra": lambda r: r["software"].__setitem__("nccl", "2.21"),
            "synthetic missing": lambda r: r["software"].pop("synthetic"),
            "synthetic string": lambda r: r["software"].__setitem__("synthetic", "false"),
            "driver number": lambda r: r["software"].__setitem__("driver", 550),
        }
        for name, mutate in cases.items():
            with self.subTest(name):
                rec = copy.deepcopy(base)
                mutate(rec)
                with self.assertRaises(record.RecordError):
                    record.validate(rec)

    def test_loads_rejects_nan_and_garbage(self):
        line = record.dumps(good()).replace('"value":781.5', '"value":NaN')
        self.assertIn("NaN", line)
        with self.assertRaises(record.RecordError):
            record.loads(line)
        with self.assertRaises(record.RecordError):
            record.loads("{not json")
        with self.assertRaises(ValueError):
            record.dumps(dict(good(), value=float("inf")))

    def test_read_records(self):
        lines = [record.dumps(good(run=i)) for i in (1, 2)]
        recs = record.read_records(["", lines[0], "  ", lines[1]])
        self.assertEqual([r["run"] for r in recs], [1, 2])
        with self.assertRaisesRegex(record.RecordError, "line 2"):
            record.read_records([lines[0], '{"schema":1}'])

    def test_integer_value_is_float(self):
        self.assertIsInstance(good(probe="inventory", value=8)["value"], float)
        # A Go-written record with an integer value still validates.
        rec = json.loads(record.dumps(good()))
        rec["value"] = 781
        record.validate(rec)


if __name__ == "__main__":
    unittest.main()
