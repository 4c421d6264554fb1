"""The GPU OLE learner's time model (docs/gpu-model.md): the values it assumes, in one home, and the
three least certain ones derived from what one run of ``benchmarks/gpu_suite.py`` measured.

:data:`ASSUMED` holds every parameter of docs/gpu-model.md's formula (its code block prints
:func:`per_tree_ms`); :func:`derive` turns a suite record into its ``model`` section:

1. **histogram updates per second**: the (pair, feature) updates of the ``phases`` fits' timed trees
   (counted on the host by :class:`UpdateCounter`, no read and no synchronisation added) over the
   synchronised time of the pair-histogram launches, and ``eta``, the achieved fraction of peak
   issue: ``(U I + U_R I_R + U_row I_row) / (t SM S f 32)``;
2. **host cost per launch and per split**: the ``ole`` fits' time per tree less the ``phases``
   time of the steps that run the bulk kernels, fitted by least squares to ``c_launch L + c_split S``
   (``L`` launches and ``S`` splits per tree, ``device_stats_``); one fit or a rank-deficient design
   gives the direct difference instead (all of it per split, and all of it per launch);
3. **the couplings kernels with the longest query**: ``grad_hess`` per row with the ``--big-query``
   appended and without it; the big query's own cost per row over the other rows'.

>>> rec = {"simulator": False, "card": {"sm": 2, "clock_hz": 1e9, "schedulers": 4, "source": "x"},
...        "instructions": {"pair": 32, "rho": 0, "row": 0, "source": "x"}, "objectives": {}, "ole": [],
...        "phases": [{"rows": 10, "criterion": "ole", "per_tree_s": 1.0, "steps_s": {"pairs_with": 0.5},
...                    "updates": {"pair": 8e9, "rho": 0, "row": 0}}]}
>>> h = derive(rec)["histograms"][0]
>>> h["updates_per_s"], h["eta"]  # 8e9 updates in 0.5 s; 32 * 8e9 / (0.5 * 2 * 4 * 1e9 * 32)
(16000000000.0, 2.0)
"""
from __future__ import annotations

import numpy as np

