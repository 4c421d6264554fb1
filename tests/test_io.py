"""customobj._io: atomic writes replace a file whole or leave it as it was."""
from __future__ import annotations

import doctest
import os
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from customobj import _io
from customobj._io import atomic_open, atomic_write_bytes, atomic_write_text


def _temps(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".tmp"))


def test_text_and_bytes_round_trip(tmp_path: Path) -> None:
    target = tmp_path / "a.txt"
    atomic_write_text(target, "héllo\n")
    assert target.read_text(encoding="utf-8") == "héllo\n"
    atomic_write_text(str(target), "second")
    assert target.read_text() == "second"
    atomic_write_bytes(target, b"\x00\xff")
    assert target.read_bytes() == b"\x00\xff"
    assert _temps(tmp_path) == []


def test_error_inside_the_block_keeps_the_old_file(tmp_path: Path) -> None:
    target = tmp_path / "model.json"
    target.write_text("old")
    with pytest.raises(RuntimeError, match="boom"):
        with atomic_open(target) as fh:
            fh.write("half a new file")
            raise RuntimeError("boom")
    assert target.read_text() == "old"
    assert _temps(tmp_path) == []


def test_wrong_content_type_keeps_the_old_file(tmp_path: Path) -> None:
    target = tmp_path / "b.bin"
    target.write_bytes(b"old")
    with pytest.raises(TypeError):
        atomic_write_bytes(target, "not bytes")  # type: ignore[arg-type]
    assert target.read_bytes() == b"old"
    assert _temps(tmp_path) == []


def test_killed_writer_leaves_the_old_file(tmp_path: Path) -> None:
    # The process dies between writing and renaming: the target must still hold the old text.
    target = tmp_path / "c.txt"
    target.write_text("old")
    script = textwrap.dedent(f"""
        import os
        from customobj._io import atomic_open
        with atomic_open({str(target)!r}) as fh:
            fh.write("new" * 1000)
            fh.flush()
            os._exit(3)
    """)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, timeout=120)
    assert proc.returncode == 3, proc.stderr
    assert target.read_text() == "old"


def test_permissions_kept_or_default(tmp_path: Path) -> None:
    kept = tmp_path / "kept.txt"
    kept.write_text("x")
    os.chmod(kept, 0o640)
    atomic_write_text(kept, "y")
    assert stat.S_IMODE(kept.stat().st_mode) == 0o640
    umask = os.umask(0o022)
    try:
        fresh = tmp_path / "fresh.txt"
        atomic_write_text(fresh, "z")
    finally:
        os.umask(umask)
    assert stat.S_IMODE(fresh.stat().st_mode) == 0o644  # not mkstemp's 0600


@pytest.mark.parametrize("mode", ["a", "r", "w+", "x", ""])
def test_bad_mode(tmp_path: Path, mode: str) -> None:
    with pytest.raises(ValueError, match="mode"):
        with atomic_open(tmp_path / "d.txt", mode):
            pass
    assert list(tmp_path.iterdir()) == []


def test_missing_folder_and_folder_target(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="does not exist"):
        atomic_write_text(tmp_path / "no" / "such" / "e.txt", "x")
    with pytest.raises(IsADirectoryError, match="folder"):
        atomic_write_text(tmp_path, "x")
    assert list(tmp_path.iterdir()) == []


def test_docstring_example_runs() -> None:
    failures, tried = doctest.testmod(_io, raise_on_error=False, verbose=False)
    assert tried > 0 and failures == 0


# --- replace_files: a multi-file result, all of it or nothing -------------------------------------
def test_replace_files_writes_replaces_and_removes(tmp_path: Path) -> None:
    out = tmp_path / "run"
    _io.replace_files(out, {"a": b"1", "b": b"2"})
    assert sorted(p.name for p in out.iterdir()) == ["a", "b"]
    (out / "keep.txt").write_text("user's")
    _io.replace_files(out, {"a": b"3"}, remove=["b", "missing"])
    assert {p.name: p.read_bytes() for p in out.iterdir()} == {"a": b"3", "keep.txt": b"user's"}


def test_replace_files_puts_every_file_back_when_a_move_fails(tmp_path: Path, monkeypatch, fail_nth_call) -> None:
    out = tmp_path / "run"
    _io.replace_files(out, {"a": b"old a", "b": b"old b", "c": b"old c"})
    fail_nth_call(_io.os, "replace", 2, OSError(5, "Input/output error"))
    with pytest.raises(OSError, match="Input/output error"):
        _io.replace_files(out, {"a": b"new", "b": b"new", "new": b"new"}, remove=["c"])
    monkeypatch.undo()
    assert {p.name: p.read_bytes() for p in out.iterdir()} == {"a": b"old a", "b": b"old b", "c": b"old c"}


@pytest.mark.parametrize("name", ["", ".", "..", "sub/x", "/abs"])
def test_replace_files_refuses_a_name_that_is_not_a_plain_file_name(tmp_path: Path, name: str) -> None:
    with pytest.raises(ValueError, match="contents: .* is not a plain file name"):
        _io.replace_files(tmp_path, {name: b"x"})
    assert list(tmp_path.iterdir()) == []


# --- read_regular_file: every loader that opens a path ---------------------------------------------
_SPECIAL_READERS = """
import sys
from customobj._io import read_regular_file
from customobj.ole import TreeBooster
from customobj.compare.report import read_results
for p in sys.argv[1:]:
    for name, read in (("read_regular_file", lambda p: read_regular_file(p, reader="the test")),
                       ("TreeBooster.load", TreeBooster.load), ("read_results", read_results)):
        try:
            read(p)
            print(name, "read", p)
        except ValueError as exc:
            print(name, "refused:", exc)
"""


def test_every_loader_refuses_pipes_devices_and_links_to_them(tmp_path: Path) -> None:
    """A FIFO blocks a plain open() forever and /dev/zero is read until memory runs out: run in a
    child process with a timeout, so today's bug fails the test instead of hanging the suite."""
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    zero_link = tmp_path / "model.json"
    zero_link.symlink_to("/dev/zero")
    paths = [str(fifo), str(zero_link), str(tmp_path)]
    try:
        proc = subprocess.run([sys.executable, "-c", _SPECIAL_READERS, *paths], capture_output=True,
                              text=True, timeout=120)
    except subprocess.TimeoutExpired:
        pytest.fail("a loader blocked on a FIFO or kept reading a device")
    lines = proc.stdout.splitlines()
    assert proc.returncode == 0 and len(lines) == 9, proc.stderr[-2000:]
    for line in lines:
        assert "refused:" in line and "not a regular file (a folder, device or pipe)" in line, line
    assert lines[1].startswith("TreeBooster.load refused: ") and "TreeBooster.load reads files" in lines[1]


def test_read_regular_file_reads_a_file_and_a_link_to_one(tmp_path: Path) -> None:
    (tmp_path / "a").write_bytes(b"data")
    (tmp_path / "link").symlink_to(tmp_path / "a")
    assert _io.read_regular_file(tmp_path / "link", reader="x") == b"data"
    with pytest.raises(FileNotFoundError):
        _io.read_regular_file(tmp_path / "missing", reader="x")
