"""customobj's ``MultiObjective`` beside MO-LightGBM, the C++ fork of the KDD 2023 paper (issue 41, item 5).

Both train LambdaRank on two labels of MQ2008 with the same trees, rounds and threads: label 1 is the data
set's relevance, label 2 a feature graded per query (``--feature``, default 41, PageRank) and removed from
the features, exactly as ``benchmarks/multi_objective.py study`` makes them. Every method of customobj's
that the fork also has (``FORK``: its ``mg_combination`` names, read from its ``mg_combinator.hpp`` and
``rank_objective.hpp``) is trained by both on each fold:

- preference methods (``linear``, ``stochastic``, ``chebyshev``, ``epo``, ``wc_mgda``), per ray
  ``(1 - w, w)`` (``w`` on label 2, ``--rays``): customobj's ``MultiObjective(..., method=...,
  preference=(1 - w, w))`` through stock ``lightgbm.train``; the fork with ``mo_preferences = w,1 - w`` (its
  secondary labels come first, the main label last). Reported: each label's test NDCG@10 and the paper's
  maximum weighted loss ``max_k r_k (1 - NDCG@10_k)``.
- constrained methods (``epsilon_constraint``: the fork's ``e_constraint``; ``ec_mgda``), per bound: each
  library's bound is label 2's training cost (mean LambdaRank loss per query, each library's own loss) of
  its own linear model at ``w`` (``--bound-weights``), so some model of each meets it. customobj's costs are
  its per-label loss's (``LambdaRank().loss``, or with ``--per-label lightgbm`` that of
  ``LambdaRank.like_lightgbm()``, the fork's per-label loss); the fork's (:func:`fork_costs`) its
  ``rank_objective.hpp`` formula, checked against the costs the fork prints in every ``e_constraint`` run
  (``cost_check``). Reported: label 1's test NDCG@10, and whether the bound is met on the held-out fold (label
  2's test NDCG@10 at least that linear model's minus 0.01) and on the training data (its cost at most the bound).

Times are the libraries' own: customobj's the ``lightgbm.train`` call (the ``Dataset`` built before it),
MO-LightGBM's the elapsed time its log prints at the last iteration (after it has read the files), so neither
counts reading data. MO-LightGBM is not a dependency: build it yourself and pass the binary (its README; Debian
needs ``libblas-dev liblapack-dev`` and cmake; ``docs/multi-objective.md`` says how it was built here).

    nice -n 10 python benchmarks/mo_lightgbm.py --molgbm /path/to/MO-LightGBM/LightGBM/lightgbm \\
        [--data ../shared/data/mq2008] [--folds 1,2,3,4,5] [--rounds 100] [--rays 0.2,0.5,0.8] \\
        [--methods linear,epo,...] [--bound-weights 0.3,0.7] [--secondary-cap 0.9] [--fork-tunes-u] \\
        [--per-label customobj|lightgbm] [--mgda-u 0.1] [--out mo_lightgbm.json]
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
# customobj's method -> MO-LightGBM's ``mg_combination`` and the settings that make it the same method. ``_FIX_U``:
# customobj's WC-MGDA and EC-MGDA keep ``u`` fixed (``mgda_u`` 0.1 = the fork's ``mo_mgda_min_u``); the fork's own
# default tunes it from its third round, within [``mo_mgda_min_u``, 10] (WC-MGDA) or [.., 0.3] (EC-MGDA, ``max_u``).
_FIX_U = {"mo_mgda_use_fix_u": "true"}
FORK = {"linear": ("linear_scalarization", {}), "stochastic": ("stochastic_label_aggregation", {}),
        "chebyshev": ("chebyshev_scalarization", {}), "epo": ("epo_search", {}), "wc_mgda": ("wc_mgda", _FIX_U),
        "epsilon_constraint": ("e_constraint", {}), "ec_mgda": ("ec_mgda", _FIX_U)}
CONSTRAINED = ("epsilon_constraint", "ec_mgda")
# the methods with the MGDA min-max's ``u`` (customobj's ``mgda_u``, the fork's ``mo_mgda_min_u``; ``--mgda-u``)
U_METHODS = ("wc_mgda", "ec_mgda")
# ``--per-label``: customobj's loss for each label (:func:`per_label_loss`)
PER_LABEL = {"customobj": LambdaRank, "lightgbm": LambdaRank.like_lightgbm}
MO_NAMES = {k: v[0] for k, v in FORK.items()}
_ELAPSED = re.compile(r"([0-9.]+) seconds elapsed, finished iteration (\d+)")
# the weights the fork logs each round (its secondary label first): its combinators', or the share of
# queries per label drawn by stochastic label aggregation
_WEIGHTS = re.compile(r"(?:multigrad-combination-coefficients|multilable-sample-distribution): \[([^\]]*)\]")
# e_constraint's debug line: the round's costs (sum over queries / queries), secondary first
_LOSSES = re.compile(r"losses \(before norm\) =\s*(\S+)\s+(\S+)")
TARGET_SLACK = 0.01  # a bound is met on the test fold when label 2's NDCG@10 is at most this below the target


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


def fork_settings(method, *, w=None, bound=None, cap=None, tune_u=False, u=None):
    """The fork's configuration entries of one model: ``mo_preferences`` (the ray ``(1 - w, w)``, secondary
    first) for the preference methods; for the constrained ones ``mo_ub_sec_obj`` (and ``ec_mgda``'s
    ``mo_ec_mgda_w``, customobj's ``secondary_cap``). The fork needs ``mo_preferences`` in every run (its
    loader sizes ``mo_ec_mu`` by them, ``size() - 1`` of an empty list), so the constrained runs get 0.5,0.5,
    which they do not read. ``tune_u``: the fork's own default for WC-MGDA and EC-MGDA (``u`` tuned from its
    third round), not customobj's method. ``u``: their ``u`` (``mo_mgda_min_u``: the fixed ``u``, or the least
    the tuning may take; None: the fork's default 0.1)."""
    conf = {k: v for k, v in FORK[method][1].items() if not (tune_u and k == "mo_mgda_use_fix_u")}
    if u is not None and method in U_METHODS:
        conf["mo_mgda_min_u"] = f"{u:.9g}"
    if method in CONSTRAINED:
        conf.update(mo_preferences="0.5,0.5", mo_ub_sec_obj=f"{bound:.9g}")
        if method == "ec_mgda":
            conf["mo_ec_mgda_w"] = f"{cap:.9g}"
    else:
        conf["mo_preferences"] = f"{w:.6g},{1 - w:.6g}"
    return conf