#: docs/gpu-model.md's parameters (its code block and benchmarks/gpu_suite.py read them here).
ASSUMED = {
    "U": 10.1e9,  # (pair, feature) updates per ole tree at WEB30K size (issue 42)
    "I": 48, "I_R": 37, "I_row": 55,  # instructions per pair, R and row update (sm_90, benchmarks/sass.py)
    "SM": 132, "S": 4, "F": 1.98e9,  # H200 SXM: SMs, warp schedulers per SM, boost clock (Hz)
    "ROWS": 2.27e6, "FEATURES": 136,
    "DEPTH": {"low": 5.0, "central": 6.5, "high": 8.0},  # splits a row goes through (an estimate)
    "ETA": {"low": 0.80, "central": 0.63, "high": 0.45},  # achieved fraction of peak issue (least certain)
    "SCALE": {"low": 119 / 176, "central": 1.0, "high": 264 / 176},  # issue 42's ole spread
    "FAST_SCALE": {"low": 34 / 51, "central": 1.0, "high": 76 / 51},  # issue 42's ole_fast spread
    "REST_MS": 42.0, "FAST_HOST_MS": 25.0, "FAST_KERNELS_MS": 11.0, "FAST_I_AT": 74,
    "OBJECTIVE_MS": {"low": 10.0, "central": 15.0, "high": 20.0},
    "LIGHTGBM_ROUND_MS": 171.0, "XGBOOST_ROUND_MS": 17.4,  # issue 42: H200 host, 16 threads / H200
    # the host: ~25 ms a tree over ~30 round trips (issue 42, item 3); small kernels 30-150 us a launch (item 4)
    "HOST_PER_SPLIT_S": 25e-3 / 30, "LAUNCH_S": (30e-6, 150e-6),
    # the longest query: no slower per row than the others (issue 42's "Done when": a warp per upper row)
    "BIG_QUERY_ROW_RATIO": 1.0,
    # the host term by growth (docs/gpu-model.md, "The host term by growth"): ms per launch, per blocking
    # read and of Python per split, estimates chosen so best-first reproduces issue 42's ~25 ms host term
    "HOST_LAUNCH_MS": {"low": 0.030, "central": 0.060, "high": 0.090},
    "HOST_READ_MS": {"low": 0.040, "central": 0.080, "high": 0.120},
    "HOST_SPLIT_MS": {"low": 0.150, "central": 0.250, "high": 0.350},
    # (launches, reads, splits) per 31-leaf tree, counted under the simulator (device_stats_, tree 2).
    # ole_fast before its pair placing and row histogram shared a launch and its level's searches one
    # search_batch: best-first 212 / 29 / 30 (counted whole; the host costs above were set against an
    # estimate of 238 / 30 / 30), breadth-first 200 / 7 / 30; breadth-first before a level's row
    # partitions took two launches (mark_rows_level, place_rows_count_sides_level): ole 139, ole_fast 152;
    # breadth-first before a level's pair placings (ole_fast: and row histograms) took one launch
    # (place_sides_row_hist_level): ole 101, ole_fast 71
    # best-first before lookahead (one leaf a batch, a read a split): ole 178 / 29 / 30, ole_fast 184 / 29 / 30.
    # The third count is the card's splits (expansions): best-first lookahead makes a few the tree never uses
    "TREE_COUNTS": {("ole", "best_first"): (100, 10, 30), ("ole", "breadth_first"): (82, 7, 30),
                    ("ole_fast", "best_first"): (70, 11, 32), ("ole_fast", "breadth_first"): (50, 7, 30)},
    # the counts issue 42's rest (REST_MS) was set against: best-first, a read a split. What the rest holds
    # besides the objective and this host term (the small latency-bound kernels) is derived at these
    "CALIBRATION_COUNTS": (178, 29, 30),
    # best-first lookahead's kernel work over a read a split's: the rows of the leaves expanded (their pairs
    # grow less), lookahead 4, 31 leaves, 20 trees, the larger of MQ2008 and OHSUMED Fold 1
    # (benchmarks/lookahead.py): ole 1.037 / 1.108 (pairs 1.020 / 1.090), ole_fast 1.112 / 1.048 (1.008 / 1.006)
    "BEST_FIRST_WORK": {"ole": 1.108, "ole_fast": 1.112},
}
CASES = ("low", "central", "high")
#: The suite's timers (gpu_suite.PHASES) of the pair-histogram launches, and of every step that runs
#: the bulk kernels (those, the row histograms, the objective's gradients): what is not host cost.
PAIR_STEPS = ("pairs_with", "children", "chosen_children")
BULK_STEPS = PAIR_STEPS + ("_row_hist", "gradients")


def per_tree_ms(case: str) -> dict:
    """docs/gpu-model.md's model at WEB30K size, ``case`` low / central / high: milliseconds per tree
    of the pair histograms (``hist``), the rest (``rest``), ``ole`` (``tree``) and ``ole_fast`` (``fast``)."""
    a = ASSUMED
    u_r = a["ROWS"] * a["FEATURES"] * (1 + a["DEPTH"][case])
    hist = (a["U"] * a["I"] + u_r * a["I_R"]) / (a["SM"] * a["S"] * a["F"] * 32 * a["ETA"][case]) * 1e3
    rest = a["REST_MS"] * a["SCALE"][case]
    fast = (a["FAST_HOST_MS"] * a["FAST_SCALE"][case] + a["OBJECTIVE_MS"][case]
            + a["FAST_KERNELS_MS"] * a["FAST_SCALE"][case] * a["I"] / a["FAST_I_AT"])
    return {"hist": hist, "rest": rest, "tree": hist + rest, "fast": fast}


