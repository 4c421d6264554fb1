"""customobj.ole.pair_partition: the stable three-way pair partition (one block and several parallel
blocks)."""
import numpy as np
import pytest

from customobj.ole.pair_partition import partition_pairs


@pytest.mark.parametrize("n,m,start,end", [(50, 400, 30, 350), (5000, 300_000, 1_000, 299_000)])
def test_partition_pairs_is_stable_three_way(n, m, start, end):
    # the second case spans several parallel blocks (65,536 pairs each)
    rng = np.random.default_rng(21)
    go_left = rng.random(n) < 0.4
    pi = rng.integers(0, n, m).astype(np.int32)
    pj = rng.integers(0, n, m).astype(np.int32)
    pc = rng.random(m)
    oi, oj, oc = np.full(m, -7, np.int32), np.full(m, -7, np.int32), np.full(m, -7.0)
    a, b, c = pi.copy(), pj.copy(), pc.copy()
    nl, nr = partition_pairs(a, b, c, start, end, go_left, oi, oj, oc)
    side = np.where(go_left[pi[start:end]] & go_left[pj[start:end]], 0,
                    np.where(~go_left[pi[start:end]] & ~go_left[pj[start:end]], 1, 2))
    order = np.argsort(side, kind="stable") + start
    assert (nl, nr) == ((side == 0).sum(), (side == 1).sum())
    np.testing.assert_array_equal(oi[start:end], pi[order])
    np.testing.assert_array_equal(oj[start:end], pj[order])
    np.testing.assert_array_equal(oc[start:end], pc[order])
    assert np.all(oi[:start] == -7) and np.all(oi[end:] == -7)  # outside the range: untouched
    np.testing.assert_array_equal(a, pi)  # the source is left as it was
    np.testing.assert_array_equal(c, pc)