def mo_lightgbm(binary, workdir, method, settings, rounds, tag):
    """Train with MO-LightGBM (``model_{tag}.txt`` in ``workdir``) with :func:`fork_settings`' ``settings``.
    Returns the training seconds from its log, the weights of every round (rounds x 2, label 2 first, as the
    fork orders them) and, for ``e_constraint``, the costs it printed at the start of its last round."""
    p = STUDY.LGB
    common = dict(header="true", label_column="name:target", group_column="name:qid", ignore_column="name:label2")
    model = os.path.join(workdir, f"model_{tag}.txt")
    # verbosity 2 (debug) makes e_constraint print its costs; the cone methods print pages at that level
    train = dict(task="train", objective="lambdarank", boosting_type="gbdt", data=os.path.join(workdir, "train.tsv"),
                 output_model=model, mo_labels="name:label2", mg_combination=FORK[method][0], num_iterations=rounds,
                 learning_rate=p["learning_rate"], num_leaves=p["num_leaves"], min_data_in_leaf=p["min_data_in_leaf"],
                 num_threads=p["num_threads"], deterministic="true", force_row_wise="true", metric_freq=1,
                 verbosity=2 if method == "epsilon_constraint" else 1, **common, **settings)
    conf = os.path.join(workdir, f"train_{tag}.conf")
    with open(conf, "w") as f:
        f.write(_conf(train))
    run = subprocess.run([binary, f"config={conf}"], cwd=workdir, capture_output=True, text=True, check=False)
    log = run.stdout + run.stderr
    # The fork's cone-program methods (epo_search, wc_mgda, ec_mgda) end in a segmentation fault after their work
    # (rc 139, after "Finished training" and the model written): a finished run is one that says so.
    if "Finished training" not in log or not os.path.isfile(model):
        raise RuntimeError(f"MO-LightGBM failed ({method}, {settings}, rc {run.returncode}): {log[-2000:]}")
    seconds = [float(s) for s, _ in _ELAPSED.findall(log)]
    if not seconds:
        raise RuntimeError(f"MO-LightGBM printed no timing ({method}, {settings})")
    weights = [[float(v) for v in t.split(",") if v.strip()] for t in _WEIGHTS.findall(log)]
    if len(weights) != rounds or not all(len(v) == 2 and np.isfinite(v).all() for v in weights):
        raise RuntimeError(f"MO-LightGBM logged {len(weights)} rounds of weights for {rounds} rounds, or a "
                           f"weight that is not finite ({method}, {settings}): {weights[-3:]}")
    losses = [(float(a), float(b)) for a, b in _LOSSES.findall(log)]
    return seconds[-1], weights, (losses[-1] if losses else None)


