"""customobj._environment: the report behind ``customobj info`` (the command's output is tested in
tests/test_cli.py)."""
import numba

import customobj
from customobj import cli
from customobj._environment import environment_info


def test_environment_info_lives_outside_the_cli():
    from customobj import _environment

    assert "_tiny_parallel_sum" not in vars(cli)  # the numba probe kernel is not defined in cli.py
    assert callable(_environment._tiny_parallel_sum)
    assert cli.environment_info()["numba"]["num_threads"] >= 1


def test_environment_info_reports_versions_threads_and_cpus(monkeypatch):
    monkeypatch.setenv("NUMBA_TEST_PROBE", "7")
    monkeypatch.setenv("OMP_WAIT_POLICY", "passive")
    monkeypatch.setenv("CUSTOMOBJ_NOT_A_THREAD_VARIABLE", "x")
    info = environment_info()
    assert set(info) == {"python", "platform", "packages", "numba", "kernel_cache", "cpu_count", "cpus_usable",
                         "thread_env", "gpu"}
    assert info["packages"]["customobj"] == customobj.__version__
    assert info["packages"]["numba"] == numba.__version__
    for name in ("numpy", "lightgbm", "xgboost", "optuna", "matplotlib", "scipy", "scikit-learn"):
        assert name in info["packages"]
    assert info["numba"]["num_threads"] == numba.config.NUMBA_NUM_THREADS
    assert info["numba"]["threading_layer"] in info["numba"]["available_layers"]
    assert info["thread_env"]["NUMBA_TEST_PROBE"] == "7" and info["thread_env"]["OMP_WAIT_POLICY"] == "passive"
    assert "CUSTOMOBJ_NOT_A_THREAD_VARIABLE" not in info["thread_env"]
    assert list(info["thread_env"]) == sorted(info["thread_env"])
    assert info["cpu_count"] >= 1 and (info["cpus_usable"] is None or 1 <= info["cpus_usable"] <= info["cpu_count"])


def test_a_missing_optional_package_is_left_out_and_a_required_one_named(monkeypatch):
    from customobj import _environment

    real = _environment._version_of
    monkeypatch.setattr(_environment, "_version_of", lambda d: None if d in ("catboost", "xgboost", "lightgbm") else real(d))
    packages = environment_info()["packages"]
    assert "catboost" not in packages and "xgboost" not in packages  # extras: shown when installed
    assert packages["lightgbm"] == "not installed"


def test_a_broken_threading_layer_is_reported_not_raised(monkeypatch):
    from customobj import _environment

    def broken(x):
        raise RuntimeError("no layer")

    monkeypatch.setattr(_environment, "_tiny_parallel_sum", broken)
    assert environment_info()["numba"]["threading_layer"] == "unavailable (RuntimeError: no layer)"


def test_the_gpu_is_reported_or_why_there_is_none():
    from customobj._cuda_runtime import gpu_status
    from customobj._environment import gpu_line

    gpu = environment_info()["gpu"]
    assert gpu == gpu_status()._asdict()
    line = gpu_line(gpu)
    assert line.startswith("none (") == (not gpu["available"])
    assert gpu_line({"available": True, "reason": "", "name": "NVIDIA H200", "memory_gib": 139.8, "driver": "CUDA 12.8",
                     "simulator": False}) == "NVIDIA H200 (139.8 GiB, driver CUDA 12.8)"


def test_the_report_names_the_kernel_cache_folder(monkeypatch, tmp_path):
    monkeypatch.setenv("CUSTOMOBJ_CACHE_DIR", str(tmp_path / "kernels"))
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path / "numba"))
    assert environment_info()["kernel_cache"] == {"folder": str(tmp_path / "kernels"), "writable": True,
                                                  "numba_cache_dir": str(tmp_path / "numba")}
