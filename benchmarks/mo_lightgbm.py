"""customobj's ``MultiObjective`` beside MO-LightGBM, the C++ fork of the KDD 2023 paper (issue 41, item 5).

Both train LambdaRank on two labels of MQ2008 with the same trees, rounds and threads: label 1 is the data
set's relevance, label 2 a feature graded per query (``--feature``, default 41, PageRank) and removed from
the features, exactly as ``benchmarks/multi_objective.py study`` makes them. For each fold and each
preference ray ``(1 - w, w)`` (``w`` on label 2) it trains

- customobj: ``lightgbm.train`` with ``MultiObjective([LambdaRank(), LambdaRank()], labels=[None, y2],
  method=..., preference=(1 - w, w))`` (stock LightGBM, a Python callable);
- MO-LightGBM: its ``lightgbm`` binary on TSV files with ``mg_combination`` = the same method and
  ``mo_preferences = w,1 - w`` (its secondary labels come first, the main label last);

and reports each model's test NDCG@10 on both labels, the paper's maximum weighted loss
``max_k r_k (1 - NDCG@10_k)`` and the training time. Times are the libraries' own: customobj's is the
``lightgbm.train`` call (the ``Dataset`` built before it), MO-LightGBM's the elapsed time its log prints at
the last iteration (after it has read the files), so neither counts reading data.

MO-LightGBM is not a dependency: build it yourself and pass the binary (its README; Debian needs
``libblas-dev liblapack-dev`` and cmake; ``docs/multi-objective.md`` says how it was built here).

    nice -n 10 python benchmarks/mo_lightgbm.py --molgbm /path/to/MO-LightGBM/LightGBM/lightgbm \\
        [--data ../shared/data/mq2008] [--folds 1,2,3,4,5] [--rounds 100] [--rays 0.2,0.5,0.8] \\
        [--methods linear,epo] [--out mo_lightgbm.json]
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import re
import subprocess
import sys
import tempfile
import time

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != _HERE]

import numpy as np  # noqa: E402

from customobj import adapters  # noqa: E402  (before lightgbm: OpenMP wait policy)
from customobj import LambdaRank  # noqa: E402
from customobj._io import atomic_write_bytes  # noqa: E402
from customobj.metrics import ndcg  # noqa: E402
from customobj.multi import MultiObjective  # noqa: E402

import lightgbm as lgb  # noqa: E402


def _study_module():
    """``benchmarks/multi_objective.py``, for its data path and hyperparameters (one home for both)."""
    spec = importlib.util.spec_from_file_location("_multi_objective_study", os.path.join(_HERE, "multi_objective.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


STUDY = _study_module()
# customobj's method name -> MO-LightGBM's ``mg_combination``
MO_NAMES = {"linear": "linear_scalarization", "epo": "epo_search"}
_ELAPSED = re.compile(r"([0-9.]+) seconds elapsed, finished iteration (\d+)")


def write_tsv(path, split):
    """A split as MO-LightGBM reads it: a header, the label ``target``, the query ``qid``, label 2 ``label2``
    and the features ``f0..``; rows in query order (the fork's ``group_column`` wants them contiguous)."""
    X, y, y2, group = split
    qid = np.repeat(np.arange(group.size), group)
    table = np.column_stack([y, qid, y2, X])
    header = "\t".join(["target", "qid", "label2", *(f"f{j}" for j in range(X.shape[1]))])
    with tempfile.NamedTemporaryFile("w", dir=os.path.dirname(path), delete=False, suffix=".part") as f:
        np.savetxt(f, table, delimiter="\t", header=header, comments="", fmt="%.9g")
    os.replace(f.name, path)


def _conf(params):
    return "".join(f"{k} = {v}\n" for k, v in params.items())


def mo_lightgbm(binary, workdir, method, w, rounds, tag):
    """Train with MO-LightGBM (``model_{tag}.txt`` in ``workdir``); returns the training seconds from its log."""
    p = STUDY.LGB
    common = dict(header="true", label_column="name:target", group_column="name:qid",
                  ignore_column="name:label2")
    model = os.path.join(workdir, f"model_{tag}.txt")
    train = dict(task="train", objective="lambdarank", boosting_type="gbdt", data=os.path.join(workdir, "train.tsv"),
                 output_model=model, mo_labels="name:label2", mo_preferences=f"{w:.6g},{1 - w:.6g}",
                 mg_combination=MO_NAMES[method], num_iterations=rounds, learning_rate=p["learning_rate"],
                 num_leaves=p["num_leaves"], min_data_in_leaf=p["min_data_in_leaf"], num_threads=p["num_threads"],
                 deterministic="true", force_row_wise="true", metric_freq=1, verbosity=1, **common)
    conf = os.path.join(workdir, f"train_{tag}.conf")
    with open(conf, "w") as f:
        f.write(_conf(train))
    run = subprocess.run([binary, f"config={conf}"], cwd=workdir, capture_output=True, text=True, check=False)
    log = run.stdout + run.stderr
    # The fork (built here from its last commit) ends every run with a segmentation fault after its work
    # (rc 139, after "Finished training" and the model written): a finished run is one that says so.
    if "Finished training" not in log or not os.path.isfile(model):
        raise RuntimeError(f"MO-LightGBM failed ({method}, w={w}, rc {run.returncode}): {log[-2000:]}")
    seconds = [float(s) for s, _ in _ELAPSED.findall(log)]
    if not seconds:
        raise RuntimeError(f"MO-LightGBM printed no timing ({method}, w={w})")
    return seconds[-1]


def predict_fork_model(model, split):
    """Scores of a model file the fork wrote, through stock LightGBM: its ``task=predict`` crashes before
    writing (the same segmentation fault). The trees are LightGBM's; only the ``parameters:`` block, which stock
    LightGBM cannot parse (its ``[ignore_column: name:label2]``), is left out. The fork's features are the
    TSV's columns after the label: ``qid``, ``label2`` (both ignored in training) and the features."""
    with open(model) as f:
        text = f.read()
    start, end = text.find("\nparameters:\n"), text.find("end of parameters\n")
    if start >= 0 and end > start:
        text = text[:start + 1] + text[end + len("end of parameters\n"):]
    X, _, y2, group = split
    booster = lgb.Booster(model_str=text)
    return booster.predict(np.column_stack([np.repeat(np.arange(group.size), group), y2, X]))


def train_dataset(train_split):
    """The training split as a constructed LightGBM ``Dataset``: built once a fold, shared by its models."""
    X, y, _, group = train_split
    return lgb.Dataset(X, y, group=group, free_raw_data=False).construct()


def customobj_model(train_split, method, w, rounds, ds=None):
    """customobj's model of the same method and ray through stock LightGBM (on ``ds``, the split's
    :func:`train_dataset`, built here when not given); (booster, training seconds)."""
    y2 = train_split[2]
    obj = MultiObjective([LambdaRank(), LambdaRank()], labels=[None, y2], method=method, preference=[1 - w, w])
    f = adapters.lightgbm_objective(obj)
    ds = train_dataset(train_split) if ds is None else ds
    t0 = time.perf_counter()
    booster = lgb.train(dict(STUDY.LGB, objective=f), ds, rounds)
    return booster, time.perf_counter() - t0


def evaluate(scores, split, w):
    _, y, y2, group = split
    n1, n2 = ndcg(scores, y, group, 10), ndcg(scores, y2, group, 10)
    return dict(ndcg1=n1, ndcg2=n2, mwl=max((1 - w) * (1 - n1), w * (1 - n2)))


def run_fold(args, fold):
    root = os.path.join(args.data, f"Fold{fold}")
    train_split = STUDY.load_split(os.path.join(root, "train.txt.gz"), args.feature)
    test_split = STUDY.load_split(os.path.join(root, "test.txt.gz"), args.feature)
    rows = []
    ds = train_dataset(train_split)
    with tempfile.TemporaryDirectory(prefix="mo_lightgbm_") as workdir:
        write_tsv(os.path.join(workdir, "train.tsv"), train_split)
        write_tsv(os.path.join(workdir, "test.tsv"), test_split)
        for method in args.methods:
            for w in args.rays:
                booster, ours_s = customobj_model(train_split, method, w, args.rounds, ds)
                ours = evaluate(booster.predict(test_split[0]), test_split, w)
                tag = f"{method}_{w:g}"
                theirs_s = mo_lightgbm(args.molgbm, workdir, method, w, args.rounds, tag)
                theirs = evaluate(predict_fork_model(os.path.join(workdir, f"model_{tag}.txt"), test_split),
                                  test_split, w)
                row = dict(fold=fold, method=method, w=w, customobj=dict(ours, seconds=ours_s),
                           mo_lightgbm=dict(theirs, seconds=theirs_s))
                rows.append(row)
                print(f"Fold{fold} {method:6s} w={w:.2f}: customobj NDCG@10 {ours['ndcg1']:.4f}/{ours['ndcg2']:.4f} "
                      f"mwl {ours['mwl']:.4f} {ours_s:.2f} s | MO-LightGBM {theirs['ndcg1']:.4f}/{theirs['ndcg2']:.4f} "
                      f"mwl {theirs['mwl']:.4f} {theirs_s:.2f} s", flush=True)
    return rows


def summarise(rows, args):
    for method in args.methods:
        for w in args.rays:
            sel = [r for r in rows if r["method"] == method and r["w"] == w]
            parts = []
            for key in ("ndcg1", "ndcg2", "mwl", "seconds"):
                d, ci = STUDY.interval([r["customobj"][key] - r["mo_lightgbm"][key] for r in sel])
                parts.append(f"{key} {d:+.4f} +- {ci:.4f}")
            ratio = np.median([r["customobj"]["seconds"] / r["mo_lightgbm"]["seconds"] for r in sel])
            print(f"{method} w={w:.2f}, customobj minus MO-LightGBM over {len(sel)} folds: " + ", ".join(parts)
                  + f"; time ratio (median) {ratio:.2f}")


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--molgbm", required=True, help="MO-LightGBM's lightgbm binary")
    ap.add_argument("--data", default=os.path.join(_HERE, "..", "..", "shared", "data", "mq2008"))
    ap.add_argument("--folds", type=lambda t: [int(v) for v in t.split(",")], default=[1, 2, 3, 4, 5])
    ap.add_argument("--feature", type=int, default=41)
    ap.add_argument("--rounds", type=int, default=100)
    ap.add_argument("--rays", type=lambda t: [float(v) for v in t.split(",")], default=[0.2, 0.5, 0.8])
    ap.add_argument("--methods", type=lambda t: t.split(","), default=["linear", "epo"])
    ap.add_argument("--out", default=None, help="write every model's figures to this JSON file, atomically")
    return ap


def main(argv=None):
    args = parser().parse_args(argv)
    if not os.path.isfile(args.molgbm) or not os.access(args.molgbm, os.X_OK):
        parser().error(f"--molgbm: {args.molgbm!r} is not an executable file")
    bad = [m for m in args.methods if m not in MO_NAMES]
    if bad:
        parser().error(f"--methods: {bad} not among {sorted(MO_NAMES)}")
    if args.rounds < 1 or not all(0 < w < 1 for w in args.rays):
        parser().error("--rounds must be positive and every --rays entry in (0, 1)")
    rows = [r for fold in args.folds for r in run_fold(args, fold)]
    summarise(rows, args)
    if args.out:
        atomic_write_bytes(args.out, json.dumps(rows, indent=1).encode())


if __name__ == "__main__":
    main()
