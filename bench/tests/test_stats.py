import math
import unittest

from gpurent_bench import stats


class StatsTest(unittest.TestCase):
    def test_median(self):
        self.assertEqual(stats.median([3]), 3)
        self.assertEqual(stats.median([5, 1, 3]), 3)
        self.assertEqual(stats.median([4, 1, 3, 2]), 2.5)
        self.assertEqual(stats.median([781.2, 790.0, 769.4, 798.1, 785.0]), 785.0)
        with self.assertRaises(ValueError):
            stats.median([])
        with self.assertRaises(ValueError):
            stats.median([1.0, float("nan")])

    def test_mad(self):
        # deviations from median 3: 2,1,0,1,97 -> median 1
        self.assertEqual(stats.mad([1, 2, 3, 4, 100]), 1)
        self.assertEqual(stats.mad([7, 7, 7]), 0)

    def test_spread(self):
        self.assertAlmostEqual(stats.spread([90, 100, 110]), 0.2)
        self.assertEqual(stats.spread([5]), 0.0)
        self.assertEqual(stats.spread([0, 0]), 0.0)
        self.assertTrue(math.isinf(stats.spread([-1, 0, 1])))

    def test_drop_warmup(self):
        self.assertEqual(stats.drop_warmup([50, 99, 100, 101], 1), [99, 100, 101])
        self.assertEqual(stats.drop_warmup([1, 2], 0), [1, 2])
        with self.assertRaises(ValueError):
            stats.drop_warmup([1, 2], 2)
        with self.assertRaises(ValueError):
            stats.drop_warmup([1, 2], -1)

    def test_timed_values(self):
        recs = [
            {"value": 10.0, "warmup": True, "error": None},
            {"value": 20.0, "warmup": False, "error": None},
            {"value": None, "warmup": False, "error": "boom"},
            {"value": 22.0, "warmup": False, "error": None},
        ]
        self.assertEqual(stats.timed_values(recs), [20.0, 22.0])

    def test_summary(self):
        s = stats.summary([4, 1, 3, 2, 5])
        self.assertEqual(s, {"n": 5, "median": 3, "mean": 3.0, "min": 1, "max": 5,
                             "spread": 4 / 3, "mad": 1})


if __name__ == "__main__":
    unittest.main()
