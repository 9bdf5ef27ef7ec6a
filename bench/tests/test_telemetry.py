import os
import time
import unittest

from gpurent_bench import telemetry

U0 = "GPU-11111111-2222-3333-4444-555555555555"
U1 = "GPU-aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee"
FAKEBIN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fakebin")


class ParseTest(unittest.TestCase):
    def test_line(self):
        s = telemetry.parse_line(
            "2026/11/30 08:00:01.123, 0, %s, 67, 1980, 689.42, 0x0000000000000004\n" % U0, at=5.0)
        self.assertEqual(s.index, 0)
        self.assertEqual(s.uuid, U0)
        self.assertEqual(s.temp_c, 67.0)
        self.assertEqual(s.sm_clock_mhz, 1980.0)
        self.assertEqual(s.power_w, 689.42)
        self.assertEqual(s.throttle_mask, 4)
        self.assertEqual(s.at, 5.0)
        self.assertEqual(s.timestamp, "2026/11/30 08:00:01.123")

    def test_not_supported_fields(self):
        s = telemetry.parse_line(
            "2026/11/30 08:00:01.123, 1, %s, [Not Supported], [N/A], [Not Supported], [Not Supported]" % U1)
        self.assertIsNone(s.temp_c)
        self.assertIsNone(s.sm_clock_mhz)
        self.assertIsNone(s.power_w)
        self.assertIsNone(s.throttle_mask)
        s = telemetry.parse_line("t, 0, %s, 40, N/A, [Unknown Error], 0x1" % U0)
        self.assertIsNone(s.sm_clock_mhz)
        self.assertIsNone(s.power_w)

    def test_bad_lines(self):
        for line in ("", "garbage line", "t, 0, %s, 40, 1000, 300" % U0,
                     "t, 0, %s, hot, 1000, 300, 0x0" % U0,
                     "t, 0, %s, 40, 1000, 300, 0xZZ" % U0,
                     "t, zero, %s, 40, 1000, 300, 0x0" % U0,
                     "t, 0, [N/A], 40, 1000, 300, 0x0"):
            with self.subTest(line=line), self.assertRaises(telemetry.TelemetryParseError):
                telemetry.parse_line(line)

    def test_decode_throttle(self):
        self.assertEqual(telemetry.decode_throttle(None), [])
        self.assertEqual(telemetry.decode_throttle(0), [])
        self.assertEqual(telemetry.decode_throttle(0x4 | 0x40), ["sw_power_cap", "hw_thermal_slowdown"])
        self.assertEqual(telemetry.decode_throttle(0x88), ["hw_slowdown", "hw_power_brake_slowdown"])
        self.assertEqual(telemetry.decode_throttle(1 << 12), ["bit_12"])

    def test_summarize(self):
        S = telemetry.Sample
        samples = [
            S("t", 0, U0, 60.0, 1980.0, 600.0, 0x1, at=0.5),   # before the window
            S("t", 0, U0, 65.0, 1900.0, 690.0, 0x4, at=1.0),
            S("t", 1, U1, None, 1800.0, None, None, at=1.0),
            S("t", 0, U0, 71.0, 1700.0, 700.0, 0x1, at=2.0),
            S("t", 1, U1, 90.0, 1000.0, 100.0, 0x40, at=3.5),  # after the window
        ]
        got = telemetry.summarize(samples, [U0, U1], 1.0, 3.0)
        self.assertEqual(got["max_temp_c"], 71.0)
        self.assertAlmostEqual(got["mean_sm_clock_mhz"], (1900 + 1800 + 1700) / 3)
        self.assertEqual(got["min_sm_clock_mhz"], 1700.0)
        self.assertEqual(got["mean_power_w"], 695.0)
        self.assertEqual(got["throttle_reasons"], ["sw_power_cap"])
        only1 = telemetry.summarize(samples, [U1], 1.0, 3.0)
        self.assertIsNone(only1["max_temp_c"])
        self.assertIsNone(only1["mean_power_w"])
        self.assertEqual(only1["throttle_reasons"], [])
        idle = telemetry.summarize(samples, [U0], 0.0, 0.9)
        self.assertEqual(idle["throttle_reasons"], ["gpu_idle"])
        none = telemetry.summarize(samples, [U0], 10, 11)
        self.assertEqual(none, {"max_temp_c": None, "mean_sm_clock_mhz": None,
                                "min_sm_clock_mhz": None, "mean_power_w": None,
                                "throttle_reasons": []})

    def test_command(self):
        cmd = telemetry.command([U0, U1], 1000)
        self.assertEqual(cmd[0], "nvidia-smi")
        self.assertIn("--query-gpu=timestamp,index,uuid,temperature.gpu,clocks.sm,power.draw,"
                      "clocks_throttle_reasons.active", cmd)
        self.assertIn("--format=csv,noheader,nounits", cmd)
        self.assertEqual(cmd[cmd.index("-lms") + 1], "1000")
        self.assertEqual(cmd[cmd.index("-i") + 1], U0 + "," + U1)


class SamplerTest(unittest.TestCase):
    """The sampler's subprocess plumbing, against tests/fakebin/nvidia-smi."""

    def setUp(self):
        self.path = os.environ.get("PATH", "")
        os.environ["PATH"] = FAKEBIN + os.pathsep + self.path

    def tearDown(self):
        os.environ["PATH"] = self.path

    def test_samples_arrive_and_bad_lines_are_counted(self):
        with telemetry.Sampler([U0, U1], interval_ms=20) as s:
            self.assertIsNone(s.start_error)
            deadline = time.monotonic() + 30
            while len(s.samples()) < 8 and time.monotonic() < deadline:
                time.sleep(0.02)
        samples = s.samples()
        self.assertGreaterEqual(len(samples), 8)
        self.assertEqual({x.uuid for x in samples}, {U0, U1})
        self.assertGreaterEqual(s.bad_lines, 1)
        self.assertIn("garbage", s.last_error)
        tel = s.window([U0], samples[0].at, samples[-1].at)
        self.assertIsNotNone(tel["max_temp_c"])
        self.assertIn("sw_power_cap", tel["throttle_reasons"])

    def test_missing_nvidia_smi(self):
        os.environ["PATH"] = os.path.join(FAKEBIN, "no-such-dir")
        with telemetry.Sampler([U0]) as s:
            self.assertIsNotNone(s.start_error)
        self.assertEqual(s.samples(), [])


if __name__ == "__main__":
    unittest.main()