def model_lines() -> list:
    """docs/gpu-model.md's printed model: one line per case, ``ole`` and ``ole_fast`` against the references."""
    lgb, xgb = ASSUMED["LIGHTGBM_ROUND_MS"], ASSUMED["XGBOOST_ROUND_MS"]
    out = []
    for case in CASES:
        m = per_tree_ms(case)
        out.append(f"ole {case:7s}: histograms {m['hist']:5.1f} ms + rest {m['rest']:4.1f} ms = {m['tree']:5.1f} ms, "
                   f"{m['tree'] / lgb:.2f}x a LightGBM round, {m['tree'] / xgb:.1f}x an XGBoost round; "
                   f"ole_fast {m['fast']:4.1f} ms, {m['fast'] / xgb:.2f}x an XGBoost round")
    return out


def host_ms(case: str, criterion: str, growth: str) -> float:
    """The host's milliseconds per tree: counted launches, reads and splits (``TREE_COUNTS``) at the
    estimated cost of each (``HOST_LAUNCH_MS``, ``HOST_READ_MS``, ``HOST_SPLIT_MS``)."""
    return _host_of(case, ASSUMED["TREE_COUNTS"][criterion, growth])


def _host_of(case: str, counts: tuple) -> float:
    a = ASSUMED
    launches, reads, splits = counts
    return launches * a["HOST_LAUNCH_MS"][case] + reads * a["HOST_READ_MS"][case] + splits * a["HOST_SPLIT_MS"][case]


def growth_lines() -> list:
    """docs/gpu-model.md's host term by growth: per case and growth, ``ole`` and ``ole_fast`` per tree with
    the host term from counts (the terms added; ``kernels hidden``: ole_fast's kernels under its launches)."""
    a = ASSUMED
    lgb, xgb, obj = a["LIGHTGBM_ROUND_MS"], a["XGBOOST_ROUND_MS"], a["OBJECTIVE_MS"]
    out = []
    for case in CASES:
        hist = per_tree_ms(case)["hist"]
        small = max(a["REST_MS"] * a["SCALE"][case] - obj[case] - _host_of(case, a["CALIBRATION_COUNTS"]), 0.0)
        for growth in ("best_first", "breadth_first"):
            work = a["BEST_FIRST_WORK"] if growth == "best_first" else {"ole": 1.0, "ole_fast": 1.0}
            fast_kernels = a["FAST_KERNELS_MS"] * a["FAST_SCALE"][case] * a["I"] / a["FAST_I_AT"] * work["ole_fast"]
            ole_host, fast_host = host_ms(case, "ole", growth), host_ms(case, "ole_fast", growth)
            ole = hist * work["ole"] + small + obj[case] + ole_host
            fast = fast_host + obj[case] + fast_kernels
            hidden = max(fast_host, fast_kernels) + obj[case]
            out.append(f"{case:7s} {growth:13s}: ole {ole:5.1f} ms ({ole / lgb:.2f}x LightGBM, {ole / xgb:.1f}x "
                       f"XGBoost), host {ole_host:4.1f} ms; ole_fast {fast:4.1f} ms ({fast / xgb:.2f}x XGBoost; "
                       f"kernels hidden {hidden / xgb:.2f}x), host {fast_host:4.1f} ms")
    return out


def instruction_counts(measured: dict) -> dict:
    """``{"pair", "rho", "row"}``: the longest path of one update of each kind over the kernels of
    ``measured`` (:func:`sass.measure`'s, one arch): a row update has 5 shared adds (tests/test_benchmark_sass.py);
    of a kernel's other loops, the longest is its pair update and the shortest its ``R`` update (it reads no pair)."""
    pair = rho = row = 0
    for by_cc in measured.values():
        for arch, loops in by_cc.items():
            if arch.endswith("_cas"):
                continue
            rows = [u["longest"] for u in loops if u["native"] == 5]
            others = [u["longest"] for u in loops if u["native"] != 5]
            row = max([row] + rows)
            if len(others) > 1:
                pair, rho = max(pair, max(others)), max(rho, min(others))
            elif others:
                pair = max(pair, others[0])
    return {"pair": pair, "rho": rho, "row": row}


