"""The customobj command line: --version, info, and the compare hand-off."""
import json
import shutil
import subprocess
import sys
import types

import pytest

import customobj
from customobj import cli


def test_version_flag(capsys):
    with pytest.raises(SystemExit) as exc:
        cli.main(["--version"])
    assert exc.value.code == 0
    assert capsys.readouterr().out.strip() == f"customobj {customobj.__version__}"


def test_version_console_script():
    exe = shutil.which("customobj")
    cmd = [exe] if exe else [sys.executable, "-m", "customobj.cli"]
    out = subprocess.run([*cmd, "--version"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == f"customobj {customobj.__version__}"


def test_info_text(capsys):
    assert cli.main(["info"]) == 0
    out = capsys.readouterr().out
    for name in ("numpy", "numba", "lightgbm", "xgboost", "scipy", "scikit-learn", "threading_layer",
                 "NUMBA_NUM_THREADS", "cpu_count"):
        assert name in out


def test_info_json(capsys, monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    assert cli.main(["info", "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    import numba
    import numpy

    assert info["packages"]["numpy"] == numpy.__version__
    assert info["packages"]["numba"] == numba.__version__
    assert info["packages"]["customobj"] == customobj.__version__
    assert info["numba"]["num_threads"] == numba.config.NUMBA_NUM_THREADS
    assert info["numba"]["threading_layer"] in ("tbb", "omp", "workqueue")
    assert info["thread_env"]["OMP_NUM_THREADS"] == "1"
    assert info["cpu_count"] >= 1


def test_no_command_prints_help(capsys):
    assert cli.main([]) == 2
    assert "info" in capsys.readouterr().out


def test_unknown_option_is_an_error(capsys):
    with pytest.raises(SystemExit) as exc:
        cli.main(["info", "--no-such-flag"])
    assert exc.value.code == 2
    assert "unrecognized arguments: --no-such-flag" in capsys.readouterr().err


def test_compare_not_built_yet(capsys, monkeypatch):
    # None in sys.modules makes the import fail exactly like a missing module
    monkeypatch.setitem(sys.modules, "customobj.compare.command", None)
    assert cli.main(["compare", "--rounds", "3"]) == 0
    assert "not built yet" in capsys.readouterr().out


def test_compare_hands_arguments_to_the_compare_module(monkeypatch):
    seen = {}
    fake = types.ModuleType("customobj.compare.command")

    def add_arguments(parser):
        parser.add_argument("--rounds", type=int, default=10)
        parser.add_argument("--quiet", action="store_true")

    def run(args):
        seen["args"] = args
        return 3

    fake.add_arguments, fake.run = add_arguments, run
    monkeypatch.setitem(sys.modules, "customobj.compare.command", fake)
    assert cli.main(["compare", "--rounds", "7", "--quiet"]) == 3
    assert seen["args"].rounds == 7 and seen["args"].quiet
    with pytest.raises(SystemExit) as exc:
        cli.main(["compare", "--help"])
    assert exc.value.code == 0


def test_compare_import_error_of_a_dependency_is_not_hidden(monkeypatch):
    import importlib

    def broken(name):
        raise ModuleNotFoundError("No module named 'some_dependency'", name="some_dependency")

    monkeypatch.setattr(importlib, "import_module", broken)
    with pytest.raises(ModuleNotFoundError, match="some_dependency"):
        cli.main(["compare"])
