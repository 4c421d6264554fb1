"""The data ``customobj compare`` trains on: LETOR folds, three files, or the built-in synthetic data
rotated into folds as LETOR does, each split checked (integer grades, no infinite feature) before
any training.

Examples
--------
>>> import argparse
>>> from customobj.compare.folds import load_folds, parse_folds
>>> args = argparse.Namespace(train=None, valid=None, test=None, letor=None, folds=parse_folds("2"),
...                           synthetic_queries=20, synthetic_docs=5, seed=0)
>>> folds, desc = load_folds(args)
>>> [(k, train.sizes.size, valid.sizes.size, test.sizes.size) for k, train, valid, test in folds]
[(2, 12, 4, 4)]
"""
from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from .._cli_errors import UsageError
from .trainers import Split

__all__ = ["load_folds", "parse_folds", "MAX_GRADE", "SYNTHETIC_QUERIES", "SYNTHETIC_DOCS", "SYNTHETIC_FOLDS"]

#: Built-in synthetic data used when no data is given (customobj.data.synthetic: LETOR-like, grades 0-4).
SYNTHETIC_QUERIES = 1000
SYNTHETIC_DOCS = 20
SYNTHETIC_FEATURES = 20
SYNTHETIC_FOLDS = "1,2,3,4,5"
N_PARTS = 5  # synthetic folds rotate 5 query parts as LETOR does: 3 train, 1 validation, 1 test
#: Largest relevance grade compare accepts: LightGBM's NDCG (the validation curve of every lgb method)
#: has 31 default label gains (grades 0..30) and XGBoost's wants integer grades too.
MAX_GRADE = 30


