"""The output folder of ``customobj compare``: checked before training, written atomically after.

Rules (docs/cli.md): ``--out`` must be a folder or a path where one can be made; a folder that
already holds compare results is refused unless ``--overwrite`` is given, except the default
``./compare-results`` (no ``--out``), whose results every run replaces. The results are one
change (:func:`customobj._io.replace_files`): serialised in memory, written whole into a staging
folder, and moved in only when every file is on disk, so a run that fails or is interrupted before
or while writing (a full disk, a file-size limit) leaves the earlier results intact, never a folder
mixing two runs.
"""
from __future__ import annotations

import os
from pathlib import Path

from .._io import replace_files
from .._cli_errors import RunError, UsageError

__all__ = ["RESULT_FILES", "DEFAULT_OUT", "check_folder", "write_results"]

#: ``--out`` when none is given. Unlike a folder the user names, its earlier results are replaced
#: (as one change): the README's ``customobj compare`` can be run again as written.
DEFAULT_OUT = "compare-results"

#: Every file compare writes, in the order written (results.json last: it describes the others).
RESULT_FILES = ("results.csv", "summary.csv", "paired.csv", "curves.png", "position_bias.csv", "position_bias.png",
                "results.json")


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
    """Write ``{name: bytes}`` into ``out`` as one change, all of it or nothing; with ``overwrite``,
    the same change removes result files of an earlier run that this run does not write (a
    curves.png left from a run with a plot)."""
    written = [name for name in RESULT_FILES if name in contents]
    stale = [name for name in RESULT_FILES if name not in contents] if overwrite else []
    try:
        replace_files(out, {name: contents[name] for name in written}, remove=stale)
    except OSError as exc:
        raise RunError(f"could not write the results to {out}: {exc}") from None
    return written
