"""The command line's error types and output helpers, apart from ``customobj.cli`` so that the
commands it runs (``customobj.compare``) can raise and report without importing the CLI itself."""
from __future__ import annotations

import contextlib
import os
import sys
import tempfile
from typing import Iterator

__all__ = ["UsageError", "RunError", "stderr_held", "one_line"]


class UsageError(ValueError):
    """Bad arguments or input data: one line on stderr, exit status 2."""


class RunError(RuntimeError):
    """A failure while running (a training run, writing results): one line on stderr, exit status 1."""


@contextlib.contextmanager
def stderr_held() -> Iterator[None]:
    """Hold what is written to file descriptor 2 while the block runs: replay it if the block
    succeeds, drop it if the block raises (its exception is then reported in one line).

    LightGBM's C++ code prints ``[LightGBM] [Fatal] ...`` straight to descriptor 2 before raising
    the same text as an exception; without this, a failure would print two messages.
    """
    try:
        sys.stderr.flush()
        saved = os.dup(2)
    except (OSError, ValueError, AttributeError):  # no descriptor 2 to hold: run as is
        yield
        return
    with tempfile.TemporaryFile() as held:
        os.dup2(held.fileno(), 2)
        ok = False
        try:
            yield
            ok = True
        finally:
            with contextlib.suppress(Exception):
                sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            if ok:
                held.seek(0)
                data = held.read()
                if data:
                    os.write(2, data)


def one_line(text: str) -> str:
    """Collapse a (possibly multi-line) message into one line."""
    return "; ".join(line.strip() for line in str(text).splitlines() if line.strip()) or "(no message)"
