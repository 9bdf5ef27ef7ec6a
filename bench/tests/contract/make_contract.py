"""Writes the records internal/certify's contract test reads.

Run from bench/: python3 tests/contract/make_contract.py > ../internal/certify/testdata/from_bench.jsonl
They are test data (software.synthetic is true): the shapes the programs
print, built by the programs' own record code, not measurements.
"""
import datetime
import sys

sys.path.insert(0, ".")
from gpurent_bench import record  # noqa: E402

T0 = datetime.datetime(2026, 11, 30, 1, 2, 3, 456000, tzinfo=datetime.timezone.utc)
SW = {"driver": "570.86.15", "cuda": "12.4", "torch": "2.5.1", "synthetic": True}
TEL = {"max_temp_c": 61.0, "mean_sm_clock_mhz": 1755.0, "min_sm_clock_mhz": 1740.0,
       "mean_power_w": 612.5, "throttle_reasons": ["sw_power_cap"]}


def at(seconds):
    return T0 + datetime.timedelta(seconds=seconds)


def main():
    recs = [
        record.make_record("inventory", ["GPU-a", "GPU-b"], "h100-80g-sxm", 2, 1, False,
                           {"gpus": [], "cuda_driver": "12.4", "topology": None}, at(0), at(1), None, SW),
        record.make_record("gemm_bf16", ["GPU-a"], "h100-80g-sxm", 700.0, 1, True,
                           {"n": 8192, "dtype": "bfloat16", "seconds": 1.0, "flops_per_iter": 2 * 8192 ** 3, "iters": 50},
                           at(1), at(2), TEL, SW),
    ]
    for i in range(5):
        recs.append(record.make_record("gemm_bf16", ["GPU-a"], "h100-80g-sxm", 790.0 + i, i + 1, False,
                                       {"n": 8192, "dtype": "bfloat16", "seconds": 1.0,
                                        "flops_per_iter": 2 * 8192 ** 3, "iters": 50},
                                       at(3 + i), at(4 + i), TEL, SW))
    recs.append(record.make_record("copy_d2d", ["GPU-a"], "h100-80g-sxm", None, 1, False,
                                   {"kind": "d2d", "bytes": 1 << 30}, at(10), at(11), None, SW,
                                   error="CUDA out of memory"))
    recs.append(record.make_record("resnet50_amp", ["GPU-a"], "h100-80g-sxm", 2700.0, 1, False,
                                   {"batch_size": 128, "iters": 100, "warmup_iters": 20, "precision": "amp_fp16",
                                    "data": "synthetic", "memory_format": "channels_last", "image_size": 224,
                                    "torchvision": "0.20.1"}, at(12), at(40), TEL, SW))
    recs.append(record.make_record("nccl_allreduce", ["GPU-a", "GPU-b"], "h100-80g-sxm", 370.0, 1, False,
                                   {"world_size": 2, "bytes": 1 << 28, "iters": 20, "op": "sum",
                                    "formula": "algbw*2*(n-1)/n"}, at(41), at(45), TEL, SW))
    for r in recs:
        sys.stdout.write(record.dumps(r) + "\n")


if __name__ == "__main__":
    main()
