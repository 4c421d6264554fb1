"""Time customobj.data.load_letor against sklearn.datasets.load_svmlight_file (both read the .gz).

    python benchmarks/load_letor.py [--file PATH] [--repeat 7] [--synthetic] [--big]

Prints the first call of each in a fresh process (with the numba cache on disk, and for load_letor
also with an empty cache, i.e. compiling), then warm best-of-``repeat`` times measured in alternation
so machine load affects both alike, and the ratio sklearn / load_letor. ``--synthetic`` also times
``synthetic`` at the MSLR-WEB10K shape (2,000 queries x 120 docs x 136 features); ``--big`` at
31,500 queries (about 3.8M rows, 2 GB of float32).
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DEFAULT = REPO.parent / "shared" / "data" / "mq2008" / "Fold1" / "train.txt.gz"

_COLD = """
import time, sys
t0 = time.perf_counter()
{imp}
t1 = time.perf_counter()
{call}
t2 = time.perf_counter()
print(t1 - t0, t2 - t1)
"""
_OURS = ("from customobj.data import load_letor", "load_letor(sys.argv[1])")
_SKLEARN = ("from sklearn.datasets import load_svmlight_file", "load_svmlight_file(sys.argv[1], query_id=True)")


def cold(which, path, env=None):
    imp, call = which
    out = subprocess.run([sys.executable, "-c", _COLD.format(imp=imp, call=call), str(path)],
                         capture_output=True, text=True, env=env, check=True)
    t_import, t_call = map(float, out.stdout.split())
    return t_import, t_call


def warm(path, repeat):
    from sklearn.datasets import load_svmlight_file

    from customobj.data import load_letor

    load_letor(path)
    load_svmlight_file(str(path), query_id=True)
    ours, theirs = [], []
    for _ in range(repeat):
        t = time.perf_counter()
        load_letor(path)
        ours.append(time.perf_counter() - t)
        t = time.perf_counter()
        load_svmlight_file(str(path), query_id=True)
        theirs.append(time.perf_counter() - t)
    return min(ours), min(theirs), sorted(ours)[len(ours) // 2], sorted(theirs)[len(theirs) // 2]


def bench_synthetic(big):
    from customobj.data import synthetic

    synthetic(5, 5, 3)  # compile / load the kernel
    shapes = [(2000, 120, 136)] + ([(31500, 120, 136)] if big else [])
    for nq, nd, nf in shapes:
        t = time.perf_counter()
        d = synthetic(nq, nd, nf)
        dt = time.perf_counter() - t
        print(f"synthetic({nq}, {nd}, {nf}): {dt:.2f} s, X {d.X.shape} float32 = {d.X.nbytes / 2**30:.2f} GiB")
        del d


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--file", type=Path, default=DEFAULT)
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--synthetic", action="store_true", help="also time the synthetic generator")
    ap.add_argument("--big", action="store_true", help="with --synthetic: also the 31,500-query shape")
    args = ap.parse_args()
    path = args.file
    print(f"file: {path} ({path.stat().st_size / 1e6:.2f} MB on disk)")
    print(f"cpu_count={os.cpu_count()}, load average {os.getloadavg()[0]:.2f} (machine may be shared)")

    cold(_OURS, path)  # make sure the numba cache exists on disk
    imp, call = cold(_OURS, path)
    print(f"load_letor   cold (fresh process, numba cache on disk): import {imp:.3f} s, first call {call:.3f} s")
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, NUMBA_CACHE_DIR=tmp)
        imp, call = cold(_OURS, path, env)
    print(f"load_letor   cold (fresh process, empty numba cache):   import {imp:.3f} s, first call {call:.3f} s")
    imp, call = cold(_SKLEARN, path)
    print(f"load_svmlight_file cold (fresh process):                import {imp:.3f} s, first call {call:.3f} s")

    ours, theirs, ours_med, theirs_med = warm(path, args.repeat)
    print(f"warm best of {args.repeat}:  load_letor {ours * 1e3:.1f} ms   load_svmlight_file {theirs * 1e3:.1f} ms"
          f"   ratio sklearn/load_letor = {theirs / ours:.2f}x")
    print(f"warm median:      load_letor {ours_med * 1e3:.1f} ms   load_svmlight_file {theirs_med * 1e3:.1f} ms"
          f"   ratio = {theirs_med / ours_med:.2f}x")
    if args.synthetic:
        bench_synthetic(args.big)


if __name__ == "__main__":
    main()
