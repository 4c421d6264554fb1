"""customobj.objectives.prepared: the data of one training set, validated once, with each objective's
label-only state cached and its label checks recorded."""
import numpy as np
import pytest

from customobj import Groups, LambdaRank, RankNet, SquaredError
from customobj.objectives import Prepared


def test_build_validates_once_and_defaults_to_one_query():
    prep = Prepared.build([2, 0, 1], None, [1.0, 2.0, 3.0])
    assert prep.labels.dtype == np.float64 and prep.n_rows == 3
    assert prep.ptr.tolist() == [0, 3]  # no group: the rows form one query
    assert prep.weight.tolist() == [1.0, 2.0, 3.0]
    assert Prepared.build([1.0, 0.0], [1, 1]).groups == Groups.from_sizes([1, 1])
    with pytest.raises(ValueError, match="weight"):
        Prepared.build([1.0, 0.0], None, [1.0, -1.0])
    with pytest.raises(ValueError, match="integer"):
        Prepared.build([0.5, 1.0], None, integer_labels=True)


def test_state_is_built_once_per_equal_objective():
    prep = RankNet().prepare([2.0, 0.0, 1.0, 1.0], [4])
    first = prep.state_for(RankNet())
    assert prep.state_for(RankNet(sigma=1.0)) is first  # equal options: the cached state
    assert prep.state_for(RankNet(sigma=2.0)) is not first  # options differ: built anew
    assert prep.state_for(LambdaRank(k=2)).qnorm.shape == (1,)
    assert prep.checked == ("RankNet(sigma=1.0)", "RankNet(sigma=2.0)",
                            "LambdaRank(convention='customobj', gain=None, k=2, metric='ndcg', norm=False, "
                            "sigma=1.0, truncation=None)")


def test_prepared_records_the_objectives_that_checked_it():
    from customobj.objectives import Logistic, RankNet

    prep = SquaredError().prepare([0.0, 1.0, 2.0], [3])
    assert prep.checked == ("SquaredError()",)
    RankNet().grad_hess_prepared(np.zeros(3), prep)
    RankNet().loss_prepared(np.zeros(3), prep)  # an equal objective: checked once
    assert prep.checked == ("SquaredError()", "RankNet(sigma=1.0)")
    with pytest.raises(ValueError, match=r"Logistic needs binary labels"):
        (SquaredError() + Logistic()).grad_hess_prepared(np.zeros(3), prep)  # a part's checks run inside a Sum
    with pytest.raises(ValueError, match=r"Logistic needs binary labels"):
        (2.0 * Logistic()).grad_hess_prepared(np.zeros(3), prep)  # and inside a Scaled
    assert "Logistic" not in " ".join(prep.checked)
