"""Memory of the objectives (issue 13): gradients stream over the pairs (O(n) memory); every path
that materialises a pair list honours the pair budget (``MAX_PAIRS``) before allocating."""
from __future__ import annotations

import numpy as np
import pytest

import customobj as co
from customobj import _validation as V
from _objective_cases import S, S10, Y, Y10


def _one_large_query(n):
    """Labels 0-2 and random scores of one query of ``n`` rows (~n**2 / 3 candidate pairs)."""
    rng = np.random.default_rng(3)
    return rng.integers(0, 3, n).astype(float), rng.normal(size=n)


def test_one_query_of_20000_rows_no_quadratic_memory():
    """2e8 candidate pairs: gradients stream over them (O(n) memory); the pair list is refused."""
    n = 20_000
    y, s = _one_large_query(n)
    obj = co.RankSVM()
    prep = obj.prepare(y, [n])
    g, h = obj.grad_hess_prepared(s, prep)
    assert np.all(np.isfinite(g)) and abs(g.sum()) < 1e-6 * np.abs(g).sum()
    with pytest.raises(ValueError, match=r"pair_couplings would materialise 1\d\d,\d{3},\d{3} row pairs.*MAX_PAIRS"):
        obj.pair_couplings_prepared(s, prep)
    with pytest.raises(ValueError, match=r"label_pairs would materialise .* max_pairs_per_query"):
        co.label_pairs(y, [n])
    i, j, d = co.label_pairs(y, [n], max_pairs_per_query=1000, seed=1)
    assert i.size == 1000 and np.all(y[i] > y[j])


def test_pair_budget_message(monkeypatch):
    monkeypatch.setattr(V, "MAX_PAIRS", 5)
    with pytest.raises(ValueError, match=r"would materialise 8 row pairs .*MAX_PAIRS = 5"):
        co.RankNet().pair_couplings(S, Y, [5])


def test_lambdarank_pair_buffer_refused_before_allocation():
    """The OLE path (pair_buffer) skipped the pair budget: one 20,000-row query allocated until
    MemoryError. Now the count pass (no pair memory) is followed by the budget check."""
    n = 20_000
    y, s = _one_large_query(n)
    obj = co.LambdaRank()
    prep = obj.prepare(y, [n])
    asked = []
    with pytest.raises(ValueError, match=r"LambdaRank couplings would materialise 133,\d{3},\d{3} row pairs \(about 4.3 GB\)"
                                         r".*MAX_PAIRS = 100,000,000"):
        obj.grad_hess_couplings_prepared(s, prep, pair_buffer=lambda m: asked.append(m))
    assert asked == []  # the buffer was never requested
    g, h = obj.grad_hess_prepared(s, prep)  # gradients need no pair list
    assert np.all(np.isfinite(g))


@pytest.mark.parametrize("path", ["pair_couplings", "grad_hess_couplings", "pair_buffer"])
def test_lambdarank_every_pair_path_honours_the_budget(monkeypatch, path):
    obj = co.LambdaRank()
    prep = obj.prepare(Y10, [10])
    full = obj.pair_couplings_prepared(S10, prep)
    m = full[0].size
    monkeypatch.setattr(V, "MAX_PAIRS", m - 1)
    calls = {
        "pair_couplings": lambda: obj.pair_couplings_prepared(S10, prep),
        "grad_hess_couplings": lambda: obj.grad_hess_couplings_prepared(S10, prep),
        "pair_buffer": lambda: obj.grad_hess_couplings_prepared(
            S10, prep, pair_buffer=lambda k: (np.empty(k, np.int32), np.empty(k, np.int32), np.empty(k))),
    }
    with pytest.raises(ValueError, match=rf"LambdaRank couplings would materialise {m} row pairs"):
        calls[path]()
    monkeypatch.setattr(V, "MAX_PAIRS", m)
    out = calls[path]()
    pairs = out if path == "pair_couplings" else out[2]
    np.testing.assert_array_equal(pairs[2], full[2])  # at the budget: the same couplings as before


def test_sum_of_pair_lists_honours_the_budget(monkeypatch):
    obj = co.RankNet() + co.RankSVM()
    one = co.RankNet().pair_couplings(S10, Y10, [10])[0].size
    monkeypatch.setattr(V, "MAX_PAIRS", one)  # each part fits, the joined list does not
    with pytest.raises(ValueError, match=rf"pair_couplings of a Sum would materialise {2 * one} row pairs"):
        obj.pair_couplings(S10, Y10, [10])
