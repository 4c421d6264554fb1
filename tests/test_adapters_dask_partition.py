"""customobj.adapters._dask_partition: query-aligned Dask partitions (every query's rows inside one
partition), reached through its public names in ``customobj.adapters.dask``; the straddling-query
and layout errors. Distributed training is tested in tests/test_adapters_dask.py."""
import numpy as np
import pytest

import customobj.adapters  # noqa: F401  (thread environment before lightgbm / xgboost load)

da = pytest.importorskip("dask.array")
pytest.importorskip("dask.dataframe")  # xgboost.dask needs it (and pyarrow)

from _oracles import sizes_to_qid as _sizes_to_qid  # noqa: E402
from customobj.adapters import dask as ad  # noqa: E402


def _check_aligned(parts, sizes):
    ptr = np.concatenate(([0], np.cumsum(sizes)))
    rows = np.array(parts.X.chunks[0])
    assert set(np.cumsum(rows)) <= set(ptr.tolist())  # every cut is a query boundary
    assert parts.y.chunks[0] == parts.X.chunks[0] == parts.qid.chunks[0]
    assert len(parts.group.chunks[0]) == len(rows)
    for g, r in zip(parts.group.to_delayed().ravel(), rows):
        assert int(np.sum(g.compute())) == r  # each group chunk = that partition's own queries
    qid = parts.qid.compute()
    assert np.all(np.diff(qid) >= 0)
    np.testing.assert_array_equal(np.bincount(qid), np.asarray(sizes)[np.asarray(sizes) > 0])


@pytest.mark.parametrize("npartitions", [1, 3, 7, 50])
def test_repartition_by_query_cuts_at_query_boundaries(npartitions):
    rng = np.random.default_rng(npartitions)
    sizes = rng.integers(1, 30, 20)
    n = int(sizes.sum())
    X = rng.standard_normal((n, 4))
    y = rng.integers(0, 3, n).astype(float)
    w = rng.random(n)
    # Dask input chunked without regard to queries; query ids contiguous but not increasing.
    ids = rng.permutation(1000)[:20]
    parts = ad.repartition_by_query(da.from_array(X, chunks=(17, 2)), da.from_array(y, chunks=13),
                                    da.from_array(_sizes_to_qid(sizes, ids), chunks=29), npartitions, weight=w)
    assert parts.npartitions == min(npartitions, 20)
    _check_aligned(parts, sizes)
    np.testing.assert_array_equal(parts.X.compute(), X)
    np.testing.assert_array_equal(parts.y.compute(), y)
    np.testing.assert_array_equal(parts.weight.compute(), w)
    # Query sizes give the same partitions as query ids.
    by_group = ad.repartition_by_query(X, y, sizes, npartitions)
    assert by_group.X.chunks == parts.X.chunks


def test_repartition_by_query_balances_and_skips_empty_queries():
    sizes = np.array([5, 0, 5, 5, 0, 5])
    X, y = np.zeros((20, 2)), np.zeros(20)
    parts = ad.repartition_by_query(X, y, sizes, 2, kind="group")
    assert parts.X.chunks[0] == (10, 10)
    _check_aligned(parts, sizes)
    np.testing.assert_array_equal(parts.group.compute(), [5, 5, 5, 5])


def test_repartition_by_query_accepts_a_dask_dataframe():
    pd = pytest.importorskip("pandas")
    dd = pytest.importorskip("dask.dataframe")
    sizes = np.array([3, 4, 2, 6])
    X = np.arange(30.0).reshape(15, 2)
    ddf = dd.from_pandas(pd.DataFrame(X, columns=["a", "b"]), npartitions=4)
    parts = ad.repartition_by_query(ddf, dd.from_pandas(pd.Series(np.arange(15.0)), npartitions=3), sizes, 2)
    _check_aligned(parts, sizes)
    np.testing.assert_array_equal(parts.X.compute(), X)


def test_query_straddling_user_partitions_is_a_value_error():
    sizes = np.array([4, 4, 4])
    X = da.from_array(np.zeros((12, 3)), chunks=(6, 3))  # cut in the middle of query 1
    y = np.zeros(12)
    with pytest.raises(ValueError, match=r"query 1 \(rows 4..7\) straddles partitions 0 and 1"):
        ad.query_partitions(X, y, _sizes_to_qid(sizes))
    with pytest.raises(ValueError, match="straddles"):
        ad.query_partitions(X, y, sizes)
    # LightGBM-style group chunks must hold each partition's own queries.
    X_ok = da.from_array(np.zeros((12, 3)), chunks=(8, 3))
    with pytest.raises(ValueError, match="group chunk 0 sums to 4 rows but partition 0 of X has 8"):
        ad.query_partitions(X_ok, y, da.from_array(sizes, chunks=((1, 2),)))
    parts = ad.query_partitions(X_ok, y, da.from_array(sizes, chunks=((2, 1),)))
    _check_aligned(parts, sizes)


