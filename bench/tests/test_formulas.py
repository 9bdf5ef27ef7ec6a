import unittest

from gpurent_bench import bandwidth, gemm, nccl, resnet50


class GemmTest(unittest.TestCase):
    def test_flops(self):
        self.assertEqual(gemm.flops(8192, 8192, 8192), 2 * 8192 ** 3)
        self.assertEqual(gemm.flops(8192, 8192, 8192), 1_099_511_627_776)
        self.assertEqual(gemm.flops(2, 3, 4), 48)
        for bad in ((0, 1, 1), (1, -1, 1), (1.5, 1, 1)):
            with self.assertRaises(ValueError):
                gemm.flops(*bad)

    def test_tflops(self):
        # 8192³ in 1.4 ms is about 785 TFLOP/s (a healthy H200).
        self.assertAlmostEqual(gemm.tflops(gemm.flops(8192, 8192, 8192), 0.0014), 785.37, places=2)
        with self.assertRaises(ValueError):
            gemm.tflops(1, 0)

    def test_iterations_for(self):
        self.assertEqual(gemm.iterations_for(60, 0.0014), 42858)
        self.assertEqual(gemm.iterations_for(0.001, 0.5), 10)
        self.assertEqual(gemm.iterations_for(0.001, 0.5, minimum=1), 1)
        with self.assertRaises(ValueError):
            gemm.iterations_for(1, 0)


class BandwidthTest(unittest.TestCase):
    def test_bytes_counted(self):
        self.assertEqual(bandwidth.bytes_counted("h2d", 100), 100)
        self.assertEqual(bandwidth.bytes_counted("d2h", 100), 100)
        self.assertEqual(bandwidth.bytes_counted("d2d", 100), 200)
        with self.assertRaises(ValueError):
            bandwidth.bytes_counted("p2p", 100)
        with self.assertRaises(ValueError):
            bandwidth.bytes_counted("h2d", 0)

    def test_gb_per_s(self):
        self.assertEqual(bandwidth.gb_per_s(25_000_000_000, 1.0), 25.0)
        self.assertAlmostEqual(bandwidth.gb_per_s(bandwidth.bytes_counted("d2d", 256 << 20) * 20, 0.0025),
                               4294.967296)
        with self.assertRaises(ValueError):
            bandwidth.gb_per_s(1, 0)


class NcclTest(unittest.TestCase):
    def test_busbw(self):
        # nccl-tests: busbw = algbw * 2(n-1)/n for all_reduce.
        self.assertAlmostEqual(nccl.busbw(100.0, 8), 175.0)
        self.assertAlmostEqual(nccl.busbw(100.0, 2), 100.0)
        self.assertAlmostEqual(nccl.busbw(100.0, 4), 150.0)
        self.assertEqual(nccl.busbw(100.0, 1), 0.0)
        with self.assertRaises(ValueError):
            nccl.busbw(1.0, 0)

    def test_algbw(self):
        self.assertAlmostEqual(nccl.algbw(256 << 20, 0.001), 268.435456)
        with self.assertRaises(ValueError):
            nccl.algbw(1, 0)

    def test_free_port_is_loopback_and_bindable(self):
        import socket
        port = nccl.free_port()
        self.assertGreater(port, 0)
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.bind(("127.0.0.1", port))


class ResnetTest(unittest.TestCase):
    def test_images_per_s(self):
        self.assertEqual(resnet50.images_per_s(128, 100, 5.0), 2560.0)
        for bad in ((0, 1, 1.0), (1, 0, 1.0), (1, 1, 0.0)):
            with self.assertRaises(ValueError):
                resnet50.images_per_s(*bad)


if __name__ == "__main__":
    unittest.main()
