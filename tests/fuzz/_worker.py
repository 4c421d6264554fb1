"""The fuzz worker process: reads ``(target, kwargs)`` frames, runs them, answers with a status.

Started by :class:`fuzz.runner.Worker`. Imports ``customobj.adapters`` before lightgbm / xgboost
(it sets the OpenMP wait policy those libraries read at load time).
"""
from __future__ import annotations

import faulthandler
import os
import pickle
import resource
import signal
import struct
import sys
import traceback
import warnings

_HEADER = struct.Struct(">Q")
#: MemoryError messages of numpy and numba themselves: an allocation nobody guarded.
_UNGUARDED_MEMORY = ("Unable to allocate", "Allocation failed")


def _read_exactly(fd, n):
    chunks, got = [], 0
    while got < n:
        chunk = os.read(fd, n - got)
        if not chunk:
            return None
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


def _send(fh, obj):
    data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    fh.write(_HEADER.pack(len(data)) + data)
    fh.flush()


def _allowed(exc):
    """ValueError / TypeError, or a MemoryError from a guard (with a message, not numpy's)."""
    if isinstance(exc, (ValueError, TypeError)):
        return bool(str(exc).strip())
    if isinstance(exc, MemoryError):
        msg = str(exc).strip()
        return bool(msg) and not msg.startswith(_UNGUARDED_MEMORY)
    return False


def _where(exc):
    """The innermost frame of the traceback: file:line function."""
    tb = traceback.extract_tb(exc.__traceback__)
    if not tb:
        return ""
    f = tb[-1]
    return f"{os.path.basename(f.filename)}:{f.lineno} in {f.name}"


def _setup():
    proto_out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # print() and C-level stdout of lightgbm / xgboost now go to stderr
    sys.stdout = os.fdopen(1, "w", buffering=1, closefd=False)
    faulthandler.enable(all_threads=True)
    faulthandler.register(signal.SIGUSR1, all_threads=True)
    limit = int(os.environ.get("CUSTOMOBJ_FUZZ_MEMORY_LIMIT", "0"))
    if limit > 0:
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    warnings.simplefilter("ignore")  # overflow RuntimeWarnings etc.: outputs are checked instead
    os.environ.setdefault("TQDM_DISABLE", "1")
    from fuzz import _targets

    if not os.environ.get("CUSTOMOBJ_FUZZ_LIGHT"):
        _targets.LOADED_BEFORE_ADAPTERS = sorted({"lightgbm", "xgboost"} & set(sys.modules))
        import customobj.adapters  # noqa: F401  (before lightgbm / xgboost)
        import customobj  # noqa: F401

        _targets.load_all()
    return proto_out, _targets


def main():
    proto_out, targets = _setup()
    _send(proto_out, "ready")
    fd = 0
    while True:
        head = _read_exactly(fd, _HEADER.size)
        if head is None:
            return
        (size,) = _HEADER.unpack(head)
        payload = _read_exactly(fd, size)
        if payload is None:
            return
        name, kwargs = pickle.loads(payload)
        try:
            summary = targets.run(name, kwargs)
            reply = {"status": "ok", "summary": summary}
        except targets.BadOutput as exc:
            reply = {"status": "bad", "message": str(exc)}
        except (Exception, SystemExit) as exc:  # noqa: BLE001 - classifying is the point
            reply = {"status": "raised", "type": f"{type(exc).__module__}.{type(exc).__qualname__}",
                     "message": str(exc)[:2000], "allowed": _allowed(exc), "where": _where(exc),
                     "traceback": "".join(traceback.format_exception(exc))[-3000:]}
        try:
            _send(proto_out, reply)
        except Exception as exc:  # an unpicklable summary: report it rather than die
            _send(proto_out, {"status": "bad", "message": f"harness: could not send the reply: {exc!r}"})


if __name__ == "__main__":
    main()