class UpdateCounter:
    """The updates of a fit's histogram launches, counted on the host from the counts its tree's leaf
    table holds once its splits are read (:meth:`install`; no read, no synchronisation): ``pair``,
    (pair, feature) updates; ``rho``, (row, feature) updates of the pair histograms' ``R``;
    ``row_built`` and ``row_alone``, (row, feature) updates of the row histograms built, and of those
    launched alone (the rest ride in a split's pair-histogram launch, ``child_hists``)."""

    def __init__(self) -> None:
        self.clear()
        self._tree: tuple | None = None  # (pairs on, ole_fast, features per pair histogram)

    def clear(self) -> None:
        self.pair = self.rho = self.row_built = self.row_alone = 0

    def counts(self) -> dict:
        return {"pair": self.pair, "rho": self.rho, "row": self.row_built - self.row_alone}

    def root(self, tree) -> None:
        """A tree's searched root (``tree``: a backend's tree after ``start``)."""
        fast = bool(tree.fast)
        mask = np.asarray(tree.mask)
        k = getattr(tree, "k", None)
        k = tree.backend.criterion.ole_fast_features if k is None else k
        width = int(min(k, mask.sum())) if fast else int(mask.size)  # ole_fast: the top k; else every feature
        self._tree = (bool(tree.use_pairs), fast, width)
        root = tree.table[0]
        if tree.use_pairs and tree.n_pairs > 0 and width:  # ole_fast: its kept pairs (pend set by the search)
            self.pair += (root.pend - root.pstart) * width
            self.rho += (root.end - root.start) * width

    def split(self, parent, left, right) -> None:
        """A split whose children's pair ranges were just read (``LeafTable.pair_ranges``)."""
        if self._tree is None or not self._tree[0]:
            return
        from customobj.ole.pairhist import PAIRS_DIRECT, PAIRS_LEFT_SMALL, pair_hist_plan

        _, fast, width = self._tree
        n = [c.pend - c.pstart for c in (left, right)]
        rows = [c.end - c.start for c in (left, right)]
        need = [c.hist is not None for c in (left, right)]  # a child never split keeps no histogram
        n_parent = parent.pend - parent.pstart
        if fast or n_parent <= 0:  # ole_fast: each searched child's own pairs, its chosen features
            if n_parent > 0 and width:
                self.pair += sum(x for x, nd in zip(n, need) if nd) * width
                self.rho += sum(r for r, nd in zip(rows, need) if nd) * width
            return
        plan = pair_hist_plan(n[0], n[1], n_parent, float(rows[0]), float(rows[1]), float(rows[0] + rows[1]),
                              need[0], need[1])
        if plan == PAIRS_DIRECT:
            self.pair += sum(x for x, nd in zip(n, need) if nd) * width
            self.rho += sum(r for r, nd in zip(rows, need) if nd) * width
        else:  # the smaller child's pairs and the split pairs; both children's R
            small = 0 if plan == PAIRS_LEFT_SMALL else 1
            self.pair += (n[small] + n_parent - n[0] - n[1]) * width
            self.rho += (rows[0] + rows[1]) * width

    def install(self, tree_class=None, histograms: bool = True):
        """Count from here on: ``tree_class``'s ``start`` (default: the GPU backend's ``DeviceTree``),
        ``LeafTable.pair_ranges`` and (``histograms``) the GPU row histograms' builds; returns a
        function that puts the originals back."""
        from customobj.ole import leaf_table

        if tree_class is None:
            from customobj.ole.cuda.tree import DeviceTree as tree_class
        counter, start, ranges = self, tree_class.start, leaf_table.LeafTable.pair_ranges
        saved = [(tree_class, "start", tree_class.__dict__["start"]),
                 (leaf_table.LeafTable, "pair_ranges", leaf_table.LeafTable.__dict__["pair_ranges"])]

        def counted_start(tree, searched):
            out = start(tree, searched)
            if searched:
                counter.root(tree)
            return out

        def counted_ranges(parent, left, right, counts):
            ranges(parent, left, right, counts)
            counter.split(parent, left, right)

        tree_class.start = counted_start
        leaf_table.LeafTable.pair_ranges = staticmethod(counted_ranges)
        if histograms:
            from customobj.ole.cuda.histograms import DeviceHistograms as H
            rows, alone = H.rows, H.launch_waiting
            saved += [(H, "rows", rows), (H, "launch_waiting", alone)]

            def counted_rows(hists, rows_, n, *args, **kwargs):
                if n > 0 and hists._all_groups[0].shape[0]:
                    counter.row_built += int(n) * hists._n_bins.size
                return rows(hists, rows_, n, *args, **kwargs)

            def counted_alone(hists, *args, **kwargs):
                if hists._waiting is not None:
                    counter.row_alone += hists._waiting.n * hists._n_bins.size
                return alone(hists, *args, **kwargs)
            H.rows, H.launch_waiting = counted_rows, counted_alone

        def restore() -> None:
            for owner, name, original in saved:
                setattr(owner, name, original)
        return restore