def predict_fork_model(model, split, num_iteration=None):
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
    return booster.predict(np.column_stack([np.repeat(np.arange(group.size), group), y2, X]),
                           num_iteration=num_iteration)


def fork_costs(scores, label, group, truncation=30, sigma=1.0):
    """The fork's LambdaRank cost, mean over queries (``rank_objective.hpp``, ``GetGradientsForOneQuery``, at
    its defaults): per query, rows stably sorted by score; the pairs of unequal labels with the upper row in
    the top ``truncation``; ``|dZ| = (2^hi - 2^lo) |1/log2(2 + r_hi) - 1/log2(2 + r_lo)| / maxDCG@truncation``,
    divided by ``0.01 + |ds|`` unless the query's scores are all equal (``lambdarank_norm``), times
    ``-log sigmoid(sigma ds)`` read from its 2^20-bin table over ``[-25/sigma, 25/sigma]`` (``ds`` the higher
    label's score minus the lower's). This is the cost its bounds (``mo_ub_sec_obj``) are on: it differs from
    customobj's ``LambdaRank().loss`` (no truncation, no norm)."""
    bins, lo = 1024 * 1024, -50.0 / sigma / 2
    factor = bins / (-2 * lo)
    gain = 2.0 ** np.arange(31) - 1.0
    total, start = 0.0, 0
    for size in np.asarray(group, dtype=np.int64):
        s, y = np.asarray(scores[start:start + size], float), np.asarray(label[start:start + size]).astype(int)
        start += size
        order = np.argsort(-s, kind="stable")
        s, y = s[order], y[order]
        ideal = np.sort(y)[::-1][:truncation]
        max_dcg = float(np.sum(gain[ideal] / np.log2(2.0 + np.arange(ideal.size))))
        if max_dcg <= 0 or size < 2:
            continue
        i, j = np.triu_indices(size, 1)
        keep = (i < truncation) & (y[i] != y[j])
        i, j = i[keep], j[keep]
        hi, lo_ = np.where(y[i] > y[j], i, j), np.where(y[i] > y[j], j, i)
        disc = 1.0 / np.log2(2.0 + np.arange(size))
        dz = (gain[y[hi]] - gain[y[lo_]]) * np.abs(disc[hi] - disc[lo_]) / max_dcg
        ds = s[hi] - s[lo_]
        if s[0] != s[-1]:
            dz = dz / (0.01 + np.abs(ds))
        x = -ds  # the table's argument: GetSigmoid(-ds) = 1 / (1 + exp(sigma * bin lower edge))
        idx = np.clip(((x - lo) * factor).astype(np.int64), 0, bins - 1)
        edge = np.where(x <= lo, lo, np.where(x >= -lo, (bins - 1) / factor + lo, idx / factor + lo))
        total += float(np.sum(dz * np.log1p(np.exp(edge * sigma))))
    return total / len(group)


