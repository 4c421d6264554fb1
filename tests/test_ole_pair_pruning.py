"""customobj.ole.pair_pruning: the per-query coupling-mass bound, against brute force."""
import numpy as np
import pytest

from _ole_cases import contiguous_pairs, random_pairs
from customobj.ole.pair_pruning import (N_BUCKETS, Dropped, dropped_leaf_couplings, prune_for_tree, prune_pairs,
                                        query_of_rows)


def run(pi, pj, pc, ptr, eps):
    out = tuple(np.full(pc.size, -7, a.dtype) for a in (pi, pj, pc))
    k = prune_pairs(pi, pj, pc, query_of_rows(ptr), ptr.size - 1, eps, *out)
    return k, out


@pytest.mark.parametrize("eps", [0.0, 0.05, 0.2, 0.5, 0.9])
def test_each_query_drops_its_smallest_couplings_within_epsilon_of_its_mass(eps):
    pi, pj, pc, ptr = random_pairs(0)
    k, (oi, oj, oc) = run(pi, pj, pc, ptr, eps)
    keep = np.zeros(pc.size, bool)  # which input pairs were kept: the kept ones come in input order
    key = {(a, b, c): i for i, (a, b, c) in enumerate(zip(pi, pj, pc))}
    idx = [key[t] for t in zip(oi[:k], oj[:k], oc[:k])]
    assert idx == sorted(idx)
    keep[idx] = True
    assert sorted(key[t] for t in zip(oi[k:], oj[k:], oc[k:])) == list(np.flatnonzero(~keep))  # the rest, behind
    q = query_of_rows(ptr)[pi]
    assert np.all(keep[pc < 0]) and not np.any(keep[pc == 0])
    for query in range(ptr.size - 1):
        c = pc[q == query]
        kq = keep[q == query]
        pos = c > 0
        mass = c[pos].sum()
        dropped = c[pos & ~kq]
        assert dropped.sum() <= eps * mass * (1 + 1e-12)
        if dropped.size and (kq & pos).any():
            assert c[kq & pos].min() >= dropped.max()  # the largest couplings are the ones kept
            # not more than one bucket too cautious: the smallest kept bucket did not fit in the budget
            bits = c.view(np.int64) >> 50
            low = bits[kq & pos].min()
            assert dropped.sum() + c[kq & pos & (bits == low)].sum() > eps * mass
    if eps == 0.0:
        np.testing.assert_array_equal(keep, pc != 0)


def test_a_larger_epsilon_keeps_fewer_pairs_and_the_kept_sets_are_nested():
    pi, pj, pc, ptr = random_pairs(1)
    kept = [set(zip(*(a[:k] for a in out))) for k, out in (run(pi, pj, pc, ptr, e) for e in (0.0, 0.1, 0.3, 0.6))]
    for big, small in zip(kept, kept[1:]):
        assert small < big


def test_couplings_far_below_the_largest_share_the_last_bucket():
    # 1 and 2**-40: 160 quarter octaves apart, beyond N_BUCKETS; both tiny ones go together
    ptr = np.array([0, 4])
    pi = np.array([0, 0, 1], np.int32)
    pj = np.array([1, 2, 3], np.int32)
    pc = np.array([1.0, 2.0**-40, 2.0**-41])
    assert N_BUCKETS < 160
    k, out = run(pi, pj, pc, ptr, 1e-9)
    assert k == 1 and out[2][0] == 1.0


def leaf_sums_brute(order, ranges, pi, pj, pc, n):
    leaf = np.full(n, -1)
    for l, (s, e) in enumerate(ranges):
        leaf[order[s:e]] = l
    return [pc[(leaf[pi] == l) & (leaf[pj] == l)].sum() for l in range(len(ranges))]