def _assumed() -> dict:
    """What docs/gpu-model.md assumes for the three parameters (per case where it gives a range)."""
    a = ASSUMED
    return {"updates_per_s": {c: a["U"] / (per_tree_ms(c)["hist"] / 1e3) for c in CASES}, "eta": dict(a["ETA"]),
            "host_per_split_s": a["HOST_PER_SPLIT_S"], "launch_s": list(a["LAUNCH_S"]),
            "big_query_row_ratio": a["BIG_QUERY_ROW_RATIO"], "instructions": {"pair": a["I"], "rho": a["I_R"],
                                                                              "row": a["I_row"]}}


def _histograms(record: dict, card: dict, ins: dict) -> list:
    peak = card["sm"] * card["schedulers"] * card["clock_hz"] * 32  # thread instructions per second
    out = []
    for r in record.get("phases", []):
        u = r.get("updates") or {}
        t = sum(r["steps_s"].get(k, 0.0) for k in PAIR_STEPS)
        if not u.get("pair") or t <= 0:
            continue  # wse: no pair histogram
        work = u["pair"] * ins["pair"] + u["rho"] * ins["rho"] + u["row"] * ins["row"]
        out.append({"rows": r["rows"], "criterion": r["criterion"], "updates": dict(u), "seconds": t,
                    "updates_per_s": u["pair"] / t, "eta": work / (t * peak)})
    return out


def _host(record: dict) -> dict:
    phases = {(p["rows"], p["criterion"]): p for p in record.get("phases", [])}
    fits = []
    for r in record.get("ole", []):
        p = phases.get((r["rows"], r["criterion"]))
        if p is None:
            continue
        trees = r["device_stats"]["trees"]
        trees = trees[1:] or trees  # the first tree (compilation, uploads) is not timed
        launches = sum(t["launches"] for t in trees) / len(trees)
        # the splits the card made (best-first lookahead: a few the tree never used), each one's Python
        splits = sum(t.get("expansions", t["splits"]) for t in trees) / len(trees)
        bulk = sum(p["steps_s"].get(k, 0.0) for k in BULK_STEPS)
        fits.append({"rows": r["rows"], "criterion": r["criterion"], "per_tree_s": r["per_tree_s"], "bulk_s": bulk,
                     "host_s": r["per_tree_s"] - bulk, "launches": launches, "splits": splits})
    if not fits:
        return {"method": None, "why": "no ole fit with its phases fit", "fits": []}
    X = np.array([[f["launches"], f["splits"]] for f in fits], dtype=np.float64)
    y = np.array([f["host_s"] for f in fits], dtype=np.float64)
    coef, _, rank, _ = np.linalg.lstsq(X, y, rcond=None)
    if len(fits) >= 2 and rank == 2:
        res = y - X @ coef
        for f, e in zip(fits, res):
            f["residual_s"] = float(e)
        return {"method": "least squares", "per_launch_s": float(coef[0]), "per_split_s": float(coef[1]),
                "residual_rms_s": float(np.sqrt(np.mean(res ** 2))), "fits": fits}
    # one equation per fit, two unknowns: without a second independent fit only bounds are known
    return {"method": "direct difference", "per_launch_s": float(np.mean(y / np.maximum(X[:, 0], 1))),
            "per_split_s": float(np.mean(y / np.maximum(X[:, 1], 1))), "fits": fits,
            "why": f"{len(fits)} fit(s) of rank {rank}: all host time charged to launches, then to splits"}


