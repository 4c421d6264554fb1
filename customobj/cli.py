"""The ``customobj`` command: ``--version``, ``info`` (environment report) and ``compare``.

Exit status: 0 on success, 2 for a usage error (bad arguments or bad input data, found before any
training), 1 for a failure while running, 130 when interrupted (Ctrl-C). Every failure prints
exactly one line on stderr, ``customobj[ compare]: error: <what>``, and no traceback; set the
environment variable ``CUSTOMOBJ_DEBUG=1`` to let unexpected exceptions raise with their traceback.
``compare`` lives in ``customobj.compare.command`` (``add_arguments(parser)``, ``run(args) -> int``)
and is imported only when that subcommand runs.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from typing import NoReturn, Sequence

from ._cli_errors import RunError, UsageError, one_line
from ._version import __version__

__all__ = ["main", "environment_info", "UsageError", "RunError", "EXIT_OK", "EXIT_RUNTIME", "EXIT_USAGE",
           "EXIT_INTERRUPTED", "DEBUG_ENV"]

EXIT_OK = 0
EXIT_RUNTIME = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130  # 128 + SIGINT, what shells report for Ctrl-C
#: Set to 1 to see the traceback of an unexpected exception instead of the one-line message.
DEBUG_ENV = "CUSTOMOBJ_DEBUG"


class ArgumentParser(argparse.ArgumentParser):
    """argparse, with errors raised as :class:`UsageError` (one line) instead of usage + exit."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{message} (see {self.prog} --help)")


def environment_info() -> dict:
    """Versions, numba threading, kernel cache folder and CPU/thread environment as a plain dict
    (``customobj info``)."""
    from ._environment import environment_info as info

    return info()


def _print_info(info):
    print(f"customobj {info['packages']['customobj']}")
    print(f"python    {info['python']} ({info['platform']})")
    print("packages:")
    for name, v in info["packages"].items():
        print(f"  {name:<13} {v}")
    nb = info["numba"]
    print("numba threading:")
    print(f"  threading_layer   {nb['threading_layer']}")
    print(f"  configured        {nb['configured_layer']}")
    print(f"  available         {', '.join(nb['available_layers']) or 'none'}")
    print(f"  NUMBA_NUM_THREADS {nb['num_threads']}")
    cache = info["kernel_cache"]
    print("kernel cache:")
    print(f"  folder            {cache['folder']} ({'writable' if cache['writable'] else 'NOT writable: kernels compile in memory'})")
    if cache["numba_cache_dir"]:
        print(f"  NUMBA_CACHE_DIR   {cache['numba_cache_dir']} (takes precedence)")
    print(f"cpu_count {info['cpu_count']} (usable by this process: {info['cpus_usable']})")
    from ._environment import gpu_line

    print(f"gpu       {gpu_line(info['gpu'])}")
    print("thread-related environment variables:")
    if info["thread_env"]:
        for k, v in info["thread_env"].items():
            print(f"  {k}={v}")
    else:
        print("  (none set)")


def _cmd_info(args, extra):
    info = environment_info()
    if args.json:
        print(json.dumps(info, indent=2))
    else:
        _print_info(info)
    return EXIT_OK


def _cmd_compare(args, extra):
    from .compare import command

    parser = ArgumentParser(prog="customobj compare",
                            description="Compare ranking objectives on LETOR or synthetic data.")
    command.add_arguments(parser)
    return int(command.run(parser.parse_args(extra)) or 0)


def build_parser() -> ArgumentParser:
    """The top-level parser (``compare``'s own options are parsed by the compare module)."""
    parser = ArgumentParser(prog="customobj", description="Learning-to-rank objectives for LightGBM / XGBoost.")
    parser.add_argument("--version", action="version", version=f"customobj {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="{info,compare}")
    p_info = sub.add_parser("info", help="print package versions, numba threading and CPU settings")
    p_info.add_argument("--json", action="store_true", help="print the report as JSON")
    p_info.set_defaults(handler=_cmd_info)
    p_cmp = sub.add_parser("compare", add_help=False, help="compare objectives (customobj compare --help)")
    p_cmp.set_defaults(handler=_cmd_compare)
    return parser


def _fail(prog, message, code):
    print(f"{prog}: error: {one_line(message)}", file=sys.stderr)
    return code


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``customobj`` console script; returns the exit status (see the module doc).

    ``--help`` and ``--version`` print and raise ``SystemExit(0)`` as argparse does.
    """
    argv = sys.argv[1:] if argv is None else [str(a) for a in argv]
    prog = "customobj"
    try:
        parser = build_parser()
        args, extra = parser.parse_known_args(argv)
        handler = getattr(args, "handler", None)
        if handler is _cmd_compare:
            prog = "customobj compare"
        elif extra:
            raise UsageError(f"unrecognized arguments: {' '.join(extra)} (see {prog} --help)")
        elif handler is None:
            parser.print_help()
            raise UsageError("a command is required: info or compare")
        return handler(args, extra)
    except UsageError as exc:
        return _fail(prog, exc, EXIT_USAGE)
    except RunError as exc:
        return _fail(prog, exc, EXIT_RUNTIME)
    except KeyboardInterrupt:
        print(f"{prog}: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except Exception as exc:  # noqa: BLE001 - the one-line rule; CUSTOMOBJ_DEBUG=1 shows the traceback
        if os.environ.get(DEBUG_ENV, "") not in ("", "0"):
            raise
        return _fail(prog, f"{type(exc).__name__}: {exc}", EXIT_RUNTIME)


if __name__ == "__main__":  # pragma: no cover
    # ``python -m customobj.cli`` runs this file as __main__: use the module's own classes, which
    # customobj.compare raises, not this copy's.
    from customobj.cli import main as _main

    sys.exit(_main())
