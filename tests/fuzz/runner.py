"""Run fuzz examples in a persistent worker process; turn crashes and hangs into reported failures.

Starting a process per example costs 1-2 s (importing customobj, lightgbm and xgboost and loading
numba's cache), so one worker runs example after example over a pipe and is restarted only when
an example kills it (signal, exit) or hangs (no answer within ``timeout`` seconds: the worker
gets SIGUSR1 first, so faulthandler prints where it was stuck, then SIGKILL).

Before a target's first hostile example in a worker, the worker runs that target's warm-up (valid
inputs, long timeout): numba loads or compiles its kernels there, so compile time is never
mistaken for a hang and a hostile example gets the short timeout.

Protocol: 8-byte big-endian length + pickle, both ways, on the worker's stdin and a private copy
of its stdout (the worker points fd 1 at its stderr, so library chatter cannot corrupt frames).
"""
from __future__ import annotations

import atexit
import os
import pickle
import re
import selectors
import signal
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, NamedTuple

HERE = Path(__file__).resolve().parent
TESTS_DIR = HERE.parent

#: Seconds a hostile example may run (wall clock). Tiny inputs take milliseconds; the margin is for
#: a shared, loaded machine. ``CUSTOMOBJ_FUZZ_TIMEOUT`` overrides.
TIMEOUT = float(os.environ.get("CUSTOMOBJ_FUZZ_TIMEOUT", "10"))
#: Seconds for a worker start or a warm-up (may compile numba kernels on a cold cache).
WARM_TIMEOUT = float(os.environ.get("CUSTOMOBJ_FUZZ_WARM_TIMEOUT", "600"))
#: Address-space limit of the worker (bytes): an unguarded 16 GB allocation fails fast instead of
#: swapping the shared machine. ``CUSTOMOBJ_FUZZ_MEMORY_GB`` overrides.
MEMORY_LIMIT = int(float(os.environ.get("CUSTOMOBJ_FUZZ_MEMORY_GB", "4")) * 2**30)

#: Outcome kinds that are failures of the library (everything but "ok" and "raised").
FAILURES = ("crash", "hang", "bad-output", "wrong-exception", "unnamed-argument", "warmup-failed")

_HEADER = struct.Struct(">Q")
_STDERR_TAIL = 6000


class Example(NamedTuple):
    """One fuzz case: the worker target, its keyword arguments, and what is hostile in it.

    ``hostile``: groups of names; when the target raises ValueError/TypeError, its message must
    contain one name of each group (the argument it rejects, e.g. ``("group", "qid", "ptr")``).
    Empty when several inputs are hostile at once or the culprit is not known.
    """

    target: str
    kwargs: dict
    hostile: tuple = ()


class Outcome(NamedTuple):
    """What happened to one example. ``kind``: "ok", "raised" (an allowed error) or a FAILURES kind."""

    kind: str
    target: str
    detail: str = ""
    exc_type: str = ""
    message: str = ""
    stderr: str = ""
    seconds: float = 0.0

    @property
    def failed(self) -> bool:
        return self.kind in FAILURES


class _WorkerDied(Exception):
    pass


class _Timeout(Exception):
    pass


