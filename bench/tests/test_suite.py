import contextlib
import io
import os
import subprocess
import sys
import unittest

from gpurent_bench import inventory, record, suite

HERE = os.path.dirname(os.path.abspath(__file__))
BENCH = os.path.dirname(HERE)
FAKEBIN = os.path.join(HERE, "fakebin")
U0 = "GPU-11111111-2222-3333-4444-555555555555"
U1 = "GPU-aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee"


def parse(*argv):
    with contextlib.redirect_stderr(io.StringIO()) as err:
        try:
            return suite.parse_args(list(argv)), None
        except SystemExit as e:
            return None, (e.code, err.getvalue())


class ArgsTest(unittest.TestCase):
    def test_tier_defaults(self):
        a, _ = parse("t0")
        self.assertEqual((a.runs, a.warmup, a.probes), (1, 0, ("inventory",)))
        a, _ = parse("t1")
        self.assertEqual((a.runs, a.warmup, a.gemm_seconds, a.preheat_seconds), (3, 1, 5.0, 0.0))
        self.assertEqual(a.probes, ("inventory", "gemm_bf16", "copy_h2d", "copy_d2h", "copy_d2d"))
        a, _ = parse("t2")
        self.assertEqual((a.runs, a.warmup, a.gemm_seconds, a.preheat_seconds), (5, 1, 60.0, 60.0))
        self.assertIn("gemm_fp8", a.probes)
        self.assertIn("resnet50_amp", a.probes)
        self.assertIn("nccl_allreduce", a.probes)
        self.assertEqual((a.gemm_n, a.batch_size, a.copy_bytes), (8192, 128, 256 << 20))

    def test_overrides(self):
        a, _ = parse("t2", "--runs", "7", "--warmup", "0", "--probe", "gemm_bf16",
                     "--probe", "copy_d2d", "--probe", "gemm_bf16", "--gemm-n", "4096",
                     "--gemm-seconds", "2.5", "--gpu-type", "h200-141g-sxm",
                     "--expect-uuids", U0 + ", " + U1)
        self.assertEqual((a.runs, a.warmup), (7, 0))
        self.assertEqual(a.probes, ("gemm_bf16", "copy_d2d"))
        self.assertEqual((a.gemm_n, a.gemm_seconds, a.gpu_type), (4096, 2.5, "h200-141g-sxm"))
        self.assertEqual(a.expect_uuids, [U0, U1])

    def test_bad_usage_exits_2(self):
        for argv in ((), ("t3",), ("t1", "--runs", "0"), ("t1", "--runs", "x"),
                     ("t1", "--warmup", "-1"), ("t1", "--probe", "gemm_fp4"),
                     ("t1", "--gemm-seconds", "nan"), ("t1", "--gemm-seconds", "-1"),
                     ("t1", "--expect-uuids", ","), ("t1", "--expect-uuids", "a,a"),
                     ("t2", "--nccl-bytes", "10")):
            with self.subTest(argv=argv):
                a, err = parse(*argv)
                self.assertIsNone(a)
                self.assertEqual(err[0], 2)


class InventoryTest(unittest.TestCase):
    def test_parse(self):
        text = ("1, GPU-b, NVIDIA GeForce RTX 4090, 00000000:41:00.0, 24564, 1, 4, 16, 16, "
                "[N/A], 450.00, 450.00, 550.54.15\n"
                "0, GPU-a, NVIDIA H100 80GB HBM3, 00000000:18:00.0, 81559, 5, 5, 16, 16, "
                "Enabled, 700.00, 700.00, 550.54.15\n\n")
        rows = inventory.parse_inventory(text)
        self.assertEqual([r["uuid"] for r in rows], ["GPU-a", "GPU-b"])
        self.assertEqual(rows[0]["memory_mib"], 81559)
        self.assertEqual(rows[0]["ecc_mode"], "Enabled")
        self.assertEqual(rows[0]["power_limit_w"], 700.0)
        self.assertEqual(rows[1]["ecc_mode"], None)
        self.assertEqual((rows[1]["pcie_gen_current"], rows[1]["pcie_gen_max"]), (1, 4))
        self.assertEqual(rows[1]["name"], "NVIDIA GeForce RTX 4090")
        self.assertEqual(rows[1]["driver"], "550.54.15")

    def test_parse_rejects(self):
        for text in ("0, GPU-a, H100", "x, GPU-a, N, b, 1, 1, 1, 1, 1, E, 1, 1, d",
                     "0, [N/A], N, b, 1, 1, 1, 1, 1, E, 1, 1, d",
                     "0, GPU-a, N, b, lots, 1, 1, 1, 1, E, 1, 1, d"):
            with self.subTest(text=text), self.assertRaises(inventory.InventoryError):
                inventory.parse_inventory(text)

    def test_cuda_version(self):
        self.assertEqual(inventory.parse_cuda_version(
            "| NVIDIA-SMI 550.54.15  Driver Version: 550.54.15  CUDA Version: 12.4     |"), "12.4")
        self.assertIsNone(inventory.parse_cuda_version("no banner"))

    def test_listing_check(self):
        rows = [{"uuid": U0}, {"uuid": U1}]
        self.assertIsNone(suite.inventory_check(rows, None))
        self.assertIsNone(suite.inventory_check(rows, [U1, U0]))
        msg = suite.inventory_check(rows, [U0, "GPU-x"])
        self.assertIn("missing GPU-x", msg)
        self.assertIn("unexpected " + U1, msg)

    def test_hex32(self):
        self.assertEqual(suite._hex32(U0), "11111111222233334444555555555555")
        self.assertEqual(suite._hex32("11111111-2222-3333-4444-555555555555"), suite._hex32(U0))
        self.assertIsNone(suite._hex32("MIG-1"))
        self.assertIsNone(suite._hex32(None))


