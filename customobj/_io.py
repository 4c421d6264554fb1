"""Atomic file writes: every file customobj writes goes through here.

A write either replaces the target whole or leaves it as it was: the content goes to a temporary
file in the target's folder (same file system, so the final rename is atomic), is flushed and
fsynced, and only then renamed over the target; the folder is fsynced so the rename itself survives
a crash. If serialising or writing fails (an exception, a full disk), the temporary file is removed
and the previous file is untouched.

A result made of several files (``customobj compare``'s folder, a benchmark's outputs) goes through
:func:`replace_files`: every file is first written whole into a hidden staging folder, and only
when all of them are on disk are they moved in, so a failure while writing (a full disk, a file-size
limit) leaves every previous file as it was, never a folder that mixes two runs.

Every file customobj reads by path goes through :func:`read_regular_file`, which refuses anything
but a regular file: a FIFO would block the reader forever, a link to ``/dev/zero`` would be read
until memory runs out.
"""
from __future__ import annotations

import contextlib
import os
import shutil
import stat
import tempfile
from typing import IO, Any, Iterable, Iterator, Mapping

__all__ = ["atomic_open", "atomic_write_text", "atomic_write_bytes", "replace_files", "read_regular_file"]


def read_regular_file(path: str | os.PathLike, *, reader: str) -> bytes:
    """The whole content of ``path``, which must be a regular file (a link to one is fine).

    The file is opened without blocking (a FIFO with no writer would block a plain ``open``) and
    checked on the open descriptor, so a file swapped for a pipe between a check and the open is
    caught as well.

    Parameters
    ----------
    path : str or os.PathLike
        The file to read.
    reader : str
        What reads it (``"load_letor"``, ``"TreeBooster.load"``), named in the error.

    Raises
    ------
    ValueError
        ``path`` is a folder, a device, a pipe or a socket (or a link to one).
    FileNotFoundError
        No such file.

    Examples
    --------
    >>> import os, tempfile
    >>> from customobj._io import read_regular_file
    >>> folder = tempfile.mkdtemp()
    >>> read_regular_file(folder, reader="the example")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: ...: not a regular file (a folder, device or pipe); the example reads files
    """
    source = os.fspath(path)
    fd = os.open(source, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise ValueError(f"{source}: not a regular file (a folder, device or pipe); {reader} reads files")
        os.set_blocking(fd, True)
        with os.fdopen(fd, "rb") as fh:
            fd = -1  # closed by the file object from here on
            return fh.read()
    finally:
        if fd >= 0:
            os.close(fd)


def _fsync_dir(folder: str) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:  # some platforms / file systems cannot open a directory
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


@contextlib.contextmanager
def atomic_open(path: str | os.PathLike, mode: str = "w", *, encoding: str | None = "utf-8",
                newline: str | None = None) -> Iterator[IO[Any]]:
    """Open a temporary file beside ``path`` for writing; on a clean exit it replaces ``path``.

    Parameters
    ----------
    path : str or os.PathLike
        The file to (re)place. Its folder must exist.
    mode : {"w", "wb"}
        Text or binary.
    encoding, newline
        As for :func:`open` (text mode only).

    Examples
    --------
    >>> import os, tempfile
    >>> from customobj._io import atomic_open
    >>> target = os.path.join(tempfile.mkdtemp(), "out.txt")
    >>> with atomic_open(target) as fh:
    ...     _ = fh.write("hello")
    >>> open(target).read()
    'hello'
    """
    if mode not in ("w", "wb"):
        raise ValueError(f"mode must be 'w' or 'wb', got {mode!r}")
    path = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise FileNotFoundError(f"cannot write {path}: folder {folder} does not exist")
    if os.path.isdir(path):
        raise IsADirectoryError(f"cannot write {path}: it is a folder")
    fd, tmp = tempfile.mkstemp(prefix="." + os.path.basename(path) + ".", suffix=".tmp", dir=folder)
    try:
        fh: IO[Any]
        if mode == "wb":
            fh = os.fdopen(fd, "wb")
        else:
            fh = os.fdopen(fd, "w", encoding=encoding, newline=newline)
        with fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        try:  # keep the permissions of the file being replaced (mkstemp makes it 0600)
            os.chmod(tmp, os.stat(path).st_mode & 0o7777)
        except FileNotFoundError:
            umask = os.umask(0)
            os.umask(umask)
            os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    _fsync_dir(folder)


def atomic_write_text(path: str | os.PathLike, text: str, *, encoding: str = "utf-8") -> None:
    """Write ``text`` to ``path`` atomically (see :func:`atomic_open`).

    Parameters
    ----------
    path : str or os.PathLike
        The file to (re)place. Its folder must exist.
    text : str
        The whole new content.
    encoding : str
        Text encoding.

    Examples
    --------
    >>> import os, tempfile
    >>> from customobj._io import atomic_write_text
    >>> target = os.path.join(tempfile.mkdtemp(), "notes.txt")
    >>> atomic_write_text(target, "ndcg@10 0.78")
    >>> open(target).read()
    'ndcg@10 0.78'
    """
    with atomic_open(path, "w", encoding=encoding) as fh:
        fh.write(text)


def atomic_write_bytes(path: str | os.PathLike, data: bytes) -> None:
    """Write ``data`` to ``path`` atomically: :func:`atomic_write_text` for bytes, written as they are
    (no encoding, no newline translation).

    Parameters
    ----------
    path : str or os.PathLike
        The file to (re)place, in a folder that exists (see :func:`atomic_open`).
    data : bytes
        The whole new content, byte for byte.

    Examples
    --------
    >>> import os, tempfile
    >>> from customobj._io import atomic_write_bytes
    >>> target = os.path.join(tempfile.mkdtemp(), "blob.bin")
    >>> atomic_write_bytes(target, b"abc")
    >>> open(target, "rb").read()
    b'abc'
    """
    with atomic_open(path, "wb") as fh:
        fh.write(data)


def _default_mode(folder: bool) -> int:
    umask = os.umask(0)
    os.umask(umask)
    return (0o777 if folder else 0o666) & ~umask


def _plain_name(name: str) -> str:
    if not name or name in (".", "..") or os.sep in name or (os.altsep and os.altsep in name):
        raise ValueError(f"contents: {name!r} is not a plain file name")
    return name


def _keep_old(target: str, backup: str) -> bool:
    """Keep the current ``target`` at ``backup`` for a rollback (a hard link, a copy where links
    are not supported); False when there is no current file."""
    if not os.path.lexists(target):
        return False
    try:
        os.link(target, backup, follow_symlinks=False)
    except OSError:
        shutil.copy2(target, backup, follow_symlinks=False)
    return True


def _commit(folder: str, stage: str, names: list[str], remove: list[str]) -> None:
    """Move the staged ``names`` into ``folder`` and delete ``remove``: all of it, or, on an error,
    nothing (each previous file is put back)."""
    backup = os.path.join(stage, ".previous")
    os.mkdir(backup)
    kept = {n: _keep_old(os.path.join(folder, n), os.path.join(backup, n)) for n in names + remove}
    done: list[str] = []
    try:
        for name in names:
            target = os.path.join(folder, name)
            with contextlib.suppress(FileNotFoundError):  # keep the permissions of the file replaced
                os.chmod(os.path.join(stage, name), os.stat(target).st_mode & 0o7777)
            os.replace(os.path.join(stage, name), target)
            done.append(name)
        for name in remove:
            if kept[name]:
                os.unlink(os.path.join(folder, name))
                done.append(name)
    except BaseException:
        for name in reversed(done):
            target = os.path.join(folder, name)
            if kept[name]:
                os.replace(os.path.join(backup, name), target)
            else:
                os.unlink(target)
        raise


def replace_files(folder: str | os.PathLike, contents: Mapping[str, bytes], *,
                  remove: Iterable[str] = ()) -> None:
    """Write several files into ``folder`` as one change: all of them are replaced, or none.

    Every file of ``contents`` is written and fsynced in a hidden staging folder first (inside
    ``folder``, so on its file system; beside it when ``folder`` does not exist yet, which is then
    renamed into place whole). Only then are the files moved in, one rename each, and the names in
    ``remove`` deleted (files of an earlier result that this one does not have). An error while
    staging leaves ``folder`` untouched; an error while moving puts every previous file back.

    Parameters
    ----------
    folder : str or os.PathLike
        The result folder; made (with its parents) if missing.
    contents : mapping of str to bytes
        ``{file name: content}``, plain file names, moved in in this order.
    remove : iterable of str
        File names to delete from ``folder`` with the same change (missing ones are ignored).

    Examples
    --------
    >>> import os, tempfile
    >>> from customobj._io import replace_files
    >>> out = os.path.join(tempfile.mkdtemp(), "run")
    >>> replace_files(out, {"a.csv": b"1", "b.json": b"{}"})
    >>> replace_files(out, {"a.csv": b"2"}, remove=["b.json"])
    >>> sorted(os.listdir(out)), open(os.path.join(out, "a.csv")).read()
    (['a.csv'], '2')
    """
    folder = os.path.abspath(os.fspath(folder))
    names = [_plain_name(n) for n in contents]
    remove = [_plain_name(n) for n in remove if n not in contents]
    fresh = not os.path.isdir(folder)
    if fresh:
        parent, base = os.path.split(folder)
        os.makedirs(parent, exist_ok=True)
        stage = tempfile.mkdtemp(prefix="." + base + ".", suffix=".tmp", dir=parent)
    else:
        stage = tempfile.mkdtemp(prefix=".replace.", suffix=".tmp", dir=folder)
    try:
        for name in names:
            atomic_write_bytes(os.path.join(stage, name), contents[name])
        if fresh:
            os.chmod(stage, _default_mode(folder=True))  # mkdtemp makes it 0700
            os.rename(stage, folder)  # fails, touching nothing, if a folder appeared there meanwhile
            _fsync_dir(os.path.dirname(folder))
            return
        _commit(folder, stage, names, remove)
    finally:
        shutil.rmtree(stage, ignore_errors=True)
    _fsync_dir(folder)
