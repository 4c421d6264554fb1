"""Worker targets: load_letor on hostile files, synthetic with hostile options."""
from __future__ import annotations

import gzip
import os
import tempfile

import numpy as np

from ._targets import BadOutput, finite_array, target

_VALID = b"2 qid:1 1:0.5 3:1.25 # doc a\n0 qid:1 2:-1\n1 qid:7 1:3 2:4 3:5\n"


def _warm_letor():
    from customobj import load_letor

    with tempfile.TemporaryDirectory() as tmp:
        plain = os.path.join(tmp, "a.txt")
        with open(plain, "wb") as fh:
            fh.write(_VALID)
        load_letor(plain)
        load_letor(plain, sparse=True, n_features=5)
        nq = os.path.join(tmp, "b.txt")
        with open(nq, "wb") as fh:
            fh.write(b"1 1:2\n0 2:3\n1 1:1\n")
        with open(nq + ".query", "w") as fh:
            fh.write("2\n1\n")
        load_letor(nq)
        gz = os.path.join(tmp, "c.txt.gz")
        with gzip.open(gz, "wb") as fh:
            fh.write(_VALID)
        load_letor(gz)


@target("data.load_letor", warm=_warm_letor)
def load_letor(text, options, query_text=None):
    """Load a hostile LETOR file: at least one row, consistent shapes, no inf from finite tokens."""
    from customobj import load_letor as load

    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "data.txt")
        with open(path, "wb") as fh:
            fh.write(text if isinstance(text, bytes) else text.encode("utf-8", "surrogatepass"))
        if query_text is not None:
            with open(path + ".query", "wb") as fh:
                fh.write(query_text.encode())
        d = load(path, **options)
    y = finite_array(np.asarray(d.y), "y")
    n = y.shape[0]
    if n == 0:
        raise BadOutput("load_letor returned 0 rows (an empty / comment-only file is not a data set)")
    X = d.X
    values = np.asarray(X.data if hasattr(X, "tocsr") else X)
    if values.dtype.kind != "f":
        raise BadOutput(f"X has dtype {values.dtype}")
    if X.shape[0] != n or len(X.shape) != 2:
        raise BadOutput(f"X has shape {X.shape} for {n} labels")
    if options.get("n_features") is not None and X.shape[1] != options["n_features"]:
        raise BadOutput(f"X has {X.shape[1]} columns, n_features={options['n_features']}")
    raw = text if isinstance(text, bytes) else text.encode("utf-8", "surrogatepass")
    if np.isinf(values).any() and b"inf" not in raw.lower():
        raise BadOutput("a finite value in the file became inf in X (float32 overflow)")
    if d.group is not None:
        sizes = [int(s) for s in np.asarray(d.group).tolist()]
        if min(sizes, default=0) < 0 or sum(sizes) != n:
            raise BadOutput(f"group sizes {sizes[:6]} do not cover the {n} rows")
    return (n, X.shape[1])


def _warm_synthetic():
    from customobj import synthetic as make

    make(3, 5, 4, seed=1)


@target("data.synthetic", warm=_warm_synthetic)
def synthetic(options):
    """synthetic(**options): finite float32 X, integer grades 0..max_grade, sizes covering the rows."""
    from customobj import synthetic as make

    d = make(**options)
    y = finite_array(np.asarray(d.y), "y")
    n = y.shape[0]
    X = finite_array(np.asarray(d.X), "X", (n, options.get("n_features", 20)))
    top = options.get("max_grade", 4)
    if n and (y.min() < 0 or y.max() > top or np.any(y != np.floor(y))):
        raise BadOutput(f"grades outside 0..{top}: {np.unique(y)[:8]}")
    sizes = [int(s) for s in np.asarray(d.group).tolist()]
    if sum(sizes) != n or len(sizes) != options.get("n_queries", 200):
        raise BadOutput(f"{len(sizes)} group sizes summing to {sum(sizes)} for {n} rows")
    return (n, X.shape[1])