def train_dataset(train_split):
    """The training split as a constructed LightGBM ``Dataset``: built once a fold, shared by its models."""
    X, y, _, group = train_split
    return lgb.Dataset(X, y, group=group, free_raw_data=False).construct()


def per_label_loss(per_label="customobj"):
    """customobj's loss for each label (``--per-label``): ``"customobj"``, ``LambdaRank()`` (every pair, NDCG of
    the whole list, no norm); ``"lightgbm"``, ``LambdaRank.like_lightgbm()``, the fork's own per-label loss
    (LightGBM's ``lambdarank``: upper rows in the top 30, IDCG@30, ``lambdarank_norm``), so that the two sides
    differ only in how they combine the labels. Its cost (what the methods weigh and the bounds are on) is
    still customobj's: that loss with the norm's per-query factor, not the fork's cost (:func:`fork_costs`)."""
    return PER_LABEL[per_label]()


def customobj_model(train_split, method, rounds, ds=None, *, w=None, bound=None, cap=None, per_label="customobj",
                    u=None):
    """customobj's model of the same method and ray (``w``) or bound through stock LightGBM (on ``ds``, the
    split's :func:`train_dataset`, built here when not given), each label trained with
    :func:`per_label_loss`, WC-MGDA and EC-MGDA with ``mgda_u = u`` (None: customobj's default, 0.1); (booster,
    training seconds)."""
    y2 = train_split[2]
    if method in CONSTRAINED:
        kw = dict(bounds=[bound], **({"secondary_cap": cap} if method == "ec_mgda" else {}))
    else:
        kw = dict(preference=[1 - w, w], **({"random_state": 0} if method == "stochastic" else {}))
    if u is not None and method in U_METHODS:
        kw["mgda_u"] = u
    obj = MultiObjective([per_label_loss(per_label), per_label_loss(per_label)], labels=[None, y2], method=method,
                         **kw)
    f = adapters.lightgbm_objective(obj)
    ds = train_dataset(train_split) if ds is None else ds
    t0 = time.perf_counter()
    booster = lgb.train(dict(STUDY.LGB, objective=f), ds, rounds)
    return booster, time.perf_counter() - t0


def customobj_cost(scores, label, group, per_label="customobj"):
    """customobj's cost of label ``label`` (mean :func:`per_label_loss` per query): what its bounds are on."""
    return float(per_label_loss(per_label).loss(scores, label, group) / len(group))


def evaluate(scores, split, w):
    _, y, y2, group = split
    n1, n2 = ndcg(scores, y, group, 10), ndcg(scores, y2, group, 10)
    return dict(ndcg1=n1, ndcg2=n2, mwl=max((1 - w) * (1 - n1), w * (1 - n2)))


