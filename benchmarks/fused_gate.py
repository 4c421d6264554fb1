"""The fused pair pass of ``m`` LambdaRank labels against the per-label walk, timed (issue 41's round cost).

``MultiObjective([LambdaRank(), ...], labels=...)`` computes its labels' gradients with one driver
(``_lambdarank_kernels._run_labels``): each query sorted once, then its pairs walked once for all labels
(``_lambdarank_fused``, when the labels' options agree) or once per label. Which is faster depends on the
mode (``GRAD``: gradients; ``GRAD_LOSS``: also the per-label costs the cost-reading methods use) and on the
query's size (the fused pass pays per block of rows for its shared terms and scratch). This script times
both walks of the same stacked labels, interleaved (fused then per-label, then per-label then fused, ...),
and prints per setting the median over repeats of the fused / per-label time ratio (below 1: fused is
faster), on MQ2008 (relevance and labels graded per query from features) and on synthetic queries of
one size each; and, with ``--gate``, the same for the driver as it runs (its ``fused_min_rows`` gate)
against the per-label walk.

    python benchmarks/fused_gate.py [--data ../shared/data/mq2008/Fold1/train.txt.gz] [--sizes 10 20 40 80 160]
        [--labels 2 4] [--repeats 15] [--out fused_gate.json]

Times, so run it on quiet cores: the ratios come from interleaved pairs of calls in one process.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Dict, List

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_DATA = "mq2008/Fold1/train.txt.gz"


def _data_path(given: str | None) -> Path:
    if given:
        return Path(given)
    base = Path(os.environ.get("CUSTOMOBJ_DATA", ROOT.parent / "shared" / "data"))
    return base / DEFAULT_DATA


def _graded(col: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    """A feature column graded 0-4 within each query by its rank (a second label, as docs/multi-objective.md)."""
    out = np.zeros(col.size)
    start = 0
    for n in sizes:
        part = col[start:start + n]
        ranks = np.argsort(np.argsort(part, kind="stable"), kind="stable")
        out[start:start + n] = np.floor(5.0 * ranks / max(n, 1))
        start += n
    return np.minimum(out, 4.0)


def stacked(labels: List[np.ndarray], sizes: np.ndarray, scores: np.ndarray, min_rows: int | None = None) -> Any:
    """The driver's stacked inputs of ``LambdaRank()`` on each of ``labels`` (``min_rows``: its gate)."""
    from customobj import LambdaRank
    from customobj.objectives import _lambdarank_kernels as LK
    objs = [LambdaRank() for _ in labels]
    preps = [o.prepare(y, group=sizes) for o, y in zip(objs, labels)]
    L = LK.label_inputs(tuple(o.pass_inputs(scores, p) for o, p in zip(objs, preps)))
    return L if min_rows is None else L._replace(fused_min_rows=int(min_rows))


def _time(L: Any, with_loss: bool, inner: int) -> float:
    from customobj.objectives import _lambdarank_kernels as LK
    m, n = L.metric.size, L.scores.size
    grads, hess = np.zeros((m, n)), np.zeros((m, n))
    t0 = time.perf_counter()
    for _ in range(inner):
        LK.lambdarank_stacked_labels(L, with_loss, grads, hess)
    return (time.perf_counter() - t0) / inner


def ratio(L: Any, other: Any, with_loss: bool, repeats: int, inner: int) -> Dict[str, float]:
    """Median over ``repeats`` of ``time(L) / time(other)``, each pair of calls interleaved (their order
    alternated), and each one's median milliseconds."""
    _time(L, with_loss, 1), _time(other, with_loss, 1)  # compiled, warm
    a, b = [], []
    for r in range(repeats):
        if r % 2:
            b.append(_time(other, with_loss, inner))
            a.append(_time(L, with_loss, inner))
        else:
            a.append(_time(L, with_loss, inner))
            b.append(_time(other, with_loss, inner))
    return {"ratio": statistics.median(x / y for x, y in zip(a, b)), "ms": statistics.median(a) * 1e3,
            "other_ms": statistics.median(b) * 1e3}


