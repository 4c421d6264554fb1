"""Run hostile inputs in a fresh Python process, so a segfault or a hang fails one test instead of
killing (or stalling) the whole suite. Imported by the robust tests: ``from _isolated import run_isolated``."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


def run_isolated(code: str, *, timeout: float = 120.0) -> str:
    """Run ``code`` with this interpreter (cwd = repository root); return its stdout.

    Fails the calling test, naming the cause, when the child is killed by a signal (a segfault in a
    kernel is ``-11``), exits non-zero (an uncaught exception) or runs past ``timeout`` seconds.
    """
    env = dict(os.environ, PYTHONFAULTHANDLER="1")
    try:
        proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=REPO, env=env,
                              capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        pytest.fail(f"child process still running after {timeout:g} s (a hang)")
    if proc.returncode != 0:
        how = f"killed by signal {-proc.returncode}" if proc.returncode < 0 else f"exit status {proc.returncode}"
        pytest.fail(f"child process {how}; stderr tail:\n{proc.stderr[-3000:]}")
    return proc.stdout