class Fold:
    """One fold's splits, its constructed ``Dataset`` and the fork's TSV in a working folder."""

    def __init__(self, args, fold, workdir):
        root = os.path.join(args.data, f"Fold{fold}")
        self.args, self.fold, self.workdir = args, fold, workdir
        self.train = STUDY.load_split(os.path.join(root, "train.txt.gz"), args.feature)
        self.test = STUDY.load_split(os.path.join(root, "test.txt.gz"), args.feature)
        self.ds = train_dataset(self.train)
        write_tsv(os.path.join(workdir, "train.tsv"), self.train)

    def pair(self, method, tag, ours, theirs):
        """Both libraries' models of one method: customobj's with the keywords ``ours`` of
        :func:`customobj_model`, the fork's with those ``theirs`` of :func:`fork_settings`. Returns (customobj
        booster, seconds), (fork's model path, seconds, every round's weights, printed costs)."""
        u = self.args.mgda_u
        mine = customobj_model(self.train, method, self.args.rounds, self.ds, per_label=self.args.per_label,
                               u="auto" if self.args.tune_u else u, **ours)
        tune = self.args.fork_tunes_u or self.args.tune_u
        fork = mo_lightgbm(self.args.molgbm, self.workdir, method,
                           fork_settings(method, tune_u=tune, u=u, **theirs), self.args.rounds, tag)
        return mine, (os.path.join(self.workdir, f"model_{tag}.txt"), *fork)


def preference_rows(fold, method):
    rows = []
    for w in fold.args.rays:
        (booster, ours_s), (model, theirs_s, weights, _) = fold.pair(method, f"{method}_{w:g}", {"w": w}, {"w": w})
        ours = evaluate(booster.predict(fold.test[0]), fold.test, w)
        theirs = evaluate(predict_fork_model(model, fold.test), fold.test, w)
        rows.append(dict(fold=fold.fold, method=method, w=w, customobj=dict(ours, seconds=ours_s),
                         mo_lightgbm=dict(theirs, seconds=theirs_s, last_weights=weights[-1],
                                          mean_weights=np.mean(weights, axis=0).tolist())))
        print(f"Fold{fold.fold} {method:10s} w={w:.2f}: customobj NDCG@10 {ours['ndcg1']:.4f}/{ours['ndcg2']:.4f} "
              f"mwl {ours['mwl']:.4f} {ours_s:.2f} s | MO-LightGBM {theirs['ndcg1']:.4f}/{theirs['ndcg2']:.4f} "
              f"mwl {theirs['mwl']:.4f} {theirs_s:.2f} s", flush=True)
    return rows


def bounds_of(fold):
    """Per bound weight ``w``: each library's bound (label 2's training cost of its own linear model at ``w``,
    in its own cost) and test target (that model's label-2 test NDCG@10)."""
    _, _, y2, group = fold.train
    out = {}
    for w in fold.args.bound_weights:
        (booster, _), (model, *_) = fold.pair("linear", f"bound_{w:g}", {"w": w}, {"w": w})
        out[w] = dict(customobj=dict(bound=customobj_cost(booster.predict(fold.train[0]), y2, group,
                                                          fold.args.per_label),
                                     target=ndcg(booster.predict(fold.test[0]), fold.test[2], fold.test[3], 10)),
                      mo_lightgbm=dict(bound=fork_costs(predict_fork_model(model, fold.train), y2, group),
                                       target=ndcg(predict_fork_model(model, fold.test), fold.test[2], fold.test[3], 10)))
    return out


def constrained_result(scores_test, scores_train, fold, ref, cost):
    """Label 1's test NDCG@10 and whether the bound was met on the test fold and on the training data."""
    n1, n2 = ndcg(scores_test, fold.test[1], fold.test[3], 10), ndcg(scores_test, fold.test[2], fold.test[3], 10)
    c2 = cost(scores_train, fold.train[2], fold.train[3])
    return dict(ndcg1=n1, ndcg2=n2, met_test=bool(n2 >= ref["target"] - TARGET_SLACK), train_cost2=c2,
                met_train=bool(c2 <= ref["bound"]), **ref)


def cost_check(model, fold, printed):
    """The largest relative gap between :func:`fork_costs` at the scores of the last round's start and the
    costs the fork printed there (six significant digits): checks that the fork's bounds are read right."""
    if printed is None:
        return None
    s = predict_fork_model(model, fold.train, num_iteration=fold.args.rounds - 1)
    mine = [fork_costs(s, lab, fold.train[3]) for lab in (fold.train[2], fold.train[1])]
    return float(max(abs(a - b) / abs(b) for a, b in zip(mine, printed)))


