"""customobj.adapters._threads: idle OpenMP workers are told to sleep (OMP_WAIT_POLICY=passive)
unless the user chose otherwise; a late import is warned about. In-process, with the environment,
the module's once-flag and ``sys.modules`` patched and restored by ``monkeypatch``."""
import sys
import warnings

import pytest

from customobj.adapters import _threads


@pytest.fixture
def fresh(monkeypatch):
    """A process where configure_threads has not run, nothing is set and no library is loaded yet."""
    monkeypatch.setattr(_threads, "_done", False)
    for key in (*_threads.THREAD_ENV, "CUSTOMOBJ_KEEP_OMP_ENV"):
        monkeypatch.delenv(key, raising=False)
    for mod in ("lightgbm", "xgboost"):
        monkeypatch.delitem(sys.modules, mod, raising=False)
    return monkeypatch


def test_sets_the_passive_wait_policy_once(fresh):
    import os

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nothing loaded early: no warning
        _threads.configure_threads()
    assert {k: os.environ[k] for k in _threads.THREAD_ENV} == {"OMP_WAIT_POLICY": "passive", "KMP_BLOCKTIME": "0"}
    fresh.setenv("OMP_WAIT_POLICY", "active")
    _threads.configure_threads()  # idempotent: the second call changes nothing
    assert os.environ["OMP_WAIT_POLICY"] == "active"


def test_a_value_the_user_chose_wins(fresh):
    import os

    fresh.setenv("OMP_WAIT_POLICY", "active")
    fresh.setitem(sys.modules, "xgboost", sys)  # loaded early, but the user chose the policy: no warning
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _threads.configure_threads()
    assert os.environ["OMP_WAIT_POLICY"] == "active" and os.environ["KMP_BLOCKTIME"] == "0"


def test_keep_env_leaves_the_environment_untouched(fresh):
    import os

    fresh.setenv("CUSTOMOBJ_KEEP_OMP_ENV", "1")
    _threads.configure_threads()
    assert not any(k in os.environ for k in _threads.THREAD_ENV)


def test_a_library_loaded_first_is_warned_about(fresh):
    fresh.setitem(sys.modules, "lightgbm", sys)  # any module object marks it as imported
    with pytest.warns(RuntimeWarning, match=r"lightgbm was imported before customobj.adapters.*OMP_WAIT_POLICY=passive"):
        _threads.configure_threads()


def test_both_libraries_loaded_first_are_named_in_the_plural(fresh):
    fresh.setitem(sys.modules, "lightgbm", sys)
    fresh.setitem(sys.modules, "xgboost", sys)
    with pytest.warns(RuntimeWarning, match=r"^lightgbm and xgboost were imported before customobj.adapters, "
                                            r"so their OpenMP runtimes already read OMP_WAIT_POLICY"):
        _threads.configure_threads()
