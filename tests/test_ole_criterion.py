"""customobj.ole.criterion: the one home of the criteria (names, records, kernel codes, ole_fast's
defaults), built once from the name; every test of the criterion table lives here."""
import inspect

import numpy as np
import pytest

from customobj.ole import TreeBooster, criterion
from customobj.ole.criterion import (CRITERIA, OLE, OLE_FAST_EPSILON, OLE_FAST_FEATURES, SE, WSE, Criterion,
                                     SplitScore, criterion_for)
from customobj.ole.params import check_params


def test_the_names_and_their_order():
    assert tuple(CRITERIA) == ("ole", "wse", "se", "ole_fast", "ole_float64")
    assert all(c.name == name and isinstance(c, Criterion) for name, c in CRITERIA.items())


def test_kernel_codes_are_the_split_score_enum():
    assert [SE, WSE, OLE] == [s.value for s in SplitScore] == [0, 1, 2]
    assert all(type(code) is int for code in (SE, WSE, OLE))  # plain ints: numba constants
    with pytest.raises(ValueError):
        SplitScore(3)  # the old user code of ole_fast is no kernel code


@pytest.mark.parametrize("name", sorted(CRITERIA))
def test_each_record_says_what_the_grower_needs(name):
    c = CRITERIA[name]
    is_ole = name.startswith("ole")
    assert c.uses_pairs is is_ole
    assert c.score is (SplitScore.OLE if is_ole else SplitScore[name.upper()])  # every OLE variant: the OLE score
    assert c.fast is (name == "ole_fast")
    assert c.acc_dtype is (np.float64 if is_ole else None)  # pre-rounded couplings: float64 sums are exact


def test_criterion_for_carries_this_fits_ole_fast_options():
    c = criterion_for("ole_fast", ole_fast_features=5, ole_fast_epsilon=0.25)
    assert (c.ole_fast_features, c.ole_fast_epsilon) == (5, 0.25) and c.prunes_pairs
    assert not criterion_for("ole_fast", ole_fast_epsilon=0.0).prunes_pairs
    assert not criterion_for("ole").prunes_pairs  # only ole_fast prunes
    assert criterion_for("ole") == CRITERIA["ole"]  # the defaults otherwise


@pytest.mark.parametrize("bad", ["OLE", "gini", "", None, 2, ["ole"]])
def test_criterion_for_refuses_what_is_not_a_name(bad):
    with pytest.raises(ValueError, match="criterion must be one of"):
        criterion_for(bad)


def test_ole_fast_defaults_have_one_home():
    sig = inspect.signature(TreeBooster)
    assert sig.parameters["ole_fast_features"].default == OLE_FAST_FEATURES == CRITERIA["ole_fast"].ole_fast_features
    assert sig.parameters["ole_fast_epsilon"].default == OLE_FAST_EPSILON == CRITERIA["ole_fast"].ole_fast_epsilon
    from customobj.ole import grower, pair_pruning
    assert not hasattr(grower, "OLE_FAST_FEATURES") and not hasattr(pair_pruning, "OLE_FAST_EPSILON")


def test_every_name_is_accepted_by_treebooster_and_becomes_its_record_in_fit():
    from customobj.ole.training import grow_params
    for name in CRITERIA:
        p = check_params({**TreeBooster(criterion=name, ole_fast_features=3).get_params()})
        assert p["criterion"] == name
        assert grow_params(p).criterion == criterion_for(name, ole_fast_features=3)
    with pytest.raises(ValueError, match="criterion must be one of"):
        check_params({**TreeBooster().get_params(), "criterion": "ole64"})


def test_the_compare_tool_reads_the_same_table():
    from customobj.compare.methods import CRITERIA as COMPARE_CRITERIA
    assert COMPARE_CRITERIA == tuple(criterion.CRITERIA)
