"""Shared fixtures. The LETOR data lives in ../shared/data (or $CUSTOMOBJ_DATA); never copied here.

Under CI=true a missing data directory is an error, not a skip.
"""
from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


def find_data_dir() -> Path | None:
    env = os.environ.get("CUSTOMOBJ_DATA")
    candidates = [Path(env)] if env else []
    candidates.append(REPO.parent / "shared" / "data")
    for c in candidates:
        if (c / "mq2008").is_dir():
            return c
    return None


@pytest.fixture(scope="session")
def data_dir() -> Path:
    d = find_data_dir()
    if d is None:
        msg = "LETOR data not found: set CUSTOMOBJ_DATA or put shared/data beside the repository"
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            pytest.fail(msg)
        pytest.skip(msg)
    return d


@pytest.fixture(scope="session")
def mq2008_fold1(data_dir: Path) -> dict:
    """MQ2008 Fold1 as {'train': (X, y, group), 'vali': ..., 'test': ...}, loaded once per session."""
    from customobj.data import load_letor

    fold = data_dir / "mq2008" / "Fold1"
    return {name: load_letor(fold / f"{name}.txt.gz") for name in ("train", "vali", "test")}
