"""Query-aligned Dask partitions: every query's rows inside one partition.

Why: ``xgboost.dask`` and ``lightgbm.dask`` build one local DMatrix / Dataset per worker from the
partitions that worker holds, and call a custom objective there with that local data only. A
ranking objective computes each row's gradient from all rows of its query, so a query split
between two workers gets two wrong half-query gradients, silently. Aligning the partitions to
whole queries makes every worker's local data a set of whole queries, whatever partitions it
receives.

The query layout (one int64 per row, or one per query) is brought to the client: that is 8
bytes per row, small next to the features, and it makes the boundaries exact.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

__all__ = ["QueryPartitions", "repartition_by_query", "query_partitions", "query_ptr", "place_partitions",
           "scatter_by_query"]

_KINDS = ("auto", "qid", "group")


class QueryPartitions(NamedTuple):
    """Dask arrays whose row chunks hold whole queries.

    ``X`` (2-D), ``y``, ``qid`` and ``weight`` (or None) share the row chunks; ``qid`` holds dense
    query codes ``0..n_queries-1`` increasing with the row order (what ``xgboost.dask`` wants:
    it never has to re-sort a worker's data); ``group`` has one chunk per partition holding the
    sizes of that partition's queries (what ``lightgbm.dask`` wants).
    """

    X: object
    y: object
    qid: object
    group: object
    weight: object

    @property
    def npartitions(self):
        return len(self.X.chunks[0])


def _is_dask(a):
    return hasattr(a, "dask") and hasattr(a, "__dask_graph__")


def _to_numpy_1d(a, name):
    if _is_dask(a):
        a = a.compute()
    a = np.asarray(a)
    if a.ndim == 2 and a.shape[1] == 1:
        a = a[:, 0]
    if a.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional, got shape {a.shape}")
    return a


def _as_dask_array(a, name, two_d):
    """A dask array with known row chunks (numpy, dask array, dask DataFrame / Series)."""
    import dask.array as da

    if a is None:
        return None
    if _is_dask(a) and not isinstance(a, da.Array):  # dask DataFrame / Series
        # Not lengths=True: dask-expr may fuse small partitions (read_parquet of small files) once
        # the graph is optimised, and the lengths it computes then disagree with the array's
        # partitions ("2 != 4"); the chunk sizes are computed below from the array itself.
        a = a.to_dask_array()
    elif not _is_dask(a):
        a = np.asarray(a)
        a = da.from_array(a, chunks=(a.shape[0],) + a.shape[1:])
    if two_d and a.ndim != 2:
        raise ValueError(f"{name} must be two-dimensional (rows x features), got {a.ndim} dimension(s)")
    if not two_d:
        if a.ndim == 2 and a.shape[1] == 1:
            a = a[:, 0]
        if a.ndim != 1:
            raise ValueError(f"{name} must be one-dimensional, got {a.ndim} dimensions")
    if any(np.isnan(c) for c in a.chunks[0]):
        a = a.compute_chunk_sizes()
    return a


def query_ptr(qid_or_group, n_rows, kind="auto"):
    """``(ptr, qid_is_rows)``: int64 query offsets from per-row query ids or query sizes.

    ``kind="auto"`` reads an array with one entry per row as query ids, anything else as query
    sizes. Query ids must be contiguous (all rows of a query adjacent), in any order.
    """
    if kind not in _KINDS:
        raise ValueError(f"kind must be one of {_KINDS}, got {kind!r}")
    if qid_or_group is None:
        raise ValueError("qid_or_group is required: per-row query ids or query sizes")
    a = _to_numpy_1d(qid_or_group, "qid_or_group")
    if kind == "auto":
        kind = "qid" if a.shape[0] == n_rows else "group"
    if kind == "qid":
        if a.shape[0] != n_rows:
            raise ValueError(f"qid has {a.shape[0]} entries but the data has {n_rows} rows")
        if n_rows == 0:
            return np.zeros(1, dtype=np.int64), True
        starts = np.flatnonzero(a[1:] != a[:-1]) + 1
        n_runs = starts.shape[0] + 1
        if n_runs != np.unique(a).shape[0]:
            raise ValueError(
                "qid: the rows of a query are not contiguous (some query id occurs in separate runs); "
                "sort the data by query first"
            )
        return np.concatenate(([0], starts, [n_rows])).astype(np.int64), True
    if not np.issubdtype(a.dtype, np.integer):
        if not np.all(np.isfinite(a)) or np.any(a != np.round(a)):
            raise ValueError("group (query sizes) must hold whole numbers")
    sizes = a.astype(np.int64)
    if np.any(sizes < 0):
        raise ValueError("group (query sizes) must be >= 0")
    if int(sizes.sum()) != n_rows:
        raise ValueError(f"group: query sizes sum to {int(sizes.sum())} but the data has {n_rows} rows")
    return np.concatenate(([0], np.cumsum(sizes))).astype(np.int64), False


#: Most partitions a repartitioning accepts: each is a Dask task (and a LightGBM / XGBoost worker
#: shard), and a million of them is already far past what a scheduler handles well; a larger count
#: is a typo, refused before numpy tries to allocate the cut points.
MAX_PARTITIONS = 1_000_000


def check_npartitions(npartitions, name="npartitions"):
    """``npartitions`` as an int in ``[1, MAX_PARTITIONS]``, or ValueError/TypeError naming it."""
    if isinstance(npartitions, bool) or not isinstance(npartitions, (int, np.integer)):
        raise TypeError(f"{name} must be a positive integer, got {type(npartitions).__name__} {npartitions!r}")
    if not 1 <= npartitions <= MAX_PARTITIONS:
        raise ValueError(f"{name} must be an integer in [1, {MAX_PARTITIONS}] (partitions of whole queries; "
                         f"a Dask task each), got {npartitions!r}")
    return int(npartitions)


def _row_chunks(ptr, npartitions):
    """Row chunk sizes cutting at the query boundaries nearest to equal-size targets."""
    n = int(ptr[-1])
    # past one partition per row every query boundary is already a cut: more only adds cut points
    npartitions = max(1, min(npartitions, n))
    targets = np.linspace(0, n, npartitions + 1)[1:-1]
    cut = np.searchsorted(ptr, targets)  # first boundary >= target
    lower = ptr[np.maximum(cut - 1, 0)]
    upper = ptr[np.minimum(cut, len(ptr) - 1)]
    nearest = np.where(targets - lower <= upper - targets, lower, upper)
    bounds = np.unique(np.concatenate(([0], nearest, [n])))
    chunks = tuple(int(c) for c in np.diff(bounds))
    return chunks if chunks else (0,)


def _layout(ptr, row_chunks):
    """Per-row dense query codes, non-empty query sizes and queries per partition."""
    sizes = np.diff(ptr)
    # Empty queries (size 0) hold no row: keeping them would only confuse the per-partition sizes.
    sizes = sizes[sizes > 0]
    ptr = np.concatenate(([0], np.cumsum(sizes))).astype(np.int64)
    codes = np.repeat(np.arange(sizes.shape[0], dtype=np.int64), sizes)
    bounds = np.concatenate(([0], np.cumsum(row_chunks))).astype(np.int64)
    per_part = tuple(int(c) for c in np.diff(np.searchsorted(ptr, bounds)))
    return codes, sizes, per_part


def _assemble(X, y, weight, ptr, row_chunks):
    import dask.array as da

    codes, sizes, per_part = _layout(ptr, row_chunks)
    X = X.rechunk({0: row_chunks, 1: -1})
    y = y.rechunk({0: row_chunks})
    if weight is not None:
        weight = weight.rechunk({0: row_chunks})
    qid = da.from_array(codes, chunks=(row_chunks,))
    group = da.from_array(sizes, chunks=(per_part,))
    return QueryPartitions(X, y, qid, group, weight)


def _n_workers(client):
    return max(1, len(client.scheduler_info(n_workers=-1)["workers"]))


def _workers(client, workers):
    if workers is None:
        workers = sorted(client.scheduler_info(n_workers=-1)["workers"])
    if not workers:
        raise ValueError("the Dask cluster has no workers")
    return list(workers)


def _blocks_from_futures(futures, shapes, dtype):
    import dask.array as da

    if not futures:
        return None
    return da.concatenate([da.from_delayed(f, shape=s, dtype=dtype) for f, s in zip(futures, shapes)])


def place_partitions(client, parts, workers=None):
    """Materialise ``parts`` with partition ``i`` (all its arrays together) on worker
    ``i % n_workers``, so that every worker trains on its share. Left to itself the scheduler may
    put every partition of a small array on one worker, which then trains alone."""
    workers = _workers(client, workers)
    fields = [a for a in parts]
    blocks = [None if a is None else list(a.to_delayed().ravel()) for a in fields]
    futures = [[] if a is None else [None] * len(b) for a, b in zip(fields, blocks)]
    for i in range(parts.npartitions):
        where = [workers[i % len(workers)]]
        for f, b in zip(futures, blocks):
            if b is not None:
                f[i] = client.compute(b[i], workers=where, allow_other_workers=False)
    out = []
    for a, f in zip(fields, futures):
        if a is None:
            out.append(None)
            continue
        rows = a.chunks[0]
        shapes = [(r,) + tuple(int(s) for s in a.shape[1:]) for r in rows]
        out.append(_blocks_from_futures(f, shapes, a.dtype))
    return QueryPartitions(*out)


def scatter_by_query(client, X, y, qid_or_group, npartitions, *, weight=None, kind="auto", workers=None):
    """Like :func:`repartition_by_query` followed by :func:`place_partitions` for numpy inputs,
    without putting the whole arrays into the task graph: each partition's slices are scattered
    straight to their worker."""
    npartitions = check_npartitions(npartitions)
    X = np.asarray(X)
    if X.ndim != 2:
        raise ValueError(f"X must be two-dimensional (rows x features), got {X.ndim} dimension(s)")
    y = _to_numpy_1d(y, "y")
    weight = None if weight is None else _to_numpy_1d(weight, "weight")
    _check_rows(X, {"y": y, "weight": weight})
    ptr, _ = query_ptr(qid_or_group, X.shape[0], kind)
    row_chunks = _row_chunks(ptr, npartitions)
    codes, sizes, per_part = _layout(ptr, row_chunks)
    workers = _workers(client, workers)
    rb = np.concatenate(([0], np.cumsum(row_chunks)))
    gb = np.concatenate(([0], np.cumsum(per_part)))
    arrays = [X, y, codes, sizes, weight]
    futures = [[] for _ in arrays]
    shapes = [[] for _ in arrays]
    for i in range(len(row_chunks)):
        where = [workers[i % len(workers)]]
        for k, a in enumerate(arrays):
            if a is None:
                continue
            lo, hi = (gb[i], gb[i + 1]) if k == 3 else (rb[i], rb[i + 1])
            piece = a[lo:hi]
            futures[k].append(client.scatter(piece, workers=where, direct=False, hash=False))
            shapes[k].append(piece.shape)
    out = [None if a is None else _blocks_from_futures(f, s, a.dtype) for a, f, s in zip(arrays, futures, shapes)]
    return QueryPartitions(*out)


def _check_rows(X, others):
    n = X.shape[0]
    for name, a in others.items():
        if a is not None and a.shape[0] != n:
            raise ValueError(f"{name} has {a.shape[0]} rows but X has {n}")


def repartition_by_query(X, y, qid_or_group, npartitions, *, weight=None, kind="auto"):
    """Repartition ``X``, ``y`` (and ``weight``) into ``npartitions`` Dask chunks of whole queries.

    ``X``: numpy array, Dask array or Dask DataFrame (DataFrames become Dask arrays: the
    libraries then name the features by position). ``qid_or_group``: per-row query ids
    (contiguous) or query sizes, numpy or Dask; ``kind`` forces the reading ("qid" / "group").
    Cuts fall on the query boundary nearest to ``n_rows / npartitions`` multiples, so partitions
    are as even as whole queries allow (fewer than ``npartitions`` if there are fewer queries).
    Returns :class:`QueryPartitions`.
    """
    npartitions = check_npartitions(npartitions)
    X = _as_dask_array(X, "X", two_d=True)
    y = _as_dask_array(y, "y", two_d=False)
    weight = _as_dask_array(weight, "weight", two_d=False)
    _check_rows(X, {"y": y, "weight": weight})
    ptr, _ = query_ptr(qid_or_group, X.shape[0], kind)
    return _assemble(X, y, weight, ptr, _row_chunks(ptr, npartitions))


def query_partitions(X, y, qid_or_group, *, weight=None, kind="auto"):
    """Keep the user's Dask partitioning of ``X`` but check that it holds whole queries.

    Raises ValueError naming the first query that straddles two partitions. ``qid_or_group``:
    per-row query ids (any chunking), or query sizes; as a Dask array with one chunk per
    partition of ``X`` (LightGBM's convention) the per-partition sums must match too.
    Returns :class:`QueryPartitions` with ``y``, ``qid``, ``weight`` rechunked like ``X``.
    """
    X = _as_dask_array(X, "X", two_d=True)
    y = _as_dask_array(y, "y", two_d=False)
    weight = _as_dask_array(weight, "weight", two_d=False)
    _check_rows(X, {"y": y, "weight": weight})
    row_chunks = tuple(int(c) for c in X.chunks[0])
    ptr, is_rows = query_ptr(qid_or_group, X.shape[0], kind)
    if (not is_rows and _is_dask(qid_or_group) and hasattr(qid_or_group, "chunks")
            and len(qid_or_group.chunks[0]) == len(row_chunks)):
        sums = [int(np.sum(b)) for b in _block_arrays(qid_or_group)]
        for i, (got, want) in enumerate(zip(sums, row_chunks)):
            if got != want:
                raise ValueError(
                    f"group chunk {i} sums to {got} rows but partition {i} of X has {want} rows: the "
                    "group chunks must hold the sizes of each partition's own queries (use "
                    "repartition_by_query)"
                )
    bounds = np.cumsum(row_chunks)[:-1]
    inside = ~np.isin(bounds, ptr)
    if np.any(inside):
        part = int(np.flatnonzero(inside)[0])
        row = int(bounds[part])
        q = int(np.searchsorted(ptr, row, side="right") - 1)
        raise ValueError(
            f"query {q} (rows {int(ptr[q])}..{int(ptr[q + 1]) - 1}) straddles partitions {part} and "
            f"{part + 1} of X: each worker would compute a ranking gradient from part of the query. "
            "Repartition with customobj.adapters.dask.repartition_by_query (or pass npartitions=)"
        )
    return _assemble(X, y, weight, ptr, row_chunks)


def _block_arrays(a):
    import dask

    return dask.compute(*[b for b in a.to_delayed().ravel()])