@pytest.mark.parametrize("room, eps", [(True, 0.3), (False, 0.02)])
def test_prune_for_tree_keeps_what_the_leaf_correction_reads_out_of_the_trees_way(room, eps):
    """Roomy scratch: only kept pairs written, the round's pairs untouched; else dropped pairs
    behind the kept ones. Either way the dropped pairs inside each leaf sum as by brute force,
    after the tree's ping-pong buffers have been overwritten."""
    pi, pj, pc, ptr = random_pairs(2)
    by_query = np.argsort(query_of_rows(ptr)[pi], kind="stable")  # contiguous queries, as LambdaRank
    pi, pj, pc = pi[by_query], pj[by_query], pc[by_query]
    m, n = pc.size, ptr[-1]
    src = (pi.copy(), pj.copy(), pc.copy())
    cap = 2 * m if room else m
    bufs = (src, tuple(np.empty(cap, a.dtype) for a in (pi, pj, pc)))
    (kept, other), dropped = prune_for_tree(bufs, query_of_rows(ptr), ptr.size - 1, eps)
    k = kept[0].size
    assert other[0].size == k and isinstance(dropped, Dropped) and dropped.only_dropped != room
    assert np.shares_memory(kept[0], bufs[1][0]) and np.shares_memory(other[0], bufs[1 if room else 0][0])
    ref = tuple(np.empty(m, a.dtype) for a in (pi, pj, pc))
    k_ref = prune_pairs(pi, pj, pc, query_of_rows(ptr), ptr.size - 1, eps, *ref)
    assert k == k_ref and (2 * k <= cap) == room
    np.testing.assert_array_equal(kept[2], ref[2][:k])
    gone = (ref[0][k:], ref[1][k:], ref[2][k:])
    for a in kept + other:  # what the tree's partitions may do to both ping-pong buffers
        a[:] = 0
    rng = np.random.default_rng(0)
    order = rng.permutation(n).astype(np.int64)
    cuts = np.sort(rng.choice(np.arange(1, n), 5, replace=False))
    ranges = list(zip(np.r_[0, cuts], np.r_[cuts, n]))
    got = dropped_leaf_couplings(order, ranges, dropped, n)
    np.testing.assert_allclose(got, leaf_sums_brute(order, ranges, *gone, n), rtol=1e-12)
    assert got.sum() > 0


def test_query_of_rows():
    np.testing.assert_array_equal(query_of_rows(np.array([0, 2, 2, 5])), [0, 0, 2, 2, 2])
    with pytest.raises(ValueError, match="ptr"):
        query_of_rows(np.array([0, 3, 1]))


@pytest.mark.parametrize("eps", [-0.1, 1.0, float("nan"), 2.0])
def test_epsilon_outside_0_1_is_refused(eps):
    pi, pj, pc, ptr = random_pairs(4, n_queries=3)
    with pytest.raises(ValueError, match="epsilon"):
        run(pi, pj, pc, ptr, eps)


def test_inconsistent_inputs_are_refused():
    pi, pj, pc, ptr = random_pairs(5, n_queries=3)
    qor = query_of_rows(ptr)
    out = tuple(np.empty(pc.size, a.dtype) for a in (pi, pj, pc))
    with pytest.raises(ValueError, match="lengths"):
        prune_pairs(pi[:-1], pj, pc, qor, 3, 0.1, *out)
    with pytest.raises(ValueError, match="query_of_row"):
        prune_pairs(pi, pj, pc, qor, 2, 0.1, *out)  # query ids beyond n_queries
    with pytest.raises(ValueError, match="rows"):
        prune_pairs(pi, pj, pc, qor[:-5], 3, 0.1, *out)  # pairs reach rows without a query


def test_dropped_leaf_couplings_over_many_blocks_against_brute_force():
    pi, pj, pc, ptr = contiguous_pairs(9, n_queries=400, max_rows=60)
    qor, nq, n = query_of_rows(ptr), ptr.size - 1, int(ptr[-1])
    tops, cuts = np.zeros(nq, np.int64), np.full(nq, N_BUCKETS, np.int64)
    out = tuple(np.empty(pc.size, a.dtype) for a in (pi, pj, pc))
    k = prune_pairs(pi, pj, pc, qor, nq, 0.3, *out, write_dropped=False, thresholds=(tops, cuts))
    kept = set(zip(out[0][:k].tolist(), out[1][:k].tolist()))
    rng = np.random.default_rng(3)
    order = rng.permutation(n).astype(np.int64)
    cut_points = np.sort(rng.choice(np.arange(1, n), 9, replace=False))
    ranges = list(zip(np.r_[0, cut_points], np.r_[cut_points, n]))
    leaf = np.empty(n, np.int64)
    for l, (s, e) in enumerate(ranges):
        leaf[order[s:e]] = l
    expect = np.zeros(len(ranges))
    for a, b, c in zip(pi.tolist(), pj.tolist(), pc.tolist()):
        if leaf[a] == leaf[b] and c > 0 and (a, b) not in kept:
            expect[leaf[a]] += c
    got = dropped_leaf_couplings(order, ranges, Dropped((pi, pj, pc), qor, tops, cuts, False), n)
    np.testing.assert_allclose(got, expect, rtol=1e-12)