class MainTest(unittest.TestCase):
    """suite.main end to end against tests/fakebin/nvidia-smi (no GPU, no torch needed)."""

    def setUp(self):
        self.env = dict(os.environ)
        os.environ["PATH"] = FAKEBIN + os.pathsep + os.environ.get("PATH", "")
        os.environ.pop("FAKE_SMI_FAIL", None)

    def tearDown(self):
        os.environ.clear()
        os.environ.update(self.env)

    def run_main(self, *argv):
        out = io.StringIO()
        with contextlib.redirect_stderr(io.StringIO()) as err:
            rc = suite.main(list(argv), out=out)
        return rc, record.read_records(out.getvalue().splitlines()), err.getvalue()

    def test_t0(self):
        rc, recs, _ = self.run_main("t0", "--expect-uuids", U1 + "," + U0, "--telemetry-interval-ms", "50")
        self.assertEqual(rc, 0)
        self.assertEqual(len(recs), 1)
        r = recs[0]
        self.assertEqual((r["probe"], r["value"], r["unit"], r["error"]), ("inventory", 2.0, "gpus", None))
        self.assertEqual(r["uuids"], [U0, U1])
        self.assertEqual(r["gpu_type"], "NVIDIA H200")
        self.assertEqual(r["params"]["cuda_driver"], "12.4")
        self.assertIn("NV18", r["params"]["topology"])
        self.assertEqual(r["params"]["gpus"][1]["pci_bus_id"], "00000000:19:00.0")
        self.assertEqual(r["software"]["driver"], "550.54.15")
        self.assertIs(r["software"]["synthetic"], False)

    def test_t0_listing_mismatch_is_an_error_record(self):
        rc, recs, _ = self.run_main("t0", "--expect-uuids", U0, "--no-telemetry", "--gpu-type", "h200")
        self.assertEqual(rc, 1)
        self.assertIsNone(recs[0]["value"])
        self.assertIn("unexpected " + U1, recs[0]["error"])
        self.assertEqual(recs[0]["gpu_type"], "h200")

    def test_no_driver(self):
        os.environ["FAKE_SMI_FAIL"] = "1"
        rc, recs, err = self.run_main("t0")
        self.assertEqual((rc, recs), (3, []))
        self.assertIn("cannot list GPUs", err)
        rc, recs, _ = self.run_main("t0", "--expect-uuids", U0)
        self.assertEqual(rc, 1)
        self.assertEqual(recs[0]["uuids"], [U0])
        self.assertIn("exited 9", recs[0]["error"])

    def test_gpu_probes_without_a_cuda_device_fail_honestly(self):
        rc, recs, _ = self.run_main("t1", "--no-telemetry")
        self.assertEqual(rc, 1)
        self.assertEqual([r["probe"] for r in recs],
                         ["inventory", "gemm_bf16", "copy_h2d", "copy_d2h", "copy_d2d"])
        self.assertIsNone(recs[0]["error"])
        for r in recs[1:]:
            self.assertIsNone(r["value"])
            self.assertTrue(r["error"])


class ImportTest(unittest.TestCase):
    def test_pure_parts_import_without_torch(self):
        code = ("import sys\n"
                "import gpurent_bench.suite, gpurent_bench.record, gpurent_bench.stats\n"
                "import gpurent_bench.telemetry, gpurent_bench.inventory, gpurent_bench.gemm\n"
                "import gpurent_bench.bandwidth, gpurent_bench.resnet50, gpurent_bench.nccl\n"
                "assert 'torch' not in sys.modules, 'torch imported at module level'\n")
        p = subprocess.run([sys.executable, "-c", code], cwd=BENCH, capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)

    def test_module_entry_point_usage(self):
        p = subprocess.run([sys.executable, "-m", "gpurent_bench.suite", "--help"], cwd=BENCH,
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("t0 inventory", p.stdout)


if __name__ == "__main__":
    unittest.main()
