"""The ``--out`` folder of ``customobj compare`` (customobj/compare/output.py): checked before
training, written atomically after."""
import os

import pytest
from _isolated import run_isolated

from customobj.compare import command
from customobj.compare.output import RESULT_FILES, check_folder, write_results


def test_a_failed_write_leaves_the_previous_file(tmp_path, monkeypatch):
    from customobj import _io

    out = tmp_path / "o"
    write_results(out, {"results.csv": b"old\n", "results.json": b"{}\n"}, overwrite=False)

    def full_disk(path, data):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(_io, "atomic_write_bytes", full_disk)
    with pytest.raises(command.RunError, match=r"could not write the results to .*No space left on device"):
        write_results(out, {"results.csv": b"new\n"}, overwrite=True)
    assert (out / "results.csv").read_bytes() == b"old\n" and (out / "results.json").exists()


def _listing(folder):
    return {p.name: p.read_bytes() for p in folder.iterdir()}


def test_overwrite_failing_midway_keeps_every_previous_file(tmp_path, fail_nth_call):
    """The third file of the new run fails (a full disk): the folder still holds the old run whole,
    not new CSVs beside an old results.json, and no staging folder is left behind."""
    from customobj import _io

    out = tmp_path / "o"
    old = {name: b"old " + name.encode() for name in RESULT_FILES}
    write_results(out, old, overwrite=False)
    fail_nth_call(_io, "atomic_write_bytes", 3, OSError(28, "No space left on device"))
    with pytest.raises(command.RunError, match="No space left on device"):
        write_results(out, {name: b"new" for name in RESULT_FILES if name != "curves.png"}, overwrite=True)
    assert _listing(out) == old and [p.name for p in tmp_path.iterdir()] == ["o"]


def test_overwrite_past_the_file_size_limit_keeps_every_previous_file(tmp_path):
    """A real failure of the kernel (RLIMIT_FSIZE: EFBIG on the big paired.csv) in a child process."""
    out = tmp_path / "o"
    old = {name: b"old " + name.encode() for name in RESULT_FILES}
    write_results(out, old, overwrite=False)
    new = {"results.csv": b"n" * 10, "summary.csv": b"n" * 10, "paired.csv": b"n" * 100_000, "results.json": b"{}"}
    out_text = run_isolated(f"""
        import resource, signal
        from customobj.compare.output import write_results
        from customobj._cli_errors import RunError
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (50_000, resource.getrlimit(resource.RLIMIT_FSIZE)[1]))
        try:
            write_results({str(out)!r}, {new!r}, overwrite=True)
        except RunError as exc:
            print("refused:", exc)
    """)
    assert "refused: could not write the results" in out_text
    assert _listing(out) == old and [p.name for p in tmp_path.iterdir()] == ["o"]


def test_a_new_folder_appears_whole(tmp_path, monkeypatch):
    from customobj import _io

    def full_disk(path, data):
        if path.endswith("paired.csv"):
            raise OSError(28, "No space left on device")
        real(path, data)

    real = _io.atomic_write_bytes
    monkeypatch.setattr(_io, "atomic_write_bytes", full_disk)
    with pytest.raises(command.RunError):
        write_results(tmp_path / "o", {name: b"x" for name in RESULT_FILES}, overwrite=False)
    assert list(tmp_path.iterdir()) == []  # no half-filled folder, no staging folder


def test_check_folder_accepts_a_new_or_empty_folder(tmp_path):
    assert check_folder(tmp_path / "new" / "deeper", overwrite=False) == tmp_path / "new" / "deeper"
    assert not (tmp_path / "new").exists()  # checked, not made: nothing is written before training
    assert check_folder(tmp_path, overwrite=False) == tmp_path


def test_check_folder_refuses_what_cannot_take_the_results(tmp_path):
    (tmp_path / "file").write_text("x")
    with pytest.raises(command.UsageError, match=r"--out .*file: exists and is not a folder"):
        check_folder(tmp_path / "file", overwrite=True)
    with pytest.raises(command.UsageError, match=r"is a file, not a folder"):
        check_folder(tmp_path / "file" / "sub", overwrite=True)
    (tmp_path / "old").mkdir()
    (tmp_path / "old" / "summary.csv").write_text("x")
    with pytest.raises(command.UsageError, match=r"already holds compare results \(summary.csv\); pass --overwrite"):
        check_folder(tmp_path / "old", overwrite=False)
    assert check_folder(tmp_path / "old", overwrite=True) == tmp_path / "old"
    (tmp_path / "old" / "curves.png").mkdir()
    with pytest.raises(command.UsageError, match=r"curves.png is a folder"):
        check_folder(tmp_path / "old", overwrite=True)


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders")
def test_check_folder_refuses_a_folder_without_write_permission(tmp_path):
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        with pytest.raises(command.UsageError, match=r"no permission to write in"):
            check_folder(locked / "out", overwrite=False)
    finally:
        locked.chmod(0o700)


def test_write_results_writes_in_order_and_overwrite_removes_stale_files(tmp_path):
    out = tmp_path / "o"
    contents = {name: name.encode() for name in RESULT_FILES}
    assert write_results(out, contents, overwrite=False) == list(RESULT_FILES)
    assert all((out / name).read_bytes() == name.encode() for name in RESULT_FILES)
    # A run without the plot replaces the tables and removes the stale curves.png.
    no_plot = {name: b"2" for name in RESULT_FILES if name != "curves.png"}
    assert write_results(out, no_plot, overwrite=True) == [n for n in RESULT_FILES if n != "curves.png"]
    assert not (out / "curves.png").exists() and (out / "results.csv").read_bytes() == b"2"
