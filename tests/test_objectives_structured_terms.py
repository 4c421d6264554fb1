"""The shared steps of the structured-output DCG loss (customobj/objectives/_structured_terms.py):
the compiled functions (the CPU's, and what the GPU compiles) and their Python source (the GPU
kernel under the CUDA simulator) pick the same candidates and the same assignment."""
import numpy as np

from customobj.objectives import _structured_terms as ST


def _work(c, m, bool_used):
    return (np.empty(m + 1), np.empty(c + 1), np.empty(c + 1), np.empty(c + 1, np.int64),
            np.empty(c + 1, np.int64), np.empty(c + 1, np.bool_ if bool_used else np.int64), np.empty(m, np.int64))


def test_compiled_and_python_assignments_agree():
    rng = np.random.default_rng(3)
    for k in (1, 3, 6):
        s = np.round(rng.normal(size=9), 1)  # ties
        g = rng.integers(0, 3, 9).astype(float)
        star = np.lexsort((np.arange(9), -s, -g))  # gain, then score, descending
        m = min(k, 9)
        A, D = np.empty(m), np.empty(m)
        ST.position_weights(k, m, A, D)
        cand = np.empty(9, np.int64)
        c = ST.select_candidates(star, g, m, cand)
        assert c == ST.select_candidates.py_func(star, g, m, np.empty(9, np.int64))
        got, want = _work(c, m, True), _work(c, m, False)  # the CPU's bool flags, the GPU's int flags
        assert ST.assign_core(s, g, cand[:c], A, D, *got) and ST.assign_core.py_func(s, g, cand[:c], A, D, *want)
        assert np.array_equal(got[-1], want[-1])
        assert ST.assignment_loss(s, g, cand[:c], got[-1], star, A, D) == \
            ST.assignment_loss.py_func(s, g, cand[:c], want[-1], star, A, D)


def test_a_non_finite_cost_stops_the_search():
    A, D = np.array([2.0, 1.0]), np.array([1.0, 0.5])
    assert not ST.assign_core(np.zeros(3), np.full(3, np.inf), np.arange(3), A, D, *_work(3, 2, True))
