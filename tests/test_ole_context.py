"""customobj.ole.context: the pair buffers (in-bag positive couplings, memory reused, pairs used in
place) and the bin layouts the pair histograms read (a row-major copy or the transposed view)."""
import numpy as np
import pytest

from customobj import LambdaRank
from customobj.ole import TreeBooster
from customobj.ole.binning import BinMapper

from _ole_cases import make_X


@pytest.mark.parametrize("m", [200, 300_000])  # 300,000: several parallel blocks
def test_load_pairs_keeps_positive_in_bag_couplings_and_reuses_its_buffer(m):
    from customobj.ole.context import GrowContext
    X = make_X(3, n=50, n_features=2)
    mapper = BinMapper.fit(X, 8)
    buffers = GrowContext(mapper.bins_feature_major(X), mapper).pairs
    rng = np.random.default_rng(3)
    pi, pj = rng.integers(0, 50, m), rng.integers(0, 50, m)
    pc = np.where(rng.random(m) < 0.3, 0.0, rng.random(m))
    in_bag = rng.random(50) < 0.7
    for bag in (None, in_bag):
        keep = pc > 0 if bag is None else (pc > 0) & bag[pi] & bag[pj]
        a, b, c = buffers.load((pi, pj, pc), bag)
        assert a.dtype == b.dtype == np.int32
        np.testing.assert_array_equal(a, pi[keep])
        np.testing.assert_array_equal(b, pj[keep])
        np.testing.assert_array_equal(c, pc[keep])
    first = buffers.input[0]
    buffers.load((pi[:100], pj[:100], pc[:100]), None)
    assert buffers.input[0] is first  # a smaller round refills the same memory
    # pairs an objective wrote into the buffer are used in place, and bagging compacts them there
    keep = (pc > 0) & in_bag[pi] & in_bag[pj]
    for bag in (None, in_bag):
        bi, bj, bc = buffers.pair_buffer(m)
        bi[:], bj[:], bc[:] = pi, pj, pc
        a, b, c = buffers.load((bi, bj, bc), bag)
        assert np.shares_memory(c, buffers.input[2])
        want = np.ones(m, bool) if bag is None else keep
        np.testing.assert_array_equal(a, pi[want])
        np.testing.assert_array_equal(c, pc[want])


def test_ole_model_does_not_depend_on_the_pair_bin_layout(monkeypatch):
    import customobj.ole.context as context
    X = make_X(11, n=300, n_features=5, nan_frac=0.1)
    y = np.random.default_rng(11).integers(0, 3, 300).astype(float)
    kw = dict(criterion="ole", n_estimators=3, num_leaves=6, min_data_in_leaf=5, verbose=False)
    row_major = TreeBooster(LambdaRank(truncation=10), **kw).fit(X, y, [30] * 10).to_json()
    monkeypatch.setattr(context, "ROW_MAJOR_COPY_BYTES", 0)  # large-data path: transposed view only
    view = TreeBooster(LambdaRank(truncation=10), **kw).fit(X, y, [30] * 10).to_json()
    assert view == row_major


def test_gradient_outputs_are_reused_across_rounds_of_one_shape():
    from customobj.ole.context import GrowContext
    X = np.random.default_rng(0).normal(size=(30, 3))
    mapper = BinMapper.fit(X, 16)
    ctx = GrowContext(mapper.bins_feature_major(X), mapper)
    g, h = ctx.gradient_outputs((30,))
    assert g.dtype == h.dtype == np.float64 and g.shape == h.shape == (30,) and g is not h
    again = ctx.gradient_outputs((30,))
    assert again[0] is g and again[1] is h
    multi = ctx.gradient_outputs((30, 4))  # McRank's (n, K): new arrays
    assert multi[0].shape == (30, 4) and multi[0].flags.c_contiguous
