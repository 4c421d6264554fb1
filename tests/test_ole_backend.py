"""customobj.ole.backend: the grower's one seam to the kernels, begin_tree / expand(batch) / end_tree.
A fit makes one backend and every tree's histograms, split searches and partitions go through it
(same trees as before: the model-file and node-by-node grower tests); no method of the CPU side
does nothing, and the grower names no device concept; the criterion code is checked at the
boundary, and a kernel's unknown-code flag becomes an error."""
import numpy as np
import pytest

from customobj.ole import TreeBooster
from customobj.ole.backend import CPUBackend
from customobj.ole.binning import BinMapper
from customobj._kernel_status import KernelStatus
from customobj.ole.common import SPLIT_SIZE, ChildSums, SplitInfo
from customobj.ole.context import GrowContext
from customobj.ole.splitting import FeatureBins, SplitRules, find_best_split, split_gain

from _ole_cases import QUIET, make_X, ranknet_setup, tree_dicts

SEAM = ("begin_tree", "expand", "end_tree")
KERNELS = ("row_sums", "row_hist", "pair_hist", "sum_couplings", "pair_buffers", "find_split", "split_gain",
           "partition_rows", "partition_pairs")


def _backend(criterion="ole", n=200, **kw):
    X = make_X(3, n=n, n_features=5)
    mapper = BinMapper.fit(X, 16)
    params = TreeBooster(criterion=criterion, min_data_in_leaf=3, lambda_l2=0.5, **kw)._grow_params()
    return CPUBackend(GrowContext(mapper.bins_feature_major(X), mapper), params), mapper


@pytest.mark.parametrize("criterion", ["wse", "ole", "ole_fast"])
def test_one_backend_per_fit_serves_every_kernel_call(criterion, monkeypatch):
    import customobj.ole.training as training
    X, y, group, obj, *_ = ranknet_setup(5)
    kw = dict(criterion=criterion, num_leaves=6, n_estimators=3, min_data_in_leaf=4, **QUIET)
    want = tree_dicts(TreeBooster(obj, **kw).fit(X, y, group))
    made, calls = [], {}

    class Counting(CPUBackend):
        def __init__(self, *args):
            super().__init__(*args)
            made.append(self)

    for name in SEAM + KERNELS + ("wse_gains",):
        def counted(self, *args, _name=name, **kwargs):
            calls[_name] = calls.get(_name, 0) + 1
            return getattr(CPUBackend, _name)(self, *args, **kwargs)
        setattr(Counting, name, counted)
    monkeypatch.setattr(training, "CPUBackend", Counting)
    assert tree_dicts(TreeBooster(obj, **kw).fit(X, y, group)) == want  # the seam changes nothing
    assert len(made) == 1
    uses_pairs = criterion != "wse"
    assert calls["begin_tree"] == calls["end_tree"] == 3 and calls["expand"] > 0  # one tree a round
    for name in ("row_sums", "row_hist", "find_split", "partition_rows"):
        assert calls[name] > 0, name
    assert ("pair_hist" in calls) is uses_pairs and ("split_gain" in calls) is uses_pairs
    assert ("wse_gains" in calls) is (criterion == "ole_fast")


def test_the_criterion_code_is_checked_once_at_the_boundary():
    backend, _ = _backend()
    assert backend.score == 2 and type(backend.score) is int
    params = TreeBooster()._grow_params()
    bad = params._replace(criterion=params.criterion._replace(score=7))
    with pytest.raises(ValueError, match="7 is not a valid SplitScore"):
        CPUBackend(backend.ctx, bad)


@pytest.mark.parametrize("use_pairs", [False, True])
def test_find_split_is_the_kernels_result_read_by_name(use_pairs):
    from customobj.ole.pairhist import build_pair_hist
    from customobj.pairs import label_pairs
    backend, mapper = _backend()
    rng = np.random.default_rng(4)
    grad, hess = rng.normal(size=200), rng.random(200) + 0.1
    order = np.arange(200, dtype=np.int64)
    hist = backend.row_hist(order, 0, 200, grad, hess, root=True)
    pi, pj, _ = label_pairs(rng.integers(0, 3, 200).astype(float), [20] * 10)
    pc = rng.random(pi.size) * 0.05
    ph = build_pair_hist(backend.data.row_major, pi, pj, pc, 0, pi.size, mapper.offsets, mapper.n_bins,
                         mapper.n_slots) if use_pairs else np.zeros((1, 3))
    G, H = backend.row_sums(order, grad, hess)
    sums = ChildSums(G, H, 200.0, pc.sum() if use_pairs else 0.0)
    mask = np.ones(5, dtype=np.bool_)
    res = np.zeros(SPLIT_SIZE)
    find_best_split(hist, ph, use_pairs, FeatureBins(mapper.n_bins, mapper.offsets), mask, sums,
                    SplitRules(2, 0.5, 3.0, 1e-3), res)
    got = backend.find_split(hist, ph if use_pairs else None, mask, sums)
    assert got == SplitInfo.from_array(res) and got.gain > 0
    want = split_gain(SplitRules(2, 0.5, 3.0, 1e-3), sums, got.left, got.right)[1]
    assert backend.split_gain(sums, got.left, got.right) == want == pytest.approx(got.gain, rel=1e-12)


def test_a_kernels_unknown_code_flag_raises(monkeypatch):
    import customobj.ole.backend as backend_module
    backend, _ = _backend()
    monkeypatch.setattr(backend_module, "split_gain", lambda *args: (KernelStatus.UNKNOWN_CODE, 0.0))
    s = ChildSums(1.0, 2.0, 3.0, 0.0)
    with pytest.raises(ValueError, match="split_gain: unknown criterion code 2"):
        backend.split_gain(s, s, s)
    backend.score = 9  # as if the boundary had been skipped: the kernel itself flags it
    with pytest.raises(ValueError, match="find_best_split: unknown criterion code 9"):
        backend.find_split(np.zeros((backend.data.n_slots, 3)), None, np.ones(5, np.bool_), s)