def constrained_rows(fold, methods):
    rows, refs = [], bounds_of(fold)
    for method in methods:
        for w, ref in refs.items():
            cap = fold.args.secondary_cap
            (booster, ours_s), (model, theirs_s, weights, printed) = fold.pair(
                method, f"{method}_{w:g}", {"bound": ref["customobj"]["bound"], "cap": cap},
                {"bound": ref["mo_lightgbm"]["bound"], "cap": cap})
            ours = constrained_result(booster.predict(fold.test[0]), booster.predict(fold.train[0]), fold,
                                      ref["customobj"], lambda s, y, g: customobj_cost(s, y, g, fold.args.per_label))
            theirs = constrained_result(predict_fork_model(model, fold.test), predict_fork_model(model, fold.train),
                                        fold, ref["mo_lightgbm"], fork_costs)
            rows.append(dict(fold=fold.fold, method=method, w=w, customobj=dict(ours, seconds=ours_s),
                             mo_lightgbm=dict(theirs, seconds=theirs_s, last_weights=weights[-1],
                                              cost_check=cost_check(model, fold, printed))))
            print(f"Fold{fold.fold} {method:10s} bound from w={w:.2f}: customobj NDCG@10 {ours['ndcg1']:.4f}, label 2 "
                  f"{ours['ndcg2']:.4f} (target {ours['target']:.4f}) met test/train {ours['met_test']:d}/"
                  f"{ours['met_train']:d} {ours_s:.2f} s | MO-LightGBM {theirs['ndcg1']:.4f}, {theirs['ndcg2']:.4f} "
                  f"({theirs['target']:.4f}) {theirs['met_test']:d}/{theirs['met_train']:d} {theirs_s:.2f} s",
                  flush=True)
    return rows


def warm_up(args):
    """Two rounds of every method on a few queries, discarded: numba compiles (or loads from its cache) the
    kernels on a method's first call, which would otherwise be timed in the first fold's first model."""
    X, y, y2, group = STUDY.load_split(os.path.join(args.data, f"Fold{args.folds[0]}", "train.txt.gz"), args.feature)
    rows = int(group[:20].sum())
    small = (X[:rows], y[:rows], y2[:rows], group[:20])
    for method in args.methods:
        customobj_model(small, method, 2, w=0.5, bound=1.0, cap=args.secondary_cap, per_label=args.per_label)


def run_fold(args, fold):
    with tempfile.TemporaryDirectory(prefix="mo_lightgbm_") as workdir:
        f = Fold(args, fold, workdir)
        rows = [r for m in args.methods if m not in CONSTRAINED for r in preference_rows(f, m)]
        constrained = [m for m in args.methods if m in CONSTRAINED]
        return rows + (constrained_rows(f, constrained) if constrained else [])


def _diff(sel, key):
    d, ci = STUDY.interval([r["customobj"][key] - r["mo_lightgbm"][key] for r in sel])
    return f"{key} {d:+.4f} +- {ci:.4f}"


