"""The customobj command line: --version, info, and the compare hand-off."""
import json
import shutil
import subprocess
import sys

import pytest

import customobj.adapters  # noqa: F401  (before any lightgbm import, as the CLI does; else a warning joins stderr)
import customobj
from customobj import cli


pytestmark = pytest.mark.usefixtures("in_empty_folder")  # conftest: compare's default --out lands there


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
                 "NUMBA_NUM_THREADS", "cpu_count", "gpu "):
        assert name in out


def test_info_shows_the_kernel_cache_folder(capsys, monkeypatch, tmp_path):
    (tmp_path / "file").write_text("x")
    monkeypatch.setenv("CUSTOMOBJ_CACHE_DIR", str(tmp_path / "file" / "kernels"))
    assert cli.main(["info"]) == 0
    out = capsys.readouterr().out
    assert f"folder            {tmp_path / 'file' / 'kernels'} (NOT writable: kernels compile in memory)" in out


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


def test_no_command_prints_help_and_one_error_line(capsys):
    assert cli.main([]) == 2
    out = capsys.readouterr()
    assert "info" in out.out
    assert out.err == "customobj: error: a command is required: info or compare\n"


def test_unknown_option_is_an_error(capsys):
    assert cli.main(["info", "--no-such-flag"]) == 2
    assert capsys.readouterr().err == "customobj: error: unrecognized arguments: --no-such-flag (see customobj --help)\n"


def test_compare_hands_arguments_to_the_compare_module(monkeypatch):
    from customobj.compare import command

    seen = {}

    def run(args):
        seen["args"] = args
        return 3

    monkeypatch.setattr(command, "run", run)
    assert cli.main(["compare", "--rounds", "7", "--quiet"]) == 3
    assert seen["args"].rounds == 7 and seen["args"].quiet and not seen["args"].overwrite
    with pytest.raises(SystemExit) as exc:
        cli.main(["compare", "--help"])
    assert exc.value.code == 0


@pytest.mark.parametrize("raised, code, line", [
    (cli.UsageError("bad input\nsecond line"), 2, "customobj compare: error: bad input; second line"),
    (cli.RunError("the run failed"), 1, "customobj compare: error: the run failed"),
    (MemoryError("cannot allocate 16 GB"), 1, "customobj compare: error: MemoryError: cannot allocate 16 GB"),
    (KeyError("x"), 1, "customobj compare: error: KeyError: 'x'"),
    (KeyboardInterrupt(), 130, "customobj compare: interrupted"),
])
def test_every_failure_is_one_stderr_line(monkeypatch, capsys, raised, code, line):
    from customobj.compare import command

    def run(args):
        raise raised

    monkeypatch.setattr(command, "run", run)
    monkeypatch.delenv(cli.DEBUG_ENV, raising=False)
    assert cli.main(["compare"]) == code
    assert capsys.readouterr().err == line + "\n"


def test_debug_env_shows_the_traceback(monkeypatch):
    from customobj.compare import command

    def run(args):
        raise KeyError("x")

    monkeypatch.setattr(command, "run", run)
    monkeypatch.setenv(cli.DEBUG_ENV, "1")
    with pytest.raises(KeyError):
        cli.main(["compare"])
