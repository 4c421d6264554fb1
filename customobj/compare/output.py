"""The output folder of ``customobj compare``: checked before training, written atomically after.

Rules (docs/cli.md): ``--out`` must be a folder or a path where one can be made; a folder that
already holds compare results is refused unless ``--overwrite`` is given; every file is written
through :mod:`customobj._io` (temporary file, fsync, rename), after all of them were serialised in
memory, so a run that fails or is interrupted before the write phase leaves earlier results intact
and a file is never left half-written.
"""
from __future__ import annotations

import contextlib
import os
from pathlib import Path

from .._io import atomic_write_bytes
from .._cli_errors import RunError, UsageError

__all__ = ["RESULT_FILES", "check_folder", "write_results"]

#: Every file compare writes, in the order written (results.json last: it describes the others).
RESULT_FILES = ("results.csv", "summary.csv", "paired.csv", "curves.png", "results.json")


def _nearest_existing(path: Path) -> Path:
    p = path.absolute()
    while not p.exists() and p != p.parent:
        p = p.parent
    return p


def check_folder(out: Path, *, overwrite: bool) -> Path:
    """Refuse an ``--out`` that cannot take the results, before anything is trained."""
    if out.exists() and not out.is_dir():
        raise UsageError(f"--out {out}: exists and is not a folder")
    base = _nearest_existing(out)
    if not base.is_dir():
        raise UsageError(f"--out {out}: {base} is a file, not a folder")
    if not os.access(base, os.W_OK | os.X_OK):
        raise UsageError(f"--out {out}: no permission to write in {base}")
    if out.is_dir():
        found = [name for name in RESULT_FILES if (out / name).exists()]
        folders = [name for name in found if (out / name).is_dir()]
        if folders:
            raise UsageError(f"--out {out}: {', '.join(folders)} is a folder; compare writes a file of that name")
        if found and not overwrite:
            raise UsageError(f"--out {out} already holds compare results ({', '.join(found)}); "
                             "pass --overwrite to replace them, or choose another --out")
    return out


def write_results(out: Path, contents: dict[str, bytes], *, overwrite: bool) -> list[str]:
    """Write ``{name: bytes}`` into ``out`` atomically; with ``overwrite``, remove result files of an
    earlier run that this run does not write (a curves.png left from a run with a plot), last."""
    try:
        out.mkdir(parents=True, exist_ok=True)
        written = []
        for name in RESULT_FILES:
            if name in contents:
                atomic_write_bytes(out / name, contents[name])
                written.append(name)
        if overwrite:
            for name in RESULT_FILES:
                if name not in contents:
                    with contextlib.suppress(FileNotFoundError):
                        (out / name).unlink()
    except OSError as exc:
        raise RunError(f"could not write the results to {out}: {exc}") from None
    return written
