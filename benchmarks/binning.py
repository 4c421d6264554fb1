"""Benchmark: the OLE builder's binning (``BinMapper.fit`` + the feature-major bin matrix).

TreeBooster pays it once per fit, before round 1. Each thread count runs in its own subprocess on
``customobj.data.synthetic(queries, 120, 136)``; reported: seconds for the bounds (``fit``) and
for the bin matrix, and resident memory after binning above the float64 feature matrix (freed
temporaries that the allocator kept count here).

    python benchmarks/binning.py                   # 240k rows x 136 features
    python benchmarks/binning.py --queries 31500   # MSLR-WEB30K size: 3.8M rows (needs ~7 GB)
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time


def rss_gb():
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmRSS"):
                return int(line.split()[1]) / 2**20
    return float("nan")


def run_one(args):
    import numpy as np

    from customobj.data import synthetic
    from customobj.ole.binning import BinMapper
    d = synthetic(args.queries, 120, 136, seed=0)
    X = np.ascontiguousarray(d.X, dtype=np.float64)
    del d
    small = X[:2000]
    BinMapper.fit(small, 255, n_jobs=args.threads).bins_feature_major(small)  # compile / load kernels
    base = rss_gb()
    t0 = time.perf_counter()
    mapper = BinMapper.fit(X, 255, n_jobs=args.threads)
    t1 = time.perf_counter()
    bins = mapper.bins_feature_major(X)
    t2 = time.perf_counter()
    extra = rss_gb() - base - bins.nbytes / 2**30
    return {"rows": X.shape[0], "fit_s": t1 - t0, "bins_s": t2 - t1, "extra_rss_gb": extra}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--queries", type=int, default=2000)
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--one", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        import numba
        numba.set_num_threads(args.threads[0])
        args.threads = args.threads[0]
        print(json.dumps(run_one(args)))
        return
    for t in args.threads:
        cmd = [sys.executable, __file__, "--one", "--queries", str(args.queries), "--threads", str(t)]
        r = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout.splitlines()[-1])
        print(f"{r['rows']:,} rows, {t} thread(s): bounds {r['fit_s']:.2f} s, bin matrix {r['bins_s']:.2f} s, "
              f"resident memory left above X + bins {r['extra_rss_gb']:+.2f} GB", flush=True)


if __name__ == "__main__":
    main()