class Worker:
    """One persistent worker process (restarted on demand after a crash or hang)."""

    def __init__(self, *, timeout: float = TIMEOUT, warm_timeout: float = WARM_TIMEOUT,
                 memory_limit: int = MEMORY_LIMIT, light: bool = False):
        self.light = light  # self-tests of the runner only: skip importing customobj (faster restarts)
        self.timeout = timeout
        self.warm_timeout = warm_timeout
        self.memory_limit = memory_limit
        self.proc = None
        self.warmed = set()
        self.restarts = 0
        self._err_path = None

    # --- process management ---------------------------------------------------------------------
    def start(self) -> None:
        fd, self._err_path = tempfile.mkstemp(prefix="customobj-fuzz-", suffix=".stderr")
        os.close(fd)
        err = open(self._err_path, "ab")  # O_APPEND: the parent may truncate it between examples
        env = dict(os.environ)
        env["CUSTOMOBJ_FUZZ_MEMORY_LIMIT"] = str(self.memory_limit)
        env.setdefault("PYTHONFAULTHANDLER", "1")
        env["CUSTOMOBJ_FUZZ_LIGHT"] = "1" if self.light else ""
        code = (f"import sys; sys.path.insert(0, {str(TESTS_DIR)!r}); "
                "from fuzz._worker import main; main()")
        self.proc = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=err, env=env,
                                     start_new_session=True)
        err.close()
        self.warmed = set()
        try:
            ready = self._receive(self.warm_timeout)
        except (_WorkerDied, _Timeout) as exc:
            tail = self._stderr_tail()
            self.stop()
            raise RuntimeError(f"fuzz worker failed to start ({exc}):\n{tail}") from None
        if ready != "ready":
            raise RuntimeError(f"fuzz worker sent {ready!r} instead of 'ready'")

    def stop(self) -> None:
        proc, self.proc = self.proc, None
        if proc is not None:
            if proc.poll() is None:
                try:
                    proc.stdin.close()
                    proc.wait(timeout=5)
                except (OSError, subprocess.TimeoutExpired):
                    self._kill(proc)
            for stream in (proc.stdin, proc.stdout):
                try:
                    stream.close()
                except OSError:
                    pass
        if self._err_path:
            try:
                os.unlink(self._err_path)
            except OSError:
                pass
            self._err_path = None

    @staticmethod
    def _kill(proc) -> None:
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # the worker's own session: only what we started
        except (ProcessLookupError, PermissionError):
            pass
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass

    def _stderr_tail(self) -> str:
        try:
            with open(self._err_path, "rb") as fh:
                data = fh.read()
        except (OSError, TypeError):
            return ""
        # faulthandler ends a crash report with a long "Extension modules: ..." line: drop it.
        lines = [ln for ln in data[-200_000:].decode("utf-8", "replace").splitlines()
                 if not ln.startswith("Extension modules:")]
        return "\n".join(lines)[-_STDERR_TAIL:]

    def _clear_stderr(self) -> None:
        try:
            os.truncate(self._err_path, 0)
        except (OSError, TypeError):
            pass

    # --- framing --------------------------------------------------------------------------------
    def _send(self, obj) -> None:
        data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
        try:
            self.proc.stdin.write(_HEADER.pack(len(data)) + data)
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError):
            raise _WorkerDied("worker closed its input") from None

    def _read_exactly(self, n, deadline):
        fd = self.proc.stdout.fileno()
        chunks, got = [], 0
        with selectors.DefaultSelector() as sel:
            sel.register(fd, selectors.EVENT_READ)
            while got < n:
                left = deadline - time.monotonic()
                if left <= 0 or not sel.select(left):
                    raise _Timeout(f"no answer within {self.timeout:g} s")
                chunk = os.read(fd, n - got)
                if not chunk:
                    raise _WorkerDied("worker exited")
                chunks.append(chunk)
                got += len(chunk)
        return b"".join(chunks)

    def _receive(self, timeout):
        deadline = time.monotonic() + timeout
        (size,) = _HEADER.unpack(self._read_exactly(_HEADER.size, deadline))
        return pickle.loads(self._read_exactly(size, deadline))

    # --- running --------------------------------------------------------------------------------
    def _died(self, target, t0, how):
        proc = self.proc
        try:
            code = proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._kill(proc)
            code = proc.returncode
        if code is not None and code < 0:
            try:
                detail = f"killed by {signal.Signals(-code).name}"
            except ValueError:
                detail = f"killed by signal {-code}"
        else:
            detail = f"worker exited with status {code} ({how})"
        out = Outcome("crash", target, detail, stderr=self._stderr_tail(), seconds=time.monotonic() - t0)
        self._restart_later()
        return out

    def _hung(self, target, t0, timeout):
        try:
            os.kill(self.proc.pid, signal.SIGUSR1)  # faulthandler: where is it stuck?
            time.sleep(0.5)
        except ProcessLookupError:
            pass
        self._kill(self.proc)
        out = Outcome("hang", target, f"no result within {timeout:g} s", stderr=self._stderr_tail(),
                      seconds=time.monotonic() - t0)
        self._restart_later()
        return out

    def _restart_later(self) -> None:
        self.restarts += 1
        self.stop()

    def call(self, target: str, kwargs: dict, timeout: float | None = None) -> Outcome:
        """Run ``target(**kwargs)`` in the worker; never raises for what the target does."""
        if self.proc is None or self.proc.poll() is not None:
            if self.proc is not None:
                self.stop()
            self.start()
        timeout = self.timeout if timeout is None else timeout
        self._clear_stderr()
        t0 = time.monotonic()
        try:
            self._send((target, kwargs))
            reply = self._receive(timeout)
        except _WorkerDied as exc:
            return self._died(target, t0, str(exc))
        except _Timeout:
            return self._hung(target, t0, timeout)
        seconds = time.monotonic() - t0
        status = reply["status"]
        if status == "ok":
            return Outcome("ok", target, repr(reply.get("summary"))[:300], seconds=seconds)
        if status == "bad":
            return Outcome("bad-output", target, reply["message"], seconds=seconds)
        kind = "raised" if reply["allowed"] else "wrong-exception"
        return Outcome(kind, target, reply.get("where", ""), reply["type"], reply["message"],
                       stderr=reply.get("traceback", ""), seconds=seconds)

    def value(self, target: str, kwargs: dict):
        """The summary ``target(**kwargs)`` returns (for helpers, e.g. valid models); raises on failure."""
        if self.proc is None or self.proc.poll() is not None:
            self.stop()
            self.start()
        self._clear_stderr()
        self._send((target, kwargs))
        reply = self._receive(self.warm_timeout)
        if reply["status"] != "ok":
            raise RuntimeError(f"fuzz helper {target} failed: {reply}")
        return reply["summary"]

    def run(self, example: Example) -> Outcome:
        """Warm the target up in this worker if needed, then run the hostile example."""
        if self.proc is None or example.target not in self.warmed:
            warm = self.call("__warm__", {"target": example.target}, timeout=self.warm_timeout)
            if warm.kind != "ok":
                return warm._replace(kind="warmup-failed" if warm.kind in ("raised", "bad-output") else warm.kind,
                                     detail=f"warm-up of {example.target} (valid inputs): {warm.kind} {warm.detail}")
            self.warmed.add(example.target)
        out = self.call(example.target, example.kwargs)
        return check_names(out, example)


