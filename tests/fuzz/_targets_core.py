"""Worker targets: objectives, Prepared reuse, metrics, Groups, label_pairs, best_linear_combination."""
from __future__ import annotations

import numpy as np

from ._targets import BadOutput, finite_array, finite_float, in_range, resolve_group, rows_of, target

#: Every objective class of customobj.objectives with valid keyword options (warm-ups).
OBJECTIVES = {
    "SquaredError": {}, "Logistic": {"sigma": 1.0}, "SquaredHinge": {"C": 1.0}, "McRank": {"n_classes": 3},
    "RankNet": {"sigma": 1.0}, "RankSVM": {"margin": 1.0}, "MPBoost": {"ddf": "logdd"},
    "PreferencePairs": {"pairs": [[0, 1], [2, 3]]}, "QBRank": {"w": 0.5},
    "LambdaRank": {"metric": "ndcg", "k": 3}, "StructuredDCG": {"k": 2},
}
LAMBDARANK_VARIANTS = ({"metric": "err"}, {"metric": "map", "k": 2}, {"metric": "mrr"},
                       {"gain": [0, 1, 3], "truncation": 2, "norm": True})


def build_objective(cls, params, wrap=()):
    import customobj as co

    obj = getattr(co.objectives, cls)(**params)
    for op in wrap:
        if op[0] == "scale":
            obj = op[1] * obj
        else:
            obj = obj + getattr(co.objectives, op[1])(**op[2])
    return obj


def check_grad_hess(out, obj, n, what="grad_hess"):
    if not isinstance(out, tuple) or len(out) != 2:
        raise BadOutput(f"{what} returned {type(out).__name__}, expected (grad, hess)")
    k = obj.n_outputs
    shape = (n,) if k == 1 else (n, k)
    grad = finite_array(out[0], "grad", shape)
    hess = finite_array(out[1], "hess", shape)
    if hess.size and hess.min() < 0:
        raise BadOutput(f"hess has a negative entry {hess.min()}")
    return grad, hess


def check_couplings(out, obj, n):
    if out is None:
        if obj.pairwise:
            raise BadOutput("pair_couplings returned None for a pairwise objective")
        return 0
    i, j, c = out
    m = len(c)
    finite_array(np.asarray(c), "couplings c", (m,))
    for name, idx in (("i", i), ("j", j)):
        idx = finite_array(np.asarray(idx), f"couplings {name}", (m,), kind="iu")
        if m and (idx.min() < 0 or idx.max() >= n):
            raise BadOutput(f"couplings {name} holds row {idx.min()}..{idx.max()} outside 0..{n - 1}")
    return m


def _warm_objectives():
    rng = np.random.default_rng(0)
    y, group = np.array([0.0, 1.0, 2.0, 1.0, 0.0, 1.0]), [4, 2]
    for cls, params in OBJECTIVES.items():
        variants = [params, *LAMBDARANK_VARIANTS] if cls == "LambdaRank" else [params]
        for p in variants:
            obj = build_objective(cls, p)
            yy = (y > 0).astype(float) if cls in ("Logistic", "SquaredHinge") else y
            s = rng.normal(size=(6, 3) if cls == "McRank" else 6)
            obj.grad_hess(s, yy, group, np.ones(6))
            obj.loss(s, yy, group, np.ones(6))
            obj.pair_couplings(s, yy, group)


def _is_bool(x):
    try:
        return np.asarray(x).dtype == np.bool_
    except ValueError:  # ragged
        return False