def summarise(rows, args):
    """Per method and ray or bound: customobj minus the fork (mean and 95% t-interval over the folds), the
    bounds met, and the median ratio of the training times."""
    for method in args.methods:
        for w in args.bound_weights if method in CONSTRAINED else args.rays:
            sel = [r for r in rows if r["method"] == method and r["w"] == w]
            ratio = np.median([r["customobj"]["seconds"] / r["mo_lightgbm"]["seconds"] for r in sel])
            if method in CONSTRAINED:
                means = ", ".join(f"{side} NDCG@10 {np.mean([r[side]['ndcg1'] for r in sel]):.4f} met test "
                                  f"{sum(r[side]['met_test'] for r in sel)}/{len(sel)} train "
                                  f"{sum(r[side]['met_train'] for r in sel)}/{len(sel)}"
                                  for side in ("customobj", "mo_lightgbm"))
                parts = [_diff(sel, "ndcg1"), _diff(sel, "ndcg2"), means]
                label = f"bound from w={w:.2f}"
            else:
                parts = [_diff(sel, k) for k in ("ndcg1", "ndcg2", "mwl")]
                label = f"w={w:.2f}"
            print(f"{method} {label}, customobj minus MO-LightGBM over {len(sel)} folds: " + "; ".join(parts)
                  + f"; time ratio (median) {ratio:.2f}")


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    floats = lambda t: [float(v) for v in t.split(",")]  # noqa: E731
    ap.add_argument("--molgbm", required=True, help="MO-LightGBM's lightgbm binary")
    ap.add_argument("--data", default=os.path.join(_HERE, "..", "..", "shared", "data", "mq2008"))
    ap.add_argument("--folds", type=lambda t: [int(v) for v in t.split(",")], default=[1, 2, 3, 4, 5])
    ap.add_argument("--feature", type=int, default=41)
    ap.add_argument("--rounds", type=int, default=100)
    ap.add_argument("--rays", type=floats, default=[0.2, 0.5, 0.8])
    ap.add_argument("--methods", type=lambda t: t.split(","), default=list(FORK))
    ap.add_argument("--bound-weights", type=floats, default=[0.3, 0.7],
                    help="the linear weights on label 2 whose models' training costs are the bounds")
    ap.add_argument("--secondary-cap", type=float, default=0.9,
                    help="ec_mgda's cap on the secondary weight (customobj's secondary_cap, the fork's mo_ec_mgda_w)")
    ap.add_argument("--mgda-u", type=float, default=None,
                    help="WC-MGDA's and EC-MGDA's u on both sides (customobj's mgda_u, the fork's mo_mgda_min_u); "
                         "default: both libraries' 0.1")
    ap.add_argument("--per-label", choices=sorted(PER_LABEL), default="customobj",
                    help="customobj's loss for each label: LambdaRank() (customobj) or LambdaRank.like_lightgbm(), the "
                         "fork's own per-label loss (lightgbm)")
    ap.add_argument("--fork-tunes-u", action="store_true",
                    help="the fork's WC-MGDA and EC-MGDA tune u (its default) instead of keeping it fixed as customobj does")
    ap.add_argument("--tune-u", action="store_true",
                    help="both libraries tune u: customobj's mgda_u='auto' and the fork's default (from 0.1)")
    ap.add_argument("--out", default=None, help="write every model's figures to this JSON file, atomically")
    return ap


def main(argv=None):
    args = parser().parse_args(argv)
    if not os.path.isfile(args.molgbm) or not os.access(args.molgbm, os.X_OK):
        parser().error(f"--molgbm: {args.molgbm!r} is not an executable file")
    bad = [m for m in args.methods if m not in FORK]
    if bad:
        parser().error(f"--methods: {bad} not among {sorted(FORK)}")
    if args.rounds < 2 or not all(0 < w < 1 for w in args.rays + args.bound_weights):
        parser().error("--rounds must be at least 2 and every --rays and --bound-weights entry in (0, 1)")
    if args.mgda_u is not None and not 0 < args.mgda_u <= 1e6:
        parser().error("--mgda-u must be positive (at most 1e6)")
    if args.tune_u and args.mgda_u is not None:
        parser().error("--tune-u tunes u from 0.1 on both sides; leave --mgda-u out")
    if not 0 < args.secondary_cap < 1:
        parser().error("--secondary-cap must be in (0, 1) (the primary keeps 1 minus it)")
    warm_up(args)
    rows = [r for fold in args.folds for r in run_fold(args, fold)]
    summarise(rows, args)
    if args.out:
        atomic_write_bytes(args.out, json.dumps(rows, indent=1).encode())


if __name__ == "__main__":
    main()
