"""The package entry points: customobj/__init__.py, customobj/objectives/__init__.py,
customobj/compare/__init__.py, customobj/clicks/__init__.py, customobj/multi/__init__.py,
customobj/ole/__init__.py, customobj/ole/cuda/__init__.py and adapters/__init__.py (installed as
customobj.adapters). Every name in ``__all__`` resolves to the object of its home module;
``import customobj`` and ``import customobj.ole`` stay light (TreeBooster, and scikit-learn with it,
load on first use); ``import customobj.adapters`` sets the
OpenMP wait policy before LightGBM / XGBoost load."""
import json
import os
import subprocess
import sys

import pytest

import customobj
import customobj.adapters
import customobj.clicks
import customobj.compare
import customobj.multi
import customobj.objectives
from customobj.compare import methods
from customobj.objectives import Objective, Prepared


@pytest.mark.parametrize("package", [customobj, customobj.objectives, customobj.compare, customobj.adapters,
                                     customobj.clicks, customobj.multi],
                         ids=lambda p: p.__name__)
def test_every_public_name_resolves_once(package):
    assert len(package.__all__) == len(set(package.__all__))
    for name in package.__all__:
        assert getattr(package, name) is not None, name


def test_objectives_are_objective_classes_reexported_by_customobj():
    for name in customobj.objectives.__all__:
        cls = getattr(customobj.objectives, name)
        assert isinstance(cls, type) and (cls is Prepared or issubclass(cls, Objective)), name
        assert getattr(customobj, name) is cls and name in customobj.__all__


def test_compare_reexports_the_method_parser():
    for name in customobj.compare.__all__:
        assert getattr(customobj.compare, name) is getattr(methods, name)


def test_clicks_package_holds_the_click_names_once():
    from customobj.clicks import regression_em, simulation, unbiased

    assert customobj.clicks.Unbiased is unbiased.Unbiased is customobj.Unbiased
    assert customobj.clicks.RegressionEM is regression_em.RegressionEM is customobj.RegressionEM
    assert customobj.clicks.simulate_clicks is simulation.simulate_clicks is customobj.data.simulate_clicks
    # the click models are named in one place: compare's --clicks parser reads the same table
    from customobj.compare import clicks as compare_clicks

    assert compare_clicks.CLICK_MODELS is customobj.clicks.CLICK_MODELS == {"pbm": 0, "cascade": 1, "trust": 2, "dcm": 3,
                                                                           "ubm": 4}


def test_multi_objective_is_one_class_in_both_places():
    from customobj.multi import objective

    assert customobj.MultiObjective is customobj.multi.MultiObjective is objective.MultiObjective
    assert "MultiObjective" in customobj.__all__


def test_tree_booster_is_listed_and_loaded_on_first_use():
    assert "TreeBooster" in dir(customobj) and "TreeBooster" in customobj.__all__
    from customobj.ole import TreeBooster

    assert customobj.TreeBooster is TreeBooster
    with pytest.raises(AttributeError, match=r"module 'customobj' has no attribute 'NoSuchThing'"):
        customobj.NoSuchThing  # noqa: B018


def test_a_fresh_import_is_light_and_adapters_set_the_wait_policy():
    code = ("import json, os, sys\n"
            "import customobj\n"
            "light = {m: m in sys.modules for m in ('sklearn', 'customobj.ole', 'lightgbm', 'xgboost')}\n"
            "customobj.TreeBooster\n"
            "import customobj.adapters\n"
            "print(json.dumps({'light': light, 'ole': 'customobj.ole' in sys.modules,\n"
            "                  'policy': os.environ.get('OMP_WAIT_POLICY')}))\n")
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_WAIT_POLICY", "CUSTOMOBJ_KEEP_OMP_ENV")}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got == {"light": {"sklearn": False, "customobj.ole": False, "lightgbm": False, "xgboost": False},
                   "ole": True, "policy": "passive"}


def test_ole_package_loads_tree_booster_on_first_use():
    code = ("import json, sys\n"
            "import customobj.ole as ole\n"
            "light = {m: m in sys.modules for m in ('sklearn', 'customobj.ole.booster')}\n"
            "try:\n"
            "    ole.NoSuchThing\n"
            "    missing = None\n"
            "except AttributeError as exc:\n"
            "    missing = str(exc)\n"
            "from customobj.ole.booster import TreeBooster\n"
            "print(json.dumps({'light': light, 'all': ole.__all__, 'same': ole.TreeBooster is TreeBooster,\n"
            "                  'missing': missing}))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got == {"light": {"sklearn": False, "customobj.ole.booster": False}, "all": ["TreeBooster"], "same": True,
                   "missing": "module 'customobj.ole' has no attribute 'NoSuchThing'"}