@target("objective", warm=_warm_objectives)
def objective(cls, params, method, scores, labels, group=None, weight=None, wrap=(), nonzero=False):
    """One objective method on the example's data: finite float64 of the scores' shape, hess >= 0.

    ``nonzero``: the data has a query with different labels, so a ranking gradient must not vanish.
    """
    obj = build_objective(cls, params, wrap)
    g = resolve_group(group)
    if method == "grad_hess":
        out = obj.grad_hess(scores, labels, g, weight)
    elif method == "loss":
        out = obj.loss(scores, labels, g, weight)
    else:
        out = obj.pair_couplings(scores, labels, g)
    if out is not None and _is_bool(scores):
        raise BadOutput(f"{method} accepted boolean scores (scores must be real floating point)")
    n = rows_of(scores)
    if method == "grad_hess":
        grad, _ = check_grad_hess(out, obj, n)
        if nonzero and not np.any(grad):
            raise BadOutput("the gradient is zero everywhere although a query has rows with different labels")
        return float(np.abs(grad).sum())
    if method == "loss":
        return finite_float(out, "loss")
    return check_couplings(out, obj, n)


@target("objective.prepared_reuse", warm=_warm_objectives)
def prepared_reuse(cls_a, params_a, cls_b, params_b, scores, labels, group=None):
    """A Prepared made by objective A and used by B must not skip B's own label checks."""
    a = build_objective(cls_a, params_a)
    b = build_objective(cls_b, params_b)
    g = resolve_group(group)
    prep = a.prepare(labels, g)
    try:
        direct = b.grad_hess(scores, labels, g)
    except (ValueError, TypeError) as exc:
        direct = exc
    via = b.grad_hess_prepared(scores, prep)  # anything but ValueError/TypeError propagates
    if isinstance(direct, Exception):
        raise BadOutput(f"{cls_b} rejects these labels directly ({type(direct).__name__}: {direct}) "
                        f"but trains on them through a Prepared built by {cls_a}")
    n = rows_of(scores)
    check_grad_hess(via, b, n, "grad_hess_prepared")
    if not (np.allclose(via[0], direct[0]) and np.allclose(via[1], direct[1])):
        raise BadOutput(f"{cls_b} gives different gradients through {cls_a}'s Prepared than directly")
    return "same"


# --- metrics --------------------------------------------------------------------------------------
METRICS = ("ndcg", "dcg", "ndcg_mpboost", "err", "average_precision", "reciprocal_rank",
           "precision_at_percent", "misordered_pairs")
_UNIT = {"ndcg", "ndcg_mpboost", "average_precision", "reciprocal_rank"}


def _warm_metrics():
    from customobj import metrics

    s, y, g = np.array([0.3, 0.1, 0.2, 0.5, 0.4]), np.array([2.0, 0.0, 1.0, 1.0, 0.0]), [3, 2]
    for name in METRICS:
        getattr(metrics, name)(s, y, g)
    metrics.ndcg(s, y, g, 2, ties="pessimistic", gain=[0, 1, 3], per_query=True)
    metrics.precision_at_percent(s, y, g, 50)
    metrics.misordered_pairs(s, y, g, per_query=True)
    metrics.get_metric("map@3").func(s, y, g)


def check_metric(fname, out, options):
    empty = options.get("empty", 1.0)
    lo, hi = 0.0, 1.0
    if fname in _UNIT and not isinstance(empty, str):
        lo, hi = min(0.0, float(empty)), max(1.0, float(empty))
    if fname == "misordered_pairs":
        count, frac = out
        if options.get("per_query"):
            finite_array(np.asarray(count), "counts", kind="iu")
            frac = finite_array(np.asarray(frac), "fractions")
            if frac.size:
                in_range(frac.min(), 0, 1, "min fraction")
                in_range(frac.max(), 0, 1, "max fraction")
            return int(np.sum(count))
        if count < 0:
            raise BadOutput(f"negative misordered count {count}")
        in_range(finite_float(frac, "fraction"), 0, 1, "fraction")
        return count
    if options.get("per_query"):
        v = np.asarray(out)
        if empty == "exclude":
            v = v[~np.isnan(v)]
        finite_array(v, f"{fname} per query")
        if fname != "dcg" and v.size:
            in_range(v.min(), lo, hi, f"{fname} min")
            in_range(v.max(), lo, hi, f"{fname} max")
        return v.size
    value = finite_float(out, fname)
    if fname == "dcg":
        if value < 0:
            raise BadOutput(f"dcg = {value} < 0")
    else:
        in_range(value, lo, hi, fname)
    return value