@pytest.mark.parametrize("bad, match", [
    (np.array([0, 0, 1, 1, 0, 0]), "not contiguous"),
    (np.array([3, 3]), "sum to 6 but the data has 7 rows"),
])
def test_query_layout_errors(bad, match):
    n = 6 if match == "not contiguous" else 7
    with pytest.raises(ValueError, match=match):
        ad.repartition_by_query(np.zeros((n, 2)), np.zeros(n), bad, 2)


def test_bad_npartitions_and_shapes():
    with pytest.raises(ValueError, match="npartitions"):
        ad.repartition_by_query(np.zeros((4, 2)), np.zeros(4), [4], 0)
    with pytest.raises(ValueError, match="y has 3 rows but X has 4"):
        ad.repartition_by_query(np.zeros((4, 2)), np.zeros(3), [4], 1)


@pytest.mark.parametrize("npartitions", [10**12, 2**62, 2**63, np.int64(2**62)])
def test_an_absurd_partition_count_is_refused_naming_npartitions(npartitions):
    """Not numpy's MemoryError / "array is too big" from the cut points of 10**12 partitions."""
    from customobj.adapters._dask_partition import MAX_PARTITIONS, scatter_by_query

    X, y = np.zeros((4, 2)), np.zeros(4)
    with pytest.raises(ValueError, match=rf"npartitions must be an integer in \[1, {MAX_PARTITIONS}\]"):
        ad.repartition_by_query(X, y, [4], npartitions)
    with pytest.raises(ValueError, match="npartitions"):  # refused before any client is touched
        scatter_by_query(None, X, y, [4], npartitions)


@pytest.mark.parametrize("npartitions", [2.5, "4", True, None])
def test_a_partition_count_that_is_not_an_integer_is_refused(npartitions):
    from customobj.adapters._dask_partition import scatter_by_query

    with pytest.raises(TypeError, match="npartitions must be a positive integer"):
        scatter_by_query(None, np.zeros((4, 2)), np.zeros(4), [4], npartitions)


def test_more_partitions_than_queries_gives_one_per_query():
    parts = ad.repartition_by_query(np.zeros((6, 2)), np.zeros(6), [2, 0, 4], 1000)
    assert parts.X.chunks[0] == (2, 4)


def test_query_ptr_reads_ids_or_sizes():
    from customobj.adapters._dask_partition import query_ptr

    ptr, is_rows = query_ptr([7, 7, 3, 3, 3, 9], 6)  # one entry per row: query ids, in any order
    assert ptr.tolist() == [0, 2, 5, 6] and is_rows and ptr.dtype == np.int64
    ptr, is_rows = query_ptr([2, 0, 4], 6)  # otherwise: query sizes (an empty query keeps its offset)
    assert ptr.tolist() == [0, 2, 2, 6] and not is_rows
    ptr, _ = query_ptr([1, 1, 1], 3, kind="group")  # forced: three one-row queries
    assert ptr.tolist() == [0, 1, 2, 3]
    assert query_ptr([], 0, kind="qid")[0].tolist() == [0]
    for bad, kind, msg in [([1, 2, 1], "qid", "not contiguous"), ([2.5, 0.5], "group", "whole numbers"),
                           ([4, -1], "group", ">= 0"), ([1, 1], "qid", "qid has 2 entries but the data has 3 rows"),
                           ([1], "rows", "kind must be one of")]:
        with pytest.raises(ValueError, match=msg):
            query_ptr(bad, 3, kind=kind)
    with pytest.raises(ValueError, match="qid_or_group is required"):
        query_ptr(None, 3)


def test_parquet_files_of_whole_queries_keep_their_partitions(tmp_path):
    """dask-expr fuses small files into fewer partitions per column projection; the partitions
    are read from the array itself, so X, y and qid agree and whole queries stay whole."""
    pd = pytest.importorskip("pandas")
    dd = pytest.importorskip("dask.dataframe")
    sizes = np.array([30, 20, 25, 25, 40, 10])
    qid = np.repeat(np.arange(6), sizes)
    rng = np.random.default_rng(0)
    X = rng.normal(size=(qid.size, 5))
    frame = pd.DataFrame(X, columns=[f"f{j}" for j in range(5)]).assign(label=rng.integers(0, 3, qid.size), qid=qid)
    for i, cut in enumerate([(0, 50), (50, 100), (100, 150)]):  # three files of whole queries
        frame.iloc[cut[0]:cut[1]].to_parquet(tmp_path / f"part-{i}.parquet")
    df = dd.read_parquet(str(tmp_path / "*.parquet"))
    parts = ad.query_partitions(df[[f"f{j}" for j in range(5)]], df["label"], df["qid"])
    _check_aligned(parts, sizes)
    np.testing.assert_array_equal(parts.X.compute(), X)