def parse_folds(text: str) -> list[int]:
    """An argparse ``type=``: ``"1,2"`` -> ``[1, 2]``, distinct fold numbers >= 1."""
    try:
        folds = [int(t) for t in text.split(",") if t.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated fold numbers like 1,2, got {text!r}") from None
    if not folds or min(folds) < 1 or len(set(folds)) != len(folds):
        raise argparse.ArgumentTypeError(f"expected distinct fold numbers >= 1 like 1,2, got {text!r}")
    return folds


def _synthetic_folds(args, folds):
    from ..data import synthetic

    if args.synthetic_queries is None:
        args.synthetic_queries = SYNTHETIC_QUERIES
    if args.synthetic_docs is None:
        args.synthetic_docs = SYNTHETIC_DOCS
    bad = [f for f in folds if f > N_PARTS]
    if bad:
        raise UsageError(f"--folds: the synthetic data has folds 1..{N_PARTS}, got {bad}")
    if args.synthetic_queries < N_PARTS:
        raise UsageError(f"--synthetic-queries must be >= {N_PARTS} (one part per fold)")
    try:
        data = Split.from_data(synthetic(args.synthetic_queries, args.synthetic_docs, SYNTHETIC_FEATURES, seed=args.seed))
    except (ValueError, TypeError) as exc:
        raise UsageError(f"synthetic data: {exc}") from None
    # Shuffle queries once (seeded), cut into 5 parts, rotate like LETOR: parts k..k+2 train, k+3 vali, k+4 test.
    order = np.random.default_rng(args.seed).permutation(data.sizes.size)
    parts = np.array_split(order, N_PARTS)
    ptr = data.ptr

    def take(queries):
        queries = np.sort(np.concatenate(queries))
        rows = np.concatenate([np.arange(ptr[q], ptr[q + 1]) for q in queries])
        return Split(data.X[rows], data.y[rows], data.sizes[queries])

    out = []
    for k in folds:
        idx = [(k - 1 + i) % N_PARTS for i in range(N_PARTS)]
        out.append((k, take([parts[i] for i in idx[:3]]), take([parts[idx[3]]]), take([parts[idx[4]]])))
    desc = f"synthetic ({args.synthetic_queries} queries x {args.synthetic_docs} docs, {SYNTHETIC_FEATURES} features)"
    return out, desc


def _pad(split, width):
    if split.X.shape[1] < width:
        split.X = np.hstack([split.X, np.zeros((split.X.shape[0], width - split.X.shape[1]))])
    return split


def _check_split(split, where):
    """Labels are integer grades 0..MAX_GRADE and features finite or NaN (missing), before any training."""
    y = split.y
    bad = np.flatnonzero(~np.isfinite(y) | (y < 0) | (y > MAX_GRADE) | (y != np.floor(y)))
    if bad.size:
        r = int(bad[0])
        raise UsageError(f"{where}: labels must be non-negative integer grades 0..{MAX_GRADE} (LightGBM's "
                         f"NDCG has {MAX_GRADE + 1} label gains, XGBoost's needs integers); "
                         f"found {y[r]:g} at row {r} (0-based)")
    inf = np.isinf(split.X)
    if inf.any():
        r, c = (int(v) for v in np.argwhere(inf)[0])
        raise UsageError(f"{where}: feature {c + 1} of row {r} (0-based) is {split.X[r, c]}; XGBoost refuses "
                         "infinite features: use a finite value, or NaN for a missing one")
    return split


def _read_file(option, path, load):
    try:
        return Split.from_data(load(path))
    except (ValueError, TypeError, OSError) as exc:
        text = str(exc) if str(path) in str(exc) else f"{path}: {exc}"
        raise UsageError(f"{option} {text}") from None


def _refuse_synthetic_sizes(args, data_option):
    """--synthetic-queries / --synthetic-docs given with real data: an error, not silently ignored
    (checked after the data paths, so a wrong path is named first)."""
    given = [name for name, v in (("--synthetic-queries", args.synthetic_queries),
                                  ("--synthetic-docs", args.synthetic_docs)) if v is not None]
    if given:
        verb, pronoun = ("is", "it") if len(given) == 1 else ("are", "them")
        raise UsageError(f"{' and '.join(given)} {verb} for the built-in synthetic data, not for {data_option}: "
                         f"drop {pronoun}, or drop the data option")


def _refuse_a_single_fold(root):
    """``--letor`` pointed at one fold's folder (train/vali/test files, no Fold<k>): say the options that read it."""
    from ..data import _split_file

    if any(p.is_dir() and p.name.startswith("Fold") for p in root.iterdir()):
        return
    found = {name: _split_file(root, name) for name in ("train", "vali", "test")}
    if found["train"] is None:
        return
    args = " ".join(f"{opt} {found[name] or root / (name + '.txt')}"
                    for opt, name in (("--train", "train"), ("--valid", "vali"), ("--test", "test")))
    raise UsageError(f"--letor {root} holds one fold's files itself, not Fold<k> subfolders: run that fold with "
                     f"{args} (or give --letor the folder above it)")


def load_folds(args: argparse.Namespace) -> tuple[list, str]:
    """[(fold, train, valid, test)] as checked Splits, and a one-line description of the data."""
    from ..data import load_letor, load_letor_folds

    files = [args.train, args.valid, args.test]
    if args.letor and any(files):
        raise UsageError("give either --letor DIR or --train/--valid/--test FILE, not both")
    if any(files):
        names = ("--train", "--valid", "--test")
        if not all(files):
            missing = [n for n, f in zip(names, files) if not f]
            raise UsageError(f"--train, --valid and --test go together; missing {', '.join(missing)}")
        if args.folds:
            raise UsageError("--folds applies to --letor and synthetic data, not to --train/--valid/--test")
        for n, f in zip(names, files):
            if not Path(f).exists():
                raise UsageError(f"{n}: no such file: {f}")
            if not Path(f).is_file():
                raise UsageError(f"{n} {f}: not a file")
        _refuse_synthetic_sizes(args, "--train/--valid/--test")
        splits = [_check_split(_read_file(n, f, load_letor), f"{n} {f}") for n, f in zip(names, files)]
        width = max(s.X.shape[1] for s in splits)
        return [(1, *(_pad(s, width) for s in splits))], f"files {args.train}, {args.valid}, {args.test}"
    if args.letor:
        root = Path(args.letor)
        if not root.is_dir():
            raise UsageError(f"--letor: no such directory: {root}")
        _refuse_a_single_fold(root)
        _refuse_synthetic_sizes(args, "--letor")
        try:
            folds = load_letor_folds(root, args.folds)
        except (ValueError, TypeError, OSError) as exc:
            raise UsageError(f"--letor {exc}") from None
        out = []
        for f in folds:
            parts = []
            for name, d in (("train", f.train), ("vali", f.vali), ("test", f.test)):
                where = f"--letor {root}/Fold{f.fold}/{name}"
                try:
                    split = Split.from_data(d)
                except ValueError as exc:
                    raise UsageError(f"{where}: {exc}") from None
                parts.append(_check_split(split, where))
            out.append((f.fold, *parts))
        return out, f"LETOR folds in {root}"
    return _synthetic_folds(args, args.folds or parse_folds(SYNTHETIC_FOLDS))
