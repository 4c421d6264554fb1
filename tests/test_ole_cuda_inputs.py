"""customobj/ole/cuda/inputs.py: a tree's inputs on the card. The rows' and the device
couplings' grids share one set of three launches (``pair_buffers`` is given the rows) and
give the CPU's root sums, read once; ``ole_fast``'s pruning leaves its kept count and coupling on
the card (no read: the count comes back as the root's pair counts, the coupling is the root's
``C``); the leaves' dropped couplings planned with a search come back with it. Tiny data under
numba's CUDA simulator; whole fits against the CPU: tests/test_ole_cuda_pruning.py and
tests/test_ole_cuda_backend.py."""
import numpy as np
import pytest

from customobj.ole.backend import CPUBackend

from _cuda_cases import needs_gpu
from _ole_cases import backend_case

pytestmark = needs_gpu


def _setup(criterion, **kw):
    from customobj._cuda_runtime import cuda_module
    from customobj.ole.cuda.backend import CUDABackend
    ctx, params, grad, hess, pairs = backend_case(8, 6, 3, 0.0, criterion=criterion, num_leaves=4,
                                                  min_data_in_leaf=3, **kw)
    cuda = cuda_module()
    device_pairs = tuple(cuda.to_device(np.ascontiguousarray(a)) for a in pairs)  # as the objective's kernels leave them
    return CUDABackend(ctx(), params), CPUBackend(ctx(), params), grad, hess, pairs, device_pairs


def _counts(backend):
    tree = backend.memory.counter.stats().trees[-1]
    return tree.launches, tree.reads


def test_the_rows_and_couplings_share_their_grids_launches_and_the_root_sums_are_the_cpus():
    gpu, cpu, grad, hess, pairs, dev = _setup("ole")
    order = np.arange(72, dtype=np.int64)[::-1].copy()
    bufs = gpu.inputs.pair_buffers(dev, (order, grad, hess))
    assert _counts(gpu) == (3, 0)  # grid_max, grid_units, grid_round: both grids
    host = tuple(np.array(a, copy=True) for a in pairs)
    cpu.pair_buffers(host)
    m = host[0].shape[0]
    got = gpu.inputs.root_sums(order, grad, hess, bufs[0][2], m)
    assert _counts(gpu) == (3, 1)  # nothing more launched: the sums, in one read
    assert got == (*cpu.row_sums(order, grad, hess), cpu.sum_couplings(host[2], 0, m))
    np.testing.assert_array_equal(bufs[0][2].copy_to_host(), host[2])  # the couplings on the CPU's grid


@pytest.mark.parametrize("eps", [0.1, 0.5])
def test_the_pruning_leaves_its_kept_count_and_coupling_on_the_card(eps):
    gpu, cpu, grad, hess, pairs, dev = _setup("ole_fast", ole_fast_epsilon=eps)
    order = np.arange(72, dtype=np.int64)
    bufs, dropped, kept = gpu.inputs.prune_pairs(gpu.inputs.pair_buffers(dev, (order, grad, hess)))
    launches, reads = _counts(gpu)
    assert reads == 0 and launches == 3 + 3  # the grids (with the query tops), masses, count, place
    host = tuple(np.array(a, copy=True) for a in pairs)
    cbufs, cdropped, ckept = cpu.prune_pairs(cpu.pair_buffers(host))
    k = ckept.counts[0]
    assert kept.counts == (k, 0) and ckept.counts == (k, 0)  # read here, on its own (a tree reads none)
    np.testing.assert_array_equal(bufs[0][0].copy_to_host()[:k], cbufs[0][0])
    G, H, C = gpu.inputs.root_sums(order, grad, hess, bufs[0][2], bufs[0][0].shape[0])
    assert (G, H, C) == (*cpu.row_sums(order, grad, hess), cpu.sum_couplings(cbufs[0][2], 0, k))  # C: the kept pairs'


def test_no_pruning_without_epsilon():
    gpu, cpu, grad, hess, pairs, dev = _setup("ole_fast", ole_fast_epsilon=0.0)
    bufs = gpu.inputs.pair_buffers(dev, (np.arange(72, dtype=np.int64), grad, hess))
    assert gpu.inputs.prune_pairs(bufs) == (bufs, None, None) and _counts(gpu) == (3, 0)


def test_a_plan_without_a_search_is_never_read_and_the_tree_reads_its_couplings_at_its_end():
    # a plan is summed only with a search; a tree that ends with none reads its leaves' sums once
    gpu, cpu, grad, hess, pairs, dev = _setup("ole_fast", ole_fast_epsilon=0.5)
    order = np.arange(72, dtype=np.int64)
    bufs, dropped, kept = gpu.inputs.prune_pairs(gpu.inputs.pair_buffers(dev, (order, grad, hess)))
    gpu.inputs.root_sums(order, grad, hess, bufs[0][2], bufs[0][0].shape[0])
    gpu.inputs.plan_dropped_sums([(0, 72, None)], dropped)
    host = tuple(np.array(a, copy=True) for a in pairs)
    cbufs, cdropped, _ = cpu.prune_pairs(cpu.pair_buffers(host))
    gpu.inputs.end_tree()
    before = _counts(gpu)[1]
    got = gpu.inputs.dropped_couplings([(0, 72)], dropped, [(0, 0)])
    assert _counts(gpu)[1] == before + 1  # no search brought them: read here
    np.testing.assert_array_equal(got, cpu.dropped_couplings(order, [(0, 72)], cdropped))


def test_a_plan_and_its_sources_are_checked():
    gpu, cpu, grad, hess, pairs, dev = _setup("ole_fast", ole_fast_epsilon=0.5)
    order = np.arange(72, dtype=np.int64)
    bufs, dropped, kept = gpu.inputs.prune_pairs(gpu.inputs.pair_buffers(dev, (order, grad, hess)))
    with pytest.raises(ValueError, match="result row"):
        gpu.inputs.plan_dropped_sums([(0, 72, gpu.search.result_rows)], dropped)
    gpu.inputs.planned_got = np.zeros(6)  # two planned leaves' sums, as a search brought them
    with pytest.raises(ValueError, match="sources"):
        gpu.inputs.dropped_couplings([(0, 72)], dropped, [(2, 0)])
