"""Longer fuzz campaign over every public entry point (issue 13); prints failures grouped by class.

The test suite runs each property of ``tests/fuzz`` on a short derandomised budget; this script
runs them with random seeds and more examples, does not stop at the first failure, and groups
what it finds by property, failure kind (crash / hang / bad-output / wrong-exception /
unnamed-argument) and signature (exception type and message with numbers blanked, or the
innermost customobj frame of a crash / hang), showing the shortest example of each group.

    python benchmarks/fuzz.py --examples 300 --seconds 240
    python benchmarks/fuzz.py --only ole. --examples 100 --seed 7 --json out/fuzz.json

Every example runs in one persistent worker process (restarted after a crash or hang), so the
campaign itself never dies; ``--seconds`` is split evenly over the selected properties.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import re
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))  # before this script's own folder: "fuzz" is tests/fuzz

from hypothesis import HealthCheck, Phase, given, seed, settings  # noqa: E402

from fuzz._suite import PROPERTIES  # noqa: E402
from fuzz.runner import FAILURES, short_repr, worker  # noqa: E402

#: property -> [seconds, examples] of the examples that did not fail.
TIMES = defaultdict(lambda: [0.0, 0])
_FRAME = re.compile(r'File "([^"]+)", line (\d+) in (\S+)')


def _innermost_library_frame(stderr):
    """The innermost customobj frame of a faulthandler dump ("most recent call first")."""
    for path, line, func in _FRAME.findall(stderr):
        if "/tests/fuzz/" not in path and ("/customobj/" in path or "/adapters/" in path):
            return f"{os.path.basename(path)}:{line} in {func}"
    return ""


def signature(outcome):
    """What makes two failures the same bug, for grouping."""
    if outcome.kind in ("crash", "hang"):
        return f"{outcome.detail.split(' (')[0]} at {_innermost_library_frame(outcome.stderr) or '?'}"
    text = outcome.message if outcome.kind in ("wrong-exception", "unnamed-argument") else outcome.detail
    text = re.sub(r"-?\d[\d.e+\-]*", "N", text.splitlines()[0] if text else "")[:110]
    where = f" ({outcome.detail})" if outcome.kind == "wrong-exception" else ""
    return f"{outcome.exc_type.split('.')[-1] + ': ' if outcome.exc_type else ''}{text}{where}"


def run_property(name, strategy, examples, seconds, seed_value, found, counts):
    deadline = time.monotonic() + seconds

    @seed(seed_value)
    @settings(max_examples=examples, deadline=None, derandomize=False, database=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck), print_blob=False)
    @given(strategy)
    def prop(example):
        if time.monotonic() > deadline:
            return
        out = worker().run(example)
        counts[name][out.kind] += 1
        if not out.failed:  # what a fixed library would cost per example (no restarts, no timeouts)
            TIMES[name][0] += out.seconds
            TIMES[name][1] += 1
        if out.failed:
            key = (name, out.kind, signature(out))
            size = len(short_repr(example.kwargs, 100000))
            if key not in found or size < found[key]["size"]:
                found[key] = {"size": size, "example": example, "outcome": out,
                              "count": found.get(key, {}).get("count", 0)}
            found[key]["count"] += 1

    prop()


def report(found, counts, elapsed):
    lines = [f"fuzz campaign: {sum(sum(c.values()) for c in counts.values())} examples in {elapsed:.0f} s, "
             f"worker restarts: {worker().restarts}", ""]
    for name in sorted(counts):
        c = counts[name]
        secs, k = TIMES[name]
        per = f"  ({1000 * secs / k:.0f} ms per passing example)" if k else ""
        lines.append(f"  {name:34s} " + "  ".join(f"{k}={v}" for k, v in sorted(c.items())) + per)
    by_prop = defaultdict(list)
    for (name, kind, sig), rec in found.items():
        by_prop[name].append((FAILURES.index(kind), kind, sig, rec))
    lines += ["", f"{len(found)} distinct failures", ""]
    for name in sorted(by_prop):
        lines.append(f"== {name}")
        for _, kind, sig, rec in sorted(by_prop[name], key=lambda t: (t[0], t[2])):
            ex, out = rec["example"], rec["outcome"]
            lines.append(f"  [{kind}] x{rec['count']}: {sig}")
            if out.kind in ("bad-output", "unnamed-argument") and out.detail:
                lines.append(f"      detail: {out.detail[:300]}")
            if out.exc_type and out.kind != "wrong-exception":
                lines.append(f"      raised: {out.exc_type.split('.')[-1]}: {out.message[:200]}")
            lines.append(f"      example: {short_repr(ex.kwargs, 600)}")
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--examples", type=int, default=200, help="examples per property (default 200)")
    ap.add_argument("--seconds", type=float, default=240.0, help="total time budget (default 240)")
    ap.add_argument("--seed", type=int, default=None, help="hypothesis seed (default: random, printed)")
    ap.add_argument("--only", default="", help="run only properties whose name starts with this")
    ap.add_argument("--json", default=None, help="also write the grouped failures as JSON to this file")
    ap.add_argument("--timeout", type=float, default=5.0,
                    help="seconds before an example counts as a hang (default 5; passing examples take < 0.1 s)")
    args = ap.parse_args(argv)
    names = sorted(n for n in PROPERTIES if n.startswith(args.only))
    if not names:
        ap.error(f"no property starts with {args.only!r}; known: {', '.join(sorted(PROPERTIES))}")
    seed_value = args.seed if args.seed is not None else random.SystemRandom().randrange(2**32)
    print(f"seed {seed_value}; {len(names)} properties; {args.examples} examples each; {args.seconds:g} s budget",
          flush=True)
    worker().timeout = args.timeout
    found, counts = {}, defaultdict(Counter)
    t0 = time.monotonic()
    for i, name in enumerate(names):
        share = max(1.0, (args.seconds - (time.monotonic() - t0)) / (len(names) - i))
        try:
            run_property(name, PROPERTIES[name], args.examples, share, seed_value, found, counts)
        except Exception as exc:  # noqa: BLE001 - a broken strategy must not end the campaign
            counts[name]["harness-error"] += 1
            print(f"  {name}: harness error {type(exc).__name__}: {exc}", flush=True)
        print(f"  {name}: {dict(counts[name])}", flush=True)
    elapsed = time.monotonic() - t0
    print()
    print(report(found, counts, elapsed))
    if args.json:
        rows = [{"property": n, "kind": k, "signature": s, "count": r["count"], "detail": r["outcome"].detail,
                 "exception": r["outcome"].exc_type, "message": r["outcome"].message,
                 "example": short_repr(r["example"].kwargs, 4000)} for (n, k, s), r in sorted(found.items())]
        tmp = f"{args.json}.tmp{os.getpid()}"
        with open(tmp, "w", encoding="utf-8") as fh:
            json.dump({"seed": seed_value, "counts": {k: dict(v) for k, v in counts.items()}, "failures": rows},
                      fh, indent=1)
        os.replace(tmp, args.json)
    worker().stop()
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
