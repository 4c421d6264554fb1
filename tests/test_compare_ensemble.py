"""``ens:A+B`` method names and ensembles (customobj/compare/ensemble.py)."""
import numpy as np
import pytest

import customobj.adapters  # noqa: F401  (before any lightgbm import, as the CLI does)
from customobj.cli import main as cli_main
from customobj.combine import best_linear_combination
from customobj.compare.ensemble import EnsembleSpec, combine, member_specs, parse_ensemble
from customobj.compare.methods import parse_method, parse_methods, valid_names_help
from customobj.compare.runner import run_all
from customobj.compare.trainers import Settings, Split, train
from customobj.data import synthetic
from customobj.metrics import ndcg


pytestmark = pytest.mark.usefixtures("in_empty_folder")  # conftest: compare's default --out lands there


def test_parse_labels_and_members():
    spec = parse_method(" ens : lgb:LambdaRank( sigma = 2 ) + ole:LambdaRank ")
    assert isinstance(spec, EnsembleSpec)
    assert spec.label == "ens:lgb:LambdaRank(sigma=2)+ole:LambdaRank[ole]"
    assert [m.label for m in spec.members] == ["lgb:LambdaRank(sigma=2)", "ole:LambdaRank[ole]"]
    # '+' inside a member's parentheses belongs to the member
    assert parse_ensemble("ens:xgb:MPBoost(lam=1e+3)+lgb:lambdarank").members[0].kwargs == {"lam": 1000.0}
    assert "ens:A+B" in valid_names_help()


def test_nesting_is_refused():
    with pytest.raises(ValueError, match="ensembles do not nest"):
        parse_ensemble("ens:ens:lgb:lambdarank+lgb:RankNet")  # split yields 'ens:lgb:lambdarank', 'lgb:RankNet'


def test_member_specs_trains_each_single_method_once():
    specs = parse_methods("lgb:RankNet,ens:lgb:lambdarank+lgb:RankNet,ens:lgb:RankNet+xgb:rank:ndcg")
    assert [s.label for s in member_specs(specs)] == ["lgb:RankNet", "lgb:lambdarank", "xgb:rank:ndcg"]


def test_combine_is_the_best_alpha_on_validation_applied_to_test():
    valid = Split(np.zeros((6, 1)), np.array([0., 1., 2., 0., 0., 1.]), np.array([3, 3]))
    rng = np.random.default_rng(0)
    a_valid, b_valid, a_test, b_test = (rng.normal(size=6) for _ in range(4))
    from customobj.compare.trainers import TrainResult

    a = TrainResult(a_test, a_valid, np.zeros(0), 3, 5, 1.0)
    b = TrainResult(b_test, b_valid, np.zeros(0), 4, 6, 2.0)
    res, alpha = combine(a, b, valid)
    expected_alpha, _ = best_linear_combination(a_valid, b_valid, valid.y, valid.sizes, k=10)
    assert alpha == expected_alpha
    np.testing.assert_array_equal(res.test_scores, alpha * a_test + (1 - alpha) * b_test)
    assert (res.best_round, res.rounds_trained) == (7, 11) and res.train_time >= 3.0


def _split(seed):
    return Split.from_data(synthetic(30, 10, 6, seed=seed))


def test_ensemble_run_equals_best_linear_combination_of_its_members():
    tr, va, te = _split(1), _split(2), _split(3)
    st = Settings(rounds=5, num_leaves=7, early_stopping=2, jobs=1)
    specs = parse_methods("lgb:lambdarank,ens:lgb:lambdarank+xgb:RankNet")
    out = run_all(specs, [(1, tr, va, te)], st, seeds=[0], n_trials=0, train_fn=train, bar=_Bar())

    a = train(specs[1].members[0], st, tr, va, te)
    b = train(specs[1].members[1], st, tr, va, te)
    alpha, _ = best_linear_combination(a.valid_scores, b.valid_scores, va.y, va.sizes, k=10)
    (ens_row,) = [r for r in out.rows if r["method"] == specs[1].label]
    expected = ndcg(alpha * a.test_scores + (1 - alpha) * b.test_scores, te.y, te.sizes, k=10)
    assert ens_row["ndcg@10"] == pytest.approx(expected, abs=1e-12)
    assert out.alphas[specs[1].label] == [{"fold": 1, "seed": 0, "alpha": alpha}]
    # the validation NDCG of the ensemble is at least each member's (alpha = 0 and 1 are candidates)
    assert ens_row["valid_ndcg@10"] >= max(ndcg(a.valid_scores, va.y, va.sizes, k=10),
                                           ndcg(b.valid_scores, va.y, va.sizes, k=10)) - 1e-12


class _Bar:
    def update(self, n=1):
        pass

    def set_description(self, text):
        pass


def test_cli_rejects_a_bad_ensemble_in_one_line(tmp_path, capsys):
    code = cli_main(["compare", "--methods", "lgb:lambdarank,ens:lgb:lambdarank", "--out", str(tmp_path), "--quiet"])
    assert code == 2
    err = capsys.readouterr().err
    assert err.startswith("customobj compare: error: invalid method 'ens:lgb:lambdarank': an ensemble combines "
                          "exactly two methods") and len(err.splitlines()) == 1


def test_cli_help_lists_ensembles(capsys):
    with pytest.raises(SystemExit):
        cli_main(["compare", "--help"])
    assert "ensembles: ens:A+B" in capsys.readouterr().out


def test_docstring_examples():
    import doctest

    from customobj.compare import ensemble, stats

    for mod in (ensemble, stats):
        result = doctest.testmod(mod)
        assert result.attempted > 0 and result.failed == 0, mod.__name__
