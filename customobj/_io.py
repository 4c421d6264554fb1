"""Atomic file writes: every file customobj writes goes through here.

A write either replaces the target whole or leaves it as it was: the content goes to a temporary
file in the target's folder (same file system, so the final rename is atomic), is flushed and
fsynced, and only then renamed over the target; the folder is fsynced so the rename itself survives
a crash. If serialising or writing fails (an exception, a full disk), the temporary file is removed
and the previous file is untouched.
"""
from __future__ import annotations

import contextlib
import os
import tempfile
from typing import IO, Any, Iterator

__all__ = ["atomic_open", "atomic_write_text", "atomic_write_bytes"]


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
    """Write ``data`` to ``path`` atomically (see :func:`atomic_open`).

    Parameters
    ----------
    path : str or os.PathLike
        The file to (re)place. Its folder must exist.
    data : bytes
        The whole new content.

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