def test_partitions_go_through_the_backend():
    backend, mapper = _backend(n=50)
    split = SplitInfo(1.0, 2, 3, False, ChildSums(0, 0, 0, 0), ChildSums(0, 0, 0, 0))
    order = np.arange(50, dtype=np.int64)
    nl = backend.partition_rows(order, 0, 50, split, False)
    col = backend.data.feature_major[2]
    left = (col <= 3) & (col != mapper.n_bins[2])  # NaN goes right here
    assert nl == left.sum()
    np.testing.assert_array_equal(order, np.concatenate([np.flatnonzero(left), np.flatnonzero(~left)]))
    pi, pj, pc = np.array([0, 1, 2], np.int32), np.array([3, 4, 5], np.int32), np.array([1.0, 2.0, 4.0])
    dst = tuple(np.empty_like(a) for a in (pi, pj, pc))
    n_left, n_right = backend.partition_pairs((pi, pj, pc), 0, 3, dst)
    both = [(left[a] and left[b], not left[a] and not left[b]) for a, b in zip(pi, pj)]
    assert (n_left, n_right) == (sum(b[0] for b in both), sum(b[1] for b in both))


@pytest.mark.parametrize("need", [(True, True), (True, False), (False, True)])
@pytest.mark.parametrize("rows", [(5.0, 40.0, 45.0), (40.0, 5.0, 45.0), (200.0, 200.0, 400.0)])
def test_the_childrens_pair_histograms_are_their_own_pairs_whichever_the_plan(need, rows):
    from customobj.ole.pairhist import PAIRS_DIRECT, pair_hist_plan
    backend, _ = _backend(n=50)
    backend.partition_rows(np.arange(50, dtype=np.int64), 0, 50, SplitInfo(1.0, 2, 3, False, *[ChildSums(0, 0, 0, 0)] * 2),
                           False)
    rng = np.random.default_rng(1)
    pi, pj = (rng.integers(0, 50, 400).astype(np.int32) for _ in range(2))
    pc = np.round(rng.uniform(0, 1, 400) * 1024) / 1024  # on a grid: exact sums
    buf = tuple(np.empty_like(a) for a in (pi, pj, pc))
    counts = backend.partition_pairs((pi, pj, pc), 0, 400, buf)
    nl, nr = counts
    want = [backend.pair_hist(buf, 0, nl).copy(), backend.pair_hist(buf, nl, nl + nr).copy()]
    got = backend.child_pair_hists(buf, 0, 400, counts, backend.pair_hist(buf, 0, 400).copy(), rows, need)
    plan = pair_hist_plan(nl, nr, 400, *rows, *need)
    for k in range(2):
        if need[k] or plan != PAIRS_DIRECT:
            np.testing.assert_array_equal(got[k], want[k])
        else:
            assert got[k] is None
    if rows == (5.0, 40.0, 45.0) and need == (True, True):  # few rows: the larger child by subtraction
        assert plan != PAIRS_DIRECT


def test_a_batch_is_expanded_in_order_and_the_rows_end_where_the_leaves_say():
    # the seam: begin_tree searches the root, expand splits a batch (each right child gets the next
    # index), end_tree gives each leaf's rows; a split's children carry the split's sums
    from customobj.ole.backend import Expansion
    backend, _ = _backend(criterion="wse")
    rng = np.random.default_rng(4)
    grad, hess = rng.normal(size=200), rng.uniform(0.5, 1.0, 200)
    order = np.arange(200, dtype=np.int64)
    start = backend.begin_tree(order, grad, hess, None, np.ones(5, np.bool_), searched=True)
    assert start.sums.N == 200 and start.split.gain > 0
    (root,) = backend.expand([Expansion(0, start.split, (True, True))])
    assert root.gain == start.split.gain and root.left.gain > 0 and root.right.gain > 0
    second = backend.expand([Expansion(0, root.left, (False, False)), Expansion(1, root.right, (False, True))])
    assert [e.left.gain for e in second] == [0.0, 0.0] and second[1].right.gain >= 0.0
    rows = backend.end_tree()
    sizes = [root.left.left.N, root.right.left.N, root.left.right.N, root.right.right.N]
    assert (rows.ends - rows.starts).tolist() == sizes and rows.dropped is None
    assert sorted(rows.order.tolist()) == list(range(200))
    with pytest.raises(RuntimeError, match="before begin_tree"):
        backend.expand([])


def test_no_cpu_backend_method_is_only_a_docstring_or_pass():
    # the seam has no hook that does nothing on one side
    import ast
    import inspect
    import textwrap
    import customobj.ole.backend as module
    for cls in (module.CPUBackend, module._HostTree):
        tree = ast.parse(textwrap.dedent(inspect.getsource(cls)))
        for fn in (n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)):
            body = [st for st in fn.body if not (isinstance(st, ast.Expr) and isinstance(st.value, ast.Constant))]
            assert body and not all(isinstance(st, ast.Pass) for st in body), f"{cls.__name__}.{fn.name}"


def test_the_grower_names_no_device_concept():
    # the grower keeps leaves, nodes and the open heap; what a GPU defers or plans is its backend's
    from pathlib import Path
    import customobj.ole.grower as grower
    text = Path(grower.__file__).read_text().lower()
    for word in ("device", "gpu", "cuda", "card", "deferred", "plan", "pending", "searched_root", "arrived"):
        assert word not in text, word
