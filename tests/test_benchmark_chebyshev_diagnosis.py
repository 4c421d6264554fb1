"""benchmarks/chebyshev_diagnosis.py: its loop with customobj's loss and cost is ``MultiObjective``'s Chebyshev
(the same picks, costs and model), the per-round facts on a hand-made run, every picking cost reachable, and
the script end to end on a small fold (the fork's side without the fork: CI has no build of it)."""
import numpy as np
import pytest

from conftest import import_benchmark
from test_benchmark_mo_lightgbm import small_fold


@pytest.fixture(scope="module")
def diag():
    return import_benchmark("chebyshev_diagnosis")


@pytest.fixture(scope="module")
def split(diag, data_dir):
    return diag.MO.STUDY.load_split(str(data_dir / "mq2008" / "Fold1" / "vali.txt.gz"), 41)


@pytest.mark.parametrize("gradient", ["customobj", "lightgbm"])
def test_the_loop_is_multiobjectives_chebyshev(diag, split, gradient):
    """The loop with the per-label loss's own cost is ``MultiObjective(method="chebyshev")`` through
    ``lightgbm.train``: the same label each round, the same costs (to the cost table's error), the same model."""
    from customobj import adapters
    from customobj.multi import MultiObjective

    X, y, y2, group = split
    w = 0.8
    booster, picks, costs = diag.chebyshev_loop(split, w, 6, gradient, gradient)
    loss = diag.GRADIENTS[gradient]
    obj = MultiObjective([loss(), loss()], labels=[None, y2], method="chebyshev", preference=[1 - w, w])
    f = adapters.lightgbm_objective(obj)
    ds = diag.lgb.Dataset(X, y, group=group)
    ours = diag.lgb.train(dict(diag.MO.STUDY.LGB, objective=f), ds, 6)
    fitted = f.fitted_attributes(ds)
    np.testing.assert_array_equal(fitted["label_weights_"][:, 1], picks)
    # MultiObjective's costs come from the gradients' pass, each pair's softplus from a table (within
    # SOFTPLUS_TABLE_ERROR per unit of |dZ|, docs/multi-objective.md); the loop's from ``loss``, exact
    np.testing.assert_allclose(fitted["label_costs_"], costs, rtol=1e-4)
    np.testing.assert_array_equal(ours.predict(X), booster.predict(X))


def test_the_loop_picks_by_the_chosen_cost(diag, split):
    """A picking cost that favours label 1 (w near 0) or label 2 (w near 1) gives every round to it, and the
    fork's cost (``fork_costs``) is what the ``fork`` variant reads."""
    for cost in diag.COSTS:
        assert diag.chebyshev_loop(split, 0.001, 2, "customobj", cost)[1].tolist() == [0, 0]
        assert diag.chebyshev_loop(split, 0.999, 2, "customobj", cost)[1].tolist() == [1, 1]
    _, _, costs = diag.chebyshev_loop(split, 0.5, 2, "customobj", "fork")
    assert costs[0].tolist() == [diag.MO.fork_costs(np.zeros(len(split[1])), lab, split[3]) for lab in split[1:3]]


def test_trajectory_on_a_hand_made_run(diag):
    """Four rounds: label 2, label 1, label 2, label 2. Steps from the scores; cost factors after each label's
    rounds (only those with a round after them)."""
    scores = np.array([[0.0, 0.0], [1.0, 1.0], [1.0, 4.0], [2.0, 4.0], [2.0, 4.0]])  # RMS steps 1, 3/sqrt2, 1/sqrt2, 0
    picks = np.array([1, 0, 1, 1])
    costs = np.array([[4.0, 2.0], [4.0, 1.0], [2.0, 2.0], [3.0, 1.0]])
    t = diag.trajectory(scores, picks, costs)
    assert t["label2_rounds"] == 3 and t["first_label1_round"] == 2
    assert t["step_label1"] == pytest.approx(3 / np.sqrt(2))
    assert t["step_label2"] == pytest.approx((1 + 1 / np.sqrt(2) + 0) / 3)
    assert t["after_label1"] == pytest.approx([0.5, 2.0])  # round 2 -> 3
    assert t["after_label2"] == pytest.approx([(1.0 + 1.5) / 2, (0.5 + 0.5) / 2])  # rounds 1 -> 2 and 3 -> 4
    never = diag.trajectory(scores, np.ones(4, dtype=int), costs)
    assert never["first_label1_round"] is None and never["step_label1"] is None and never["after_label1"] is None


def test_the_script_runs_on_a_small_fold(diag, data_dir, tmp_path, capsys):
    small_fold(data_dir, tmp_path / "data")
    out = tmp_path / "diag.json"
    diag.main(["--data", str(tmp_path / "data"), "--folds", "1", "--rounds", "3", "--out", str(out)])
    import json
    got = json.loads(out.read_text())
    names = {f"{g}/{c}" for g, c in diag.VARIANTS}
    assert set(got["folds"][0]) == names == set(got["summary"])
    for r in got["folds"][0].values():
        assert 0 < r["ndcg1"] <= 1 and r["label2_rounds"] in range(4)
    assert "customobj/customobj" in capsys.readouterr().out


@pytest.mark.parametrize("argv", [["--w", "1"], ["--rounds", "1"], ["--molgbm", "/nonexistent/lightgbm"]])
def test_bad_arguments_are_refused(diag, argv, capsys):
    with pytest.raises(SystemExit):
        diag.main(argv)
    assert "--" in capsys.readouterr().err