def _mentions(message: str, alias: str) -> bool:
    return re.search(r"(?<![A-Za-z])" + re.escape(alias), message, flags=re.IGNORECASE) is not None


def check_names(outcome: Outcome, example: Example) -> Outcome:
    """An allowed error must name the argument it rejects (issue 13, "Done when")."""
    if outcome.kind != "raised" or not example.hostile:
        return outcome
    text = f"{outcome.exc_type}: {outcome.message}"
    for group in example.hostile:
        group = (group,) if isinstance(group, str) else tuple(group)
        if not group:  # a mutation that changed nothing that matters (e.g. the dtype of an empty array)
            continue
        if not any(_mentions(text, alias) for alias in group):
            return outcome._replace(kind="unnamed-argument",
                                    detail=f"message names none of {list(group)}")
    return outcome


_WORKER = None


def worker() -> Worker:
    """The process-wide worker (started on first use, stopped at exit)."""
    global _WORKER
    if _WORKER is None:
        _WORKER = Worker()
        atexit.register(_WORKER.stop)
    return _WORKER


def run(example: Example) -> Outcome:
    return worker().run(example)


def describe(outcome: Outcome, example: Example | None = None) -> str:
    """A readable failure report: what happened, the example, and the worker's stderr tail."""
    lines = [f"{outcome.kind} in {outcome.target}: {outcome.detail}"]
    if outcome.exc_type:
        lines.append(f"  raised {outcome.exc_type}: {outcome.message[:500]}")
    if example is not None:
        lines.append(f"  example: {short_repr(example.kwargs)}")
        if example.hostile:
            lines.append(f"  hostile: {example.hostile}")
    if outcome.stderr.strip():
        lines.append("  worker stderr / traceback (tail):")
        lines.extend("    " + s for s in outcome.stderr.strip().splitlines()[-25:])
    return "\n".join(lines)


def short_repr(obj: Any, limit: int = 1500) -> str:
    import numpy as np

    with np.printoptions(threshold=40, edgeitems=5, precision=17):
        text = repr(obj)
    return text if len(text) <= limit else text[:limit] + f"... ({len(text)} chars)"


def assert_holds(example: Example) -> Outcome:
    """Run ``example``; raise AssertionError describing it if the library failed."""
    out = run(example)
    if out.failed:
        raise AssertionError(describe(out, example))
    return out
