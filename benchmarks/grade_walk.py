"""NDCG's grade walk against the walk over every pair, timed (``customobj.objectives._lambdarank_grades``).

LambdaRank's NDCG pass walks, per upper row, only its lower rows of another gain where a query has at most
``MAX_GRADES`` gains and at most the mode's share (``WALK_SHARE_GRAD`` / ``_LOSS`` / ``_FILL``; ``_FUSED`` for the
driver of several labels) of its pairs have
different gains (the others add exact zeros: the same bits either way). This script measures both walks on the
same queries and calls, to set those shares and to report the gain: two worker processes, one compiled with the
grade walk always taken (every share 1), one with it never taken (every share -1), each with a numba cache
folder of its own (a module constant is frozen into the compiled code), and the parent asks them in turn (walk then
every pair, then every pair then walk, ...) to time ``--calls`` calls of one setting; per setting, the
median over ``--repeats`` of the walk / every-pair time ratio (below 1: the grade walk is faster).

Settings: MQ2008 Fold 1 (its labels; ``LambdaRank()``'s GRAD, GRAD_LOSS and FILL passes, and the GRAD and GRAD_LOSS
of ``MultiObjective``'s driver for 2 and 4 labels of the same mix, where the walk stands against the fused pass of
queries of 40+ rows too) and synthetic queries of 30 and 120 rows (the latter with the driver too) whose grades
give a chosen share of pairs of different gains (two grades at 0.2, 0.35, 0.5; MSLR-WEB30K's label mix, 0.62;
three and five uniform grades at 0.67 and 0.8).

    python benchmarks/grade_walk.py [--data ../shared/data/mq2008/Fold1/train.txt.gz] [--repeats 15]
        [--calls 10] [--only MQ2008] [--out grade_walk.json]

Times, so run it on quiet cores. Each worker compiles the LambdaRank kernels once (about a minute).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable, Dict, List

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_DATA = "mq2008/Fold1/train.txt.gz"
#: (name, query size, grade probabilities): the share of pairs of different gains is 1 - sum p^2.
SYNTHETIC = [(f"{size} rows, {share}", size, probs) for size in (30, 120) for share, probs in (
    ("share 0.20", (0.887, 0.113)), ("share 0.35", (0.774, 0.226)), ("share 0.50", (0.5, 0.5)),
    ("share 0.62", (0.51, 0.32, 0.13, 0.03, 0.01)), ("share 0.67", (1 / 3,) * 3), ("share 0.80", (0.2,) * 5))]


def _data_path(given: str | None) -> Path:
    if given:
        return Path(given)
    return Path(os.environ.get("CUSTOMOBJ_DATA", ROOT.parent / "shared" / "data")) / DEFAULT_DATA


def settings(data: Path | None, rows: int = 30000, seed: int = 0) -> List[Dict[str, Any]]:
    """Every setting: its name, mode and ``call`` (built in each worker the same way, from the same seed)."""
    from customobj import LambdaRank
    from customobj.objectives import _lambdarank_kernels as LK

    rng = np.random.default_rng(seed)
    out: List[Dict[str, Any]] = []

    def passes(name: str, y: np.ndarray, sizes: np.ndarray, second: List[np.ndarray] | None) -> None:
        s = rng.normal(size=y.size)
        obj = LambdaRank()
        prep = obj.prepare(y, group=sizes)
        inp = obj.pass_inputs(s, prep)
        g, h = np.zeros(y.size), np.zeros(y.size)
        out.append({"name": name, "mode": "GRAD", "call": lambda: LK.lambdarank_grad_hess(inp, g, h)})
        out.append({"name": name, "mode": "GRAD_LOSS", "call": lambda: LK.lambdarank_grad_hess_loss(inp, g, h)})
        state = prep.state_for(obj)
        out.append({"name": name, "mode": "FILL", "call": lambda: obj._pair_couplings(s, prep, state)})
        if second is not None:  # MultiObjective's driver: per-label walks, or the fused pass (GRAD, 40+ rows)
            labels = [inp] + [obj.pass_inputs(s, obj.prepare(c, group=sizes)) for c in second]
            for m in (2, 4):
                L = LK.label_inputs(tuple(labels[:m]))
                G, H = np.zeros((m, y.size)), np.zeros((m, y.size))
                for mode, loss in (("GRAD", False), ("GRAD_LOSS", True)):
                    out.append({"name": name, "mode": f"{mode} m={m}",
                                "call": lambda L=L, G=G, H=H, loss=loss: LK.lambdarank_stacked_labels(L, loss, G, H)})

    if data is not None:
        from customobj.data import load_letor
        _, y, qs = load_letor(data)
        qs = np.asarray(qs, dtype=np.int64)
        parts = np.split(y, np.cumsum(qs)[:-1])
        others = [np.concatenate([rng.permutation(part) for part in parts]) for _ in range(3)]  # the same mix
        passes("MQ2008 Fold 1", y.astype(float), qs, others)
    for name, size, probs in SYNTHETIC:
        nq = max(1, rows // size)
        p = np.array(probs) / sum(probs)
        ys = [rng.choice(len(probs), size=nq * size, p=p).astype(float) for _ in range(4)]
        passes(f"synthetic {name}", ys[0], np.full(nq, size, dtype=np.int64), ys[1:] if size >= 40 else None)
    return out


def worker(share: float | None, data: Path | None) -> int:
    """Serve timings on stdin/stdout: each line ``index calls`` answers the seconds of ``calls`` calls.
    ``share``: every mode's ``WALK_SHARE_*`` (None: the shipped ones)."""
    from customobj.objectives import _lambdarank_grades
    for mode in ("GRAD", "LOSS", "FILL", "FUSED") if share is not None else ():
        setattr(_lambdarank_grades, f"WALK_SHARE_{mode}", share)  # before the first compilation: frozen in
    cases = settings(data)
    for c in cases:
        c["call"]()  # compiled, warm
    print(len(cases), flush=True)
    for line in sys.stdin:
        index, calls = (int(v) for v in line.split())
        call: Callable[[], Any] = cases[index]["call"]
        t0 = time.perf_counter()
        for _ in range(calls):
            call()
        print(repr(time.perf_counter() - t0), flush=True)
    return 0