@target("metric", warm=_warm_metrics)
def metric(fname, scores, labels, group, options):
    """A metric is finite (and within its range) or raises."""
    from customobj import metrics

    out = getattr(metrics, fname)(scores, labels, resolve_group(group), **options)
    return check_metric(fname, out, options)


@target("metric.get_metric", warm=_warm_metrics)
def get_metric(name, scores, labels, group):
    from customobj import metrics

    m = metrics.get_metric(name)
    return finite_float(m.func(scores, labels, resolve_group(group)), f"metric {name}")


# --- groups, pairs, combinations ----------------------------------------------------------------
def _python_ints(arg):
    try:
        a = np.asarray(arg)
    except Exception:  # noqa: BLE001
        return None
    if a.ndim != 1 or a.dtype.kind not in "iu" and not (a.dtype == object and all(isinstance(v, int) for v in a)):
        return None
    return [int(v) for v in arg]


@target("groups")
def groups(ctor, arg, n_rows=None):
    """The Groups built must describe exactly the given sizes / qids / ptr (exact Python ints)."""
    from customobj import Groups, as_groups

    if ctor == "Groups":
        g = Groups(arg)
    elif ctor == "as_groups":
        g = as_groups(arg, n_rows)
    else:
        g = getattr(Groups, ctor)(arg, n_rows=n_rows)
    ptr = finite_array(g.ptr, "ptr", kind="i")
    p = [int(v) for v in ptr.tolist()]
    if not p or p[0] != 0 or any(b < a for a, b in zip(p, p[1:])):
        raise BadOutput(f"ptr {p[:8]}... does not start at 0 and rise")
    if n_rows is not None and ctor != "Groups" and p[-1] != n_rows:  # Groups(ptr) takes no n_rows
        raise BadOutput(f"accepted for n_rows={n_rows} but covers {p[-1]} rows")
    sizes = _python_ints(arg) if ctor in ("from_sizes", "as_groups") else None
    if sizes is not None and [b - a for a, b in zip(p, p[1:])] != sizes:
        raise BadOutput(f"sizes {sizes[:6]} became ptr {p[:7]} (int64 wrap-around); "
                        f"true total {sum(sizes)} rows, accepted as {g.n_rows}")
    if ctor == "from_qid" and g.n_rows != len(arg):
        raise BadOutput(f"{len(arg)} qids gave {g.n_rows} rows")
    return g.n_rows


def _warm_pairs():
    import customobj as co

    y, g = np.array([2.0, 0.0, 1.0, 1.0, 0.0]), [3, 2]
    co.label_pairs(y, g)
    co.label_pairs(y, g, max_pairs_per_query=1, seed=3)
    co.best_linear_combination(np.arange(5.0), np.arange(5.0)[::-1], y, g, 2)


@target("label_pairs", warm=_warm_pairs)
def label_pairs(labels, group, options):
    import customobj as co

    i, j, d = co.label_pairs(labels, resolve_group(group), **options)
    m = len(d)
    d = finite_array(d, "diff", (m,))
    i = finite_array(i, "i", (m,), kind="i")
    j = finite_array(j, "j", (m,), kind="i")
    y = np.asarray(labels, dtype=np.float64).reshape(-1)
    if m:
        if min(i.min(), j.min()) < 0 or max(i.max(), j.max()) >= y.size:
            raise BadOutput(f"pair rows outside 0..{y.size - 1}")
        if not np.all(y[i] > y[j]) or not np.array_equal(d, y[i] - y[j]):
            raise BadOutput("a pair does not have labels[i] > labels[j] with diff = labels[i] - labels[j]")
    return m


@target("best_linear_combination", warm=_warm_pairs)
def best_linear_combination(s1, s2, labels, group, options):
    import customobj as co

    alpha, value = co.best_linear_combination(s1, s2, labels, resolve_group(group), **options)
    in_range(finite_float(alpha, "alpha"), 0.0, 1.0, "alpha")
    return finite_float(value, "ndcg")
