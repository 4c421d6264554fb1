"""Shared fixtures. The LETOR data lives in ../shared/data (or $CUSTOMOBJ_DATA); never copied here.

Under CI=true a missing data directory is an error, not a skip.

Thread-count tests compare one numba thread with two. numba sizes its pool once, at import, from
``NUMBA_NUM_THREADS`` (default: the CPU count), so on a 1-CPU machine the pool has one thread and
"1 versus NUMBA_NUM_THREADS" compares 1 with 1. Before anything imports numba, an unset
``NUMBA_NUM_THREADS`` is raised to 2 there (two threads on one core still interleave, which is what
these tests need); a pool the user pinned to 1 makes them skip, saying so (:func:`two_threads`).
"""
from __future__ import annotations

import os
from pathlib import Path

import pytest

if "NUMBA_NUM_THREADS" not in os.environ and (os.cpu_count() or 1) < 2:
    os.environ["NUMBA_NUM_THREADS"] = "2"

# The GPU kernels are tested against their CPU twins everywhere: on a machine without NVIDIA's driver
# library they run on numba's CUDA simulator, chosen here before anything imports numba.cuda (the
# choice is fixed at that import). A machine with the driver tests them on its GPU; an explicit
# NUMBA_ENABLE_CUDASIM is honoured either way.
if "NUMBA_ENABLE_CUDASIM" not in os.environ:
    import ctypes.util

    if ctypes.util.find_library("cuda") is None:
        os.environ["NUMBA_ENABLE_CUDASIM"] = "1"

# The simulator's own block manager (numba_cuda/simulator/kernel.py) busy-polls a block's threads, so
# a woken thread waits up to one GIL switch interval (5 ms by default) for the poller to let go: 0.2
# ms halved the simulator's CPU time then (a tiny OLE fit: 4.4 s -> 1.8 s). With the sleeping barriers
# installed below (customobj/_simulator_barrier.py: nothing polls; a waiting thread blocks, releasing
# the GIL at once) the short interval only adds GIL hand-offs between runnable threads: at Python's 5 ms
# a simulated OLE fit takes ~15% less CPU and wall time, mostly system time (200 rows, "ole", 2 trees,
# the two intervals interleaved in one process, 3 fits each: 10.5, 10.4, 9.9 s CPU -> 8.8, 8.6, 7.9 s),
# the same trees (thread scheduling only). So 0.2 ms is set only where the barriers cannot be installed.
REPO = Path(__file__).resolve().parent.parent

from customobj import _numba_cache  # noqa: E402  (after NUMBA_NUM_THREADS: importing customobj loads numba)

# The one-line "compiling numba kernels on first use" notice is for a user's first run; in the test
# process it would land in whichever test compiles first and break that test's exact-stderr checks.
# Its own tests run it in child processes (tests/test_numba_cache.py).
_numba_cache.silence_compile_notice()

# The simulator's shared arrays need a lock (two threads of a block could make two arrays for one
# line: customobj/_cuda_runtime.py says how it bit). customobj's ``cuda_module`` installs it in every
# process that runs its kernels simulated; here it is installed before any test, also for the tests'
# own kernels that import numba.cuda directly.
if os.environ.get("NUMBA_ENABLE_CUDASIM") == "1":
    from customobj._cuda_runtime import lock_simulator_shared_arrays  # noqa: E402
    from customobj._simulator_barrier import sleep_at_simulator_barriers  # noqa: E402

    lock_simulator_shared_arrays()
    if not sleep_at_simulator_barriers():  # the block's threads sleep at barriers: no polling launcher
        import sys

        sys.setswitchinterval(2e-4)  # the simulator's polling launcher: hand the GIL on sooner (above)


#: The suite's longest modules, longest first (stop 48's CI runs, `--durations`, and `-n 0` CPU time per
#: module): xdist (pyproject's addopts: ``--dist loadfile --no-loadscope-reorder``) hands modules to the
#: workers in collection order, so these start first and the short ones fill in at the end. xdist's own
#: order (most tests first) left minute-long modules of a few tests (the installs, mypy, the Sphinx
#: build, the simulated OLE fits) to the end, one worker running them while the other idled.
LONGEST_FIRST = (
    "test_ole_cuda_backend.py", "test_ole_cuda_stats.py", "test_ole_cuda_scores.py", "test_doctests.py",
    "test_docs.py", "test_numba_cache.py", "test_install.py", "test_ole_sklearn.py",
    "test_objectives_listwise_cuda.py", "test_ole_cuda_split_kernels.py", "test_benchmark_gpu_suite.py",
    "test_api_docs.py", "test_typing.py", "test_objectives_devices.py", "test_benchmark_sass.py",
    "test_benchmark_trust_study.py", "test_objectives_couplings_route.py", "test_adapters_dask.py",
    "test_adapters_dask_labels.py",
)