def _start(share: float | None, data: Path | None, cache: str | None) -> subprocess.Popen:
    """A worker compiled with every ``WALK_SHARE_*`` at ``share`` (None: the shipped ones), its numba cache in
    ``cache`` (None: the environment's, only for the shipped shares: a cache does not notice a changed constant)."""
    if (share is None) != (cache is None):
        raise ValueError("a worker of other shares than the shipped ones needs a numba cache folder of its own")
    env = dict(os.environ) if cache is None else dict(os.environ, NUMBA_CACHE_DIR=cache, CUSTOMOBJ_CACHE_DIR=cache)
    # idle OpenMP threads sleep (customobj.adapters' setting): a worker waiting for its turn spun a core otherwise
    env.update({"OMP_WAIT_POLICY": "passive", "KMP_BLOCKTIME": "0"})
    cmd = [sys.executable, __file__, "--worker", "shipped" if share is None else repr(share)]
    cmd += ["--data", str(data)] if data else ["--no-data"]
    return subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)


def _ask(proc: subprocess.Popen, index: int, calls: int) -> float:
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(f"{index} {calls}\n")
    proc.stdin.flush()
    return float(proc.stdout.readline())


def measure(data: Path | None, repeats: int, calls: int, only: str | None = None) -> List[Dict[str, Any]]:
    names = [(c["name"], c["mode"]) for c in settings(data)]
    results = []
    with tempfile.TemporaryDirectory() as walk_cache, tempfile.TemporaryDirectory() as full_cache:
        procs = []
        for share, cache in ((1.0, walk_cache), (-1.0, full_cache)):  # one at a time: the compilations
            proc = _start(share, data, cache)
            assert proc.stdout is not None
            if int(proc.stdout.readline()) != len(names):
                raise RuntimeError("the workers built different settings")
            procs.append(proc)
        try:
            for index, (name, mode) in enumerate(names):
                if only is not None and only not in f"{name} {mode}":
                    continue
                walk, full = [], []
                for r in range(repeats):
                    order = (0, 1) if r % 2 == 0 else (1, 0)
                    got = {k: _ask(procs[k], index, calls) for k in order}
                    walk.append(got[0])
                    full.append(got[1])
                ratio = statistics.median(a / b for a, b in zip(walk, full))
                results.append({"setting": name, "mode": mode, "ratio": ratio,
                                "walk_ms": statistics.median(walk) / calls * 1e3,
                                "every_pair_ms": statistics.median(full) / calls * 1e3})
                print(f"{name:32s} {mode:14s} grade walk {results[-1]['walk_ms']:8.3f} ms, every pair "
                      f"{results[-1]['every_pair_ms']:8.3f} ms: {ratio:.3f}", flush=True)
        finally:
            for proc in procs:
                assert proc.stdin is not None
                proc.stdin.close()
                proc.wait(timeout=60)
    return results


def main(argv: Any = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", help=f"a LETOR file (default: $CUSTOMOBJ_DATA or ../shared/data, {DEFAULT_DATA})")
    ap.add_argument("--no-data", action="store_true", help="synthetic queries only")
    ap.add_argument("--repeats", type=int, default=15)
    ap.add_argument("--calls", type=int, default=10, help="calls timed together, per worker and repeat")
    ap.add_argument("--only", help="only the settings whose name and mode hold this text (e.g. 'MQ2008')")
    ap.add_argument("--out", help="also write the results to this JSON file (atomically)")
    ap.add_argument("--worker", help=argparse.SUPPRESS)  # a share, or "shipped"
    args = ap.parse_args(argv)
    if args.repeats < 1 or args.calls < 1:
        ap.error("--repeats and --calls must be at least 1")
    data = None if args.no_data else _data_path(args.data)
    if data is not None and not data.is_file():
        ap.error(f"--data: {data} is not a file (pass --data, set CUSTOMOBJ_DATA, or --no-data)")
    if args.worker is not None:
        return worker(None if args.worker == "shipped" else float(args.worker), data)
    results = measure(data, args.repeats, args.calls, args.only)
    if args.out:
        sys.path.insert(0, str(ROOT))
        from customobj._io import atomic_write_text
        atomic_write_text(args.out, json.dumps({"results": results}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
