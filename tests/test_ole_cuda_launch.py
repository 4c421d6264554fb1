"""customobj.ole.cuda._launch: a block's threads are a power of two (the tree reductions halve it) that
covers small launches, capped at THREADS on a GPU and SIMULATOR_THREADS under the simulator; a grid
covers its items or stops at the block cap (the grid-stride loops cover the rest); the split search
runs a warp (the simulator's block) per feature and node."""
import pytest

from customobj._cuda_runtime import THREADS, simulated
from customobj.ole.cuda._launch import (MAX_GRID_BLOCKS, SIMULATOR_BLOCKS, SIMULATOR_THREADS, WARP, feature_launch,
                                        grid_launch, pow2_threads)


@pytest.mark.parametrize("n", [0, 1, 2, 3, 7, 8, 9, 100, 10**7])
def test_threads_are_a_power_of_two_covering_small_launches(n):
    top = SIMULATOR_THREADS if simulated() else THREADS
    t = pow2_threads(n)
    assert t & (t - 1) == 0 and 1 <= t <= top
    assert t >= min(n, top) and (t == 1 or t // 2 < min(n, top))


@pytest.mark.parametrize("n", [0, 1, 5, 1000, 10**9])
def test_a_grid_covers_its_items_up_to_the_block_cap(n):
    blocks, threads = grid_launch(n)
    cap = SIMULATOR_BLOCKS if simulated() else MAX_GRID_BLOCKS
    assert threads == pow2_threads(n) and 1 <= blocks <= cap
    assert blocks * threads >= n or blocks == cap


@pytest.mark.parametrize("n_features, n_nodes", [(0, 1), (1, 2), (5, 1), (136, 2)])
def test_the_split_search_is_a_warp_per_feature_and_node(n_features, n_nodes):
    (features, nodes), threads = feature_launch(n_features, n_nodes)
    assert features == max(n_features, 1) and nodes == n_nodes
    assert threads == (SIMULATOR_THREADS if simulated() else WARP) == pow2_threads(WARP)