def _longest(record: dict) -> list:
    n_with, n_without, big = record.get("objective_rows"), record.get("objective_rows_without"), record.get("big_query")
    out = []
    for expr, row in record.get("objectives", {}).items():
        without = row.get("without_big_query") if isinstance(row, dict) else None
        if not without or "gpu_s" not in row or not (n_with and n_without and big):
            continue
        per_row = without["gpu_s"] / n_without
        big_row = (row["gpu_s"] - without["gpu_s"]) / big
        out.append({"objective": expr, "per_row_s": row["gpu_s"] / n_with, "per_row_without_s": per_row,
                    "big_query_per_row_s": big_row, "ratio": big_row / per_row if per_row > 0 else None})
    return out


def derive(record: dict) -> dict:
    """The ``model`` section of a gpu_suite record (see the module docstring): computed only from what
    that run measured, beside :func:`_assumed`'s values; under the simulator labelled as not timings."""
    a = ASSUMED
    card = record.get("card") or {"sm": a["SM"], "clock_hz": a["F"], "schedulers": a["S"],
                                  "source": "docs/gpu-model.md (no card read)"}
    ins = record.get("instructions") or {"pair": a["I"], "rho": a["I_R"], "row": a["I_row"],
                                         "source": "docs/gpu-model.md (no cubin compiled)"}
    timings = not record.get("simulator", True)
    return {"timings": timings, "note": None if timings else "numba's CUDA simulator: not timings (a functional run)",
            "card": card, "instructions": ins, "histograms": _histograms(record, card, ins), "host": _host(record),
            "longest_query": _longest(record), "assumed": _assumed()}


def print_model(m: dict) -> None:
    """The ``model`` section beside docs/gpu-model.md's values."""
    a = m["assumed"]
    print("model parameters (docs/gpu-model.md)" + ("" if m["timings"] else f": {m['note']}"))
    c, i = m["card"], m["instructions"]
    print(f"  card: {c['sm']} SMs x {c['schedulers']} schedulers at {c['clock_hz'] / 1e9:.2f} GHz ({c['source']}); "
          f"instructions per pair / R / row update {i['pair']} / {i['rho']} / {i['row']} ({i['source']})")
    ups = "/".join(f"{a['updates_per_s'][k] / 1e9:.0f}" for k in CASES)
    eta = "/".join(f"{a['eta'][k]:.2f}" for k in CASES)
    for h in m["histograms"]:
        print(f"  histograms {h['criterion']} @ {h['rows']:,}: {h['updates']['pair']:.3g} pair updates a tree in "
              f"{h['seconds']:.4f} s = {h['updates_per_s'] / 1e9:.3g} G/s (assumed {ups} low/central/high), "
              f"eta {h['eta']:.3f} (assumed {eta})")
    h = m["host"]
    if h["method"] is None:
        print(f"  host: not derived ({h['why']})")
    else:
        lo, hi = (x * 1e6 for x in a["launch_s"])
        tail = f", residual rms {h['residual_rms_s'] * 1e3:.3f} ms" if "residual_rms_s" in h else f"; {h.get('why')}"
        print(f"  host ({h['method']} over {len(h['fits'])} fits): {h['per_launch_s'] * 1e6:.1f} us a launch "
              f"(assumed {lo:.0f}-{hi:.0f}), {h['per_split_s'] * 1e3:.3f} ms a split "
              f"(assumed {a['host_per_split_s'] * 1e3:.2f}){tail}")
    for q in m["longest_query"]:
        ratio = "n/a" if q["ratio"] is None else f"{q['ratio']:.2f}"
        print(f"  longest query {q['objective']}: {q['big_query_per_row_s'] * 1e9:.1f} ns a row of it, "
              f"{q['per_row_without_s'] * 1e9:.1f} ns a row of the others: {ratio}x "
              f"(assumed <= {a['big_query_row_ratio']:g}x)")
