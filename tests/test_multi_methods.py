"""customobj/multi/methods.py: method names become records once; every option is checked against the
method (a bad or unread option is a ValueError/TypeError naming it)."""
import numpy as np
import pytest

from customobj.multi.methods import METHODS, Method, check_settings, method_spec

NONE = dict(preference=None, bounds=None, reference_point=None, smoothing=None, mgda_u=None, penalty=None,
            secondary_cap=None, random_state=None)


def settings(name, m=2, **kw):
    return check_settings(method_spec(name), m, **{**NONE, **kw})


def test_every_method_has_one_record_and_one_name():
    assert sorted(s.method for s in METHODS.values()) == list(Method)
    assert {s.name for s in METHODS.values()} == {"linear", "stochastic", "chebyshev", "epo", "wc_mgda",
                                                  "epsilon_constraint", "ec_mgda"}
    assert method_spec("epo").needs_gram and not method_spec("linear").needs_costs
    with pytest.raises(ValueError, match=r"method must be one of .*got 'EPO'"):
        method_spec("EPO")
    with pytest.raises(TypeError, match=r"method must be one of"):
        method_spec(3)


def test_preference_is_checked_and_normalised():
    assert settings("linear", 3, preference=[2, 1, 1]).preference.tolist() == [0.5, 0.25, 0.25]
    assert settings("linear", 4).preference.tolist() == [0.25] * 4
    with pytest.raises(ValueError, match=r"preference must be non-negative, got -1.0 at index 1"):
        settings("linear", preference=[1, -1])
    with pytest.raises(ValueError, match=r"preference must not be all zero"):
        settings("chebyshev", preference=[0, 0])
    with pytest.raises(ValueError, match=r"preference must have 2 entries, got 3"):
        settings("epo", preference=[1, 1, 1])
    with pytest.raises(ValueError, match=r"preference must be positive for method='epo'"):
        settings("epo", preference=[1, 0])
    with pytest.raises(ValueError, match=r"preference .*finite|preference.*nan|preference"):
        settings("linear", preference=[1, np.nan])


def test_bounds_are_required_by_the_constrained_methods_only():
    assert settings("epsilon_constraint", 3, bounds=[0.5, 2]).bounds.tolist() == [0.5, 2.0]
    with pytest.raises(ValueError, match=r"method='ec_mgda' needs bounds=\[...\]"):
        settings("ec_mgda")
    with pytest.raises(ValueError, match=r"bounds must have 2 entries, got 1"):
        settings("epsilon_constraint", 3, bounds=[0.5])
    with pytest.raises(ValueError, match=r"bounds must be positive cost values, got 0.0 at index 0"):
        settings("epsilon_constraint", bounds=[0.0])
    with pytest.raises(ValueError, match=r"bounds is not read by method='linear' \(only by \['ec_mgda', "
                                         r"'epsilon_constraint'\]\)"):
        settings("linear", bounds=[1.0])


@pytest.mark.parametrize("option, value, method", [("preference", [1, 1], "epsilon_constraint"),
                                                   ("smoothing", 0.5, "linear"), ("mgda_u", 0.2, "epo"),
                                                   ("penalty", 2.0, "chebyshev"), ("secondary_cap", 0.3, "wc_mgda"),
                                                   ("random_state", 1, "epo"), ("reference_point", [0, 0], "epo")])
def test_an_option_the_method_does_not_read_is_refused(option, value, method):
    kw = {"bounds": [1.0]} if method == "epsilon_constraint" else {}
    with pytest.raises(ValueError, match=rf"{option} is not read by method='{method}'"):
        settings(method, **kw, **{option: value})


def test_ranges_of_the_scalar_options():
    with pytest.raises(ValueError, match=r"smoothing must be in \[0, 1\)"):
        settings("epo", smoothing=1.0)
    with pytest.raises(ValueError, match=r"mgda_u must be"):
        settings("wc_mgda", mgda_u=0.0)
    with pytest.raises(ValueError, match=r"penalty must be"):
        settings("epsilon_constraint", bounds=[1.0], penalty=-1)
    with pytest.raises(ValueError, match=r"dual_interval"):
        settings("epsilon_constraint", bounds=[1.0], dual_interval=0)
    with pytest.raises(TypeError, match=r"dual_interval"):
        settings("epsilon_constraint", bounds=[1.0], dual_interval=2.5)
    with pytest.raises(ValueError, match=r"dual_interval is not read"):
        settings("linear", dual_interval=5)
    with pytest.raises(ValueError, match=r"secondary_cap entries must be in \(0, 1\] with a mean below 1"):
        settings("ec_mgda", bounds=[1.0], secondary_cap=1.0)
    with pytest.raises(TypeError, match=r"random_state"):
        settings("stochastic", random_state=1.5)
    assert settings("ec_mgda", 3, bounds=[1, 1], secondary_cap=0.25).cap.tolist() == [0.25, 0.25]
    with pytest.raises(ValueError, match=r"reference_point must have 2 entries"):
        settings("chebyshev", reference_point=[0.0])
