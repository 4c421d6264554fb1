"""The training loop of ``customobj compare``: every method on every fold, tuned or not, per seed.

Per fold, each single method (the listed ones and the members of ``ens:A+B`` ensembles, each once)
is trained -- after ``--tune N`` trials of search when asked (:mod:`.tuning`) -- once per seed;
then every listed method is scored on the test part, an ensemble by combining its members' runs
of the same seed (:mod:`.ensemble`). A method listed alone and inside an ensemble is trained once.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Callable, Sequence

import numpy as np

from .._cli_errors import RunError, one_line, stderr_held
from . import report
from .ensemble import EnsembleSpec, combine, member_specs
from .trainers import Settings, validation_score
from .tuning import tune

__all__ = ["Outcome", "run_all", "n_runs", "seed_list", "tuning_note", "seed_independent", "check_seeds"]


@dataclass
class Outcome:
    """Everything the report needs: result rows (one per method, fold and seed), validation curves
    (first seed, per fold), per-query test NDCG@10 (per fold, mean over seeds), the tuning records
    (``{method: {fold: record}}``, empty without ``--tune``), the ensembles' alphas and the per-position
    curves each click method estimated (``{method: [{"fold", "seed", "quantity", "estimated"}]}``, compare
    --clicks / --click-log; ``quantity`` is :data:`customobj.compare.report.EXAMINATION` for ``position_bias_``)."""

    rows: list = field(default_factory=list)
    curves: dict = field(default_factory=dict)
    per_query: dict = field(default_factory=dict)
    tuning: dict = field(default_factory=dict)
    alphas: dict = field(default_factory=dict)
    position_bias: dict = field(default_factory=dict)


def seed_list(seed: int, n_seeds: int) -> list[int]:
    """The seeds of the repeated runs: ``seed, seed + 1, ..., seed + n_seeds - 1``."""
    return [seed + i for i in range(n_seeds)]


def seed_independent(specs: Sequence, settings: Settings, sample: Any, train_fn: Callable) -> list[str]:
    """The labels of the single methods whose training the seed does not change: two 2-round runs on
    ``sample`` (seeds ``settings.seed`` and the next) score it identically. Nothing random by default
    (LightGBM and XGBoost without bagging, feature sampling or random pairs; customobj's objectives
    with their own seeds): ``--seeds K`` would train K identical copies of them."""
    same = []
    for spec in member_specs(list(specs)):
        runs = [_held(train_fn)(spec, replace(settings, rounds=2, early_stopping=0, seed=settings.seed + k),
                                sample, sample, sample) for k in (0, 1)]
        if np.array_equal(runs[0].test_scores, runs[1].test_scores):
            same.append(spec.label)
    return same


def check_seeds(specs: Sequence, settings: Settings, sample: Any, train_fn: Callable, n_seeds: int) -> list[str]:
    """``--seeds K > 1`` without ``--tune``: refused (:class:`UsageError`) when the seed changes no method,
    else the note on those it does not change (empty when it changes every one)."""
    from .._cli_errors import UsageError

    same = seed_independent(specs, settings, sample, train_fn)
    if len(same) == len(member_specs(list(specs))):
        raise UsageError(f"--seeds {n_seeds}: the seed changes nothing in {', '.join(same)} (no bagging, feature "
                         "sampling or random pairs at these settings), so the runs would be identical copies; give "
                         "a method randomness, e.g. lgb:LambdaRank(bagging_fraction=0.8,bagging_freq=1) or "
                         "xgb:rank:ndcg(subsample=0.8), or use --tune, or drop --seeds")
    return [f"note: --seeds {n_seeds}: the seed changes nothing in {', '.join(same)} (no bagging, feature sampling or "
            "random pairs): their seed spread is 0"] if same else []


def n_runs(specs: Sequence, n_folds: int, n_seeds: int, n_trials: int) -> int:
    """Training runs of the whole comparison (the progress bar's total): per fold and single method,
    ``n_trials`` trials and the seeds beyond the first (whose run is the chosen trial), or one run
    per seed without tuning. Ensembles add no runs."""
    per_method = n_trials + n_seeds - 1 if n_trials else n_seeds
    return n_folds * len(member_specs(list(specs))) * per_method


def tuning_note(n_trials: int, n_seeds: int) -> str:
    """The table's sentence on how the results were tuned."""
    seeds = f"; then {n_seeds} seeds of the chosen setting" if n_seeds > 1 else ""
    return (f"tuned: {n_trials} trials of seeded Optuna TPE per method and fold, on the validation part "
            f"(chosen values and trial scores: results.json){seeds}; ensembles combine their tuned members")


def _held(fn):
    """``fn`` with descriptor 2 held per call (see :func:`customobj._cli_errors.stderr_held`)."""
    def call(*args, **kwargs):
        with stderr_held():
            return fn(*args, **kwargs)
    return call


def _guarded(what, fn, *args, **kwargs):
    """Run one training step; any failure becomes a one-line RunError naming ``what``."""
    try:
        return fn(*args, **kwargs)
    except RunError:
        raise
    except Exception as exc:  # noqa: BLE001 - say which run failed, then stop
        raise RunError(f"{what} failed: {type(exc).__name__}: {one_line(exc)}") from None


def run_all(specs: Sequence, folds: Sequence, settings: Settings, *, seeds: Sequence[int], n_trials: int,
            train_fn: Callable, bar: Any, scoring: report.Scoring = report.LABELS) -> Outcome:
    """Train and score ``specs`` on ``folds`` (``[(fold, train, valid, test)]``); see the module doc.

    ``train_fn`` has the signature of :func:`customobj.compare.trainers.train`; ``bar`` is a tqdm
    bar advanced once per training run (trials included); ``scoring`` what the test part is scored with
    (the validation column is what early stopping watched, :func:`customobj.compare.trainers.validation_score`).
    """
    labels = [s.label for s in specs]
    out = Outcome(curves={lab: [] for lab in labels}, per_query={lab: [] for lab in labels})
    singles = member_specs(list(specs))
    many = len(seeds) > 1
    for fold, tr, va, te in folds:
        trained = {}  # (label, seed) -> TrainResult
        for spec in singles:
            lab, sp, st = spec.label, spec, settings
            where = f"{lab} on fold {fold}"
            if n_trials:
                def on_trial(number, lab=lab, fold=fold):
                    bar.set_description(f"fold {fold} {lab} tuning ({number + 1}/{n_trials} trials done)")
                    bar.update(1)

                bar.set_description(f"fold {fold} {lab} tuning (0/{n_trials} trials done)")
                # stderr is held per trial, not around the search, so the progress bar moves meanwhile
                tuned = _guarded(f"{where} (tuning)", tune, spec, replace(settings, seed=seeds[0]), n_trials,
                                 tr, va, te, seed=seeds[0], train_fn=_held(train_fn), on_trial=on_trial)
                trained[(lab, seeds[0])] = tuned.result
                out.tuning.setdefault(lab, {})[str(fold)] = tuned.record(scoring.valid)
                sp, st = tuned.spec, tuned.settings
            for seed in seeds:
                if (lab, seed) in trained:
                    continue
                bar.set_description(f"fold {fold} {lab}" + (f" seed {seed}" if many else ""))
                trained[(lab, seed)] = _guarded(where + (f" seed {seed}" if many else ""), _held(train_fn),
                                                sp, replace(st, seed=seed), tr, va, te)
                bar.update(1)
        for spec in specs:
            _score(out, spec, fold, va, te, seeds, trained, settings, scoring)
    return out


def _score(out, spec, fold, va, te, seeds, trained, settings, scoring):
    lab = spec.label
    per_seed = []
    for seed in seeds:
        if isinstance(spec, EnsembleSpec):
            a, b = (trained[(m.label, seed)] for m in spec.members)
            res, alpha = _guarded(f"{lab} on fold {fold} (combination)", combine, a, b, va)
            out.alphas.setdefault(lab, []).append({"fold": fold, "seed": seed, "alpha": alpha})
        else:
            res = trained[(lab, seed)]
            curves = {report.EXAMINATION: res.position_bias} if res.position_bias is not None else {}
            curves.update(res.click_curves or {})
            for quantity, values in curves.items():
                out.position_bias.setdefault(lab, []).append(
                    {"fold": fold, "seed": seed, "quantity": quantity, "estimated": np.asarray(values).tolist()})
        metrics, pq = report.evaluate(res.test_scores, te, scoring)
        valid = validation_score(settings, res.valid_scores, va)
        out.rows.append({"method": lab, "fold": fold, "seed": seed, **metrics, scoring.valid: valid,
                         "train_time_s": res.train_time, "best_round": res.best_round,
                         "rounds_trained": res.rounds_trained})
        if seed == seeds[0]:
            out.curves[lab].append(res.curve)
        per_seed.append(pq)
    out.per_query[lab].append(np.mean(per_seed, axis=0))