def cases(data: Path | None, sizes: List[int], labels: List[int], rows: int, seed: int = 0) -> List[Dict[str, Any]]:
    """``(name, m, labels, sizes, scores)`` of every setting: MQ2008 (when ``data`` is a file) and one
    synthetic set of about ``rows`` rows per query size."""
    rng = np.random.default_rng(seed)
    out = []
    if data is not None:
        from customobj.data import load_letor
        X, y, qs = load_letor(data)  # its queries' sizes (LetorData.group)
        qs = np.asarray(qs, dtype=np.int64)
        cols = [_graded(X[:, f], qs) for f in (0, 19, 39)]  # three features graded per query
        s = rng.normal(size=y.size)
        for m in labels:
            out.append({"name": "MQ2008", "m": m, "labels": ([y.astype(float)] + cols)[:m], "sizes": qs, "scores": s})
    for size in sizes:
        nq = max(1, rows // size)
        qs = np.full(nq, size, dtype=np.int64)
        s = rng.normal(size=nq * size)
        ys = [rng.integers(0, 5, nq * size).astype(float) for _ in range(max(labels))]
        for m in labels:
            out.append({"name": f"synthetic {size} rows", "m": m, "labels": ys[:m], "sizes": qs, "scores": s})
    return out


def measure(data: Path | None, sizes: List[int], labels: List[int], repeats: int, rows: int, inner: int,
            gate: bool = False) -> List[Dict[str, Any]]:
    """Per setting and mode: fused / per-label (``gate``: the gated driver / per-label)."""
    results = []
    for c in cases(data, sizes, labels, rows):
        L = stacked(c["labels"], c["sizes"], c["scores"])
        if not L.fused:
            raise RuntimeError(f"{c['name']}: the labels were expected to share the fused pass")
        own = L._replace(fused=False)
        fused = L if gate else L._replace(fused_min_rows=0, fused_loss=True)
        for with_loss in (False, True):
            r = ratio(fused, own, with_loss, repeats, inner)
            results.append({"case": c["name"], "m": c["m"], "mode": "GRAD_LOSS" if with_loss else "GRAD",
                            "rows": int(c["scores"].size), **r})
            print(f"{c['name']:22s} m={c['m']} {results[-1]['mode']:9s} {'gated' if gate else 'fused'} "
                  f"{r['ms']:8.3f} ms, per-label {r['other_ms']:8.3f} ms: {r['ratio']:.3f}", flush=True)
    return results


def main(argv: Any = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", help=f"a LETOR file (default: $CUSTOMOBJ_DATA or ../shared/data, {DEFAULT_DATA})")
    ap.add_argument("--no-data", action="store_true", help="synthetic queries only")
    ap.add_argument("--sizes", type=int, nargs="*", default=[10, 20, 40, 80, 160], help="synthetic query sizes")
    ap.add_argument("--labels", type=int, nargs="+", default=[2, 4], help="label counts m (>= 2)")
    ap.add_argument("--rows", type=int, default=40000, help="rows of each synthetic set")
    ap.add_argument("--repeats", type=int, default=15)
    ap.add_argument("--inner", type=int, default=3, help="calls per timing")
    ap.add_argument("--gate", action="store_true", help="the driver's own gate against the per-label walk")
    ap.add_argument("--out", type=Path, help="the ratios as JSON (written atomically)")
    a = ap.parse_args(argv)
    if any(s < 2 for s in a.sizes):
        ap.error(f"--sizes must be >= 2, got {a.sizes}")
    if any(m < 2 for m in a.labels):
        ap.error(f"--labels must be >= 2, got {a.labels}")
    for name in ("rows", "repeats", "inner"):
        if getattr(a, name) < 1:
            ap.error(f"--{name} must be >= 1, got {getattr(a, name)}")
    data = None
    if not a.no_data:
        data = _data_path(a.data)
        if not data.is_file():
            ap.error(f"--data: {data} is not a file (or pass --no-data)")
    results = measure(data, a.sizes, a.labels, a.repeats, a.rows, a.inner, gate=a.gate)
    if a.out is not None:
        from customobj._io import atomic_write_text
        atomic_write_text(a.out, json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