#: Workers per CPU for ``-n auto`` (pyproject's addopts). The GPU kernels' tests run on numba's CUDA
#: simulator, a Python thread per simulated thread handing the GIL on at every barrier: a worker there
#: leaves its core about half idle (each worker at 45-50% of a core through the suite's first 12 minutes,
#: 2 workers on 2 cores, 27,000 context switches a second). Two workers a CPU fill that idle time.
WORKERS_PER_CPU = 2
#: Memory a worker may take (the simulated OLE fits' workers peak near 1.2 GiB): ``-n auto`` starts no
#: more workers than the available memory holds.
WORKER_MEMORY = 1.5 * 2**30


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """``-n auto``: :data:`WORKERS_PER_CPU` workers a CPU this process may run on, at most as many as the
    available memory holds (:data:`WORKER_MEMORY` each), at least one; ``PYTEST_XDIST_AUTO_NUM_WORKERS``
    (xdist's own override) wins."""
    pinned = os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS")
    if pinned:
        return int(pinned)
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    try:
        memory = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):  # no sysconf (Windows): the CPUs alone
        memory = None
    workers = WORKERS_PER_CPU * cpus
    if memory is not None:
        workers = min(workers, int(memory // WORKER_MEMORY))
    return max(1, workers)


def pytest_collection_modifyitems(config: pytest.Config, items: list) -> None:
    """Modules in :data:`LONGEST_FIRST`'s order, then the others by test count (xdist's heuristic: the
    larger first) and path; a module's tests stay together and in their order (a stable sort)."""
    from collections import Counter

    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
    count = Counter(str(item.path) for item in items)
    items.sort(key=lambda item: (rank.get(item.path.name, len(rank)), -count[str(item.path)], str(item.path)))


@pytest.fixture
def two_threads() -> int:
    """2, the thread count that thread-count tests compare with 1; skips when numba's pool is smaller."""
    import numba

    if numba.config.NUMBA_NUM_THREADS < 2:
        pytest.skip(f"numba's thread pool has {numba.config.NUMBA_NUM_THREADS} thread (NUMBA_NUM_THREADS): "
                    "one thread cannot be compared with two")
    return 2


def find_data_dir() -> Path | None:
    env = os.environ.get("CUSTOMOBJ_DATA")
    candidates = [Path(env)] if env else []
    candidates.append(REPO.parent / "shared" / "data")
    for c in candidates:
        if (c / "mq2008").is_dir():
            return c
    return None


@pytest.fixture(scope="module")
def small():
    """Synthetic ranking data ``(X, y, sizes)``: 60 queries of 5..25 rows, graded labels 0..2 driven
    by 2 of 6 features. The adapter tests' common data (a module may define its own ``small``)."""
    import numpy as np

    rng = np.random.default_rng(1)
    sizes = rng.integers(5, 26, size=60)
    n = int(sizes.sum())
    X = rng.normal(size=(n, 6))
    y = np.clip(np.round(X[:, 0] + 0.5 * X[:, 1] + rng.normal(scale=0.5, size=n) + 0.5), 0, 2)
    return X, y, sizes


@pytest.fixture(scope="session")
def data_dir() -> Path:
    d = find_data_dir()
    if d is None:
        msg = "LETOR data not found: set CUSTOMOBJ_DATA or put shared/data beside the repository"
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            pytest.fail(msg)
        pytest.skip(msg)
    return d


@pytest.fixture(scope="session")
def mq2008_fold1(data_dir: Path) -> dict:
    """MQ2008 Fold1 as {'train': (X, y, group), 'vali': ..., 'test': ...}, loaded once per session."""
    from customobj.data import load_letor

    fold = data_dir / "mq2008" / "Fold1"
    return {name: load_letor(fold / f"{name}.txt.gz") for name in ("train", "vali", "test")}


def count_prepare_calls(monkeypatch: pytest.MonkeyPatch, obj: object) -> list:
    """A list that grows by one at every call of ``type(obj).prepare`` (the per-dataset preparation an
    adapter must do once, not every round)."""
    calls: list = []
    real = type(obj).prepare
    monkeypatch.setattr(type(obj), "prepare", lambda self, *a, **k: calls.append(1) or real(self, *a, **k))
    return calls


@pytest.fixture
def fail_nth_call(monkeypatch):
    """``fail_nth_call(owner, name, n, error)``: patch ``owner.name`` so that its ``n``-th call raises
    ``error`` (a full disk, an I/O error midway through a multi-file write) and every other call runs it."""

    def patch(owner, name, n, error):
        real, calls = getattr(owner, name), []

        def wrapper(*args):
            calls.append(args)
            if len(calls) == n:
                raise error
            return real(*args)

        monkeypatch.setattr(owner, name, wrapper)

    return patch


#: benchmarks/, whose scripts the test_benchmark_* modules import by name (:func:`import_benchmark`).
BENCH = REPO / "benchmarks"


def import_benchmark(name: str):
    """``benchmarks/<name>.py`` as a module. Its folder goes on ``sys.path`` first, every time: each
    benchmark takes its own folder off ``sys.path`` again when it is imported."""
    import importlib
    import sys

    if str(BENCH) not in sys.path:
        sys.path.insert(0, str(BENCH))
    return importlib.import_module(name)


@pytest.fixture
def in_empty_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Run from an empty folder: compare's default --out (./compare-results) must neither depend on nor
    land in the folder pytest was started from (the README's first command leaves results there).
    Modules whose every test runs the CLI use it with ``pytestmark = pytest.mark.usefixtures(...)``."""
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.fixture(scope="module")
def _dask_cluster_client():
    """A 2-worker Dask LocalCluster and its client, one per test module (tests/test_adapters_dask*.py).
    Separate processes: LightGBM's network is one per process, so threads cannot host two workers."""
    distributed = pytest.importorskip("distributed")
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                       dashboard_address=None, silence_logs=40)
    with distributed.Client(cluster) as c:
        yield c
    cluster.close()


@pytest.fixture
def client(_dask_cluster_client):
    """The module's Dask client, both workers registered at the start of each test: a worker its nanny restarts
    (after a crash, or a missed heartbeat on a loaded machine) is absent for a moment, and a test scattering its
    rows then failed with "the Dask cluster has no workers" (seen once, suite on 2 cores)."""
    _dask_cluster_client.wait_for_workers(2, timeout=120)
    return _dask_cluster_client
