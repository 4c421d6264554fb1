"""Sums over the workers of a ``lightgbm.dask`` training, through Dask ``Variable``s (issue 41, item 3).

``lightgbm.dask`` gives Python code no collective operation (its network is C++'s, and the objective
never sees ``machines``), so a ``MultiObjective`` whose method reads the round's costs or Gram matrix
(``Prepared.collective``) sums them here, with Dask's maintained primitives only: the scheduler's
``distributed.Variable`` (a named value set by one client, read by any, ``get`` waiting for it).

Who trains: ``lightgbm.dask`` trains on the workers that hold its parts (``client.who_has``, decided inside
``fit``), so no one knows the workers before the objective is first called. Each row carries its partition
index (the LightGBM weights, ``adapters._dask_labels``), and every partition lands on exactly one training
worker; so each worker sets one Variable per partition it holds, holding its id (its lowest partition),
and reads all ``n_partitions`` of them: the ids found are the training workers, a worker's rank is its
id's place among them. Then call ``c`` of rank ``r`` sets ``{run}-{c}-{r}`` (the array's float64 bytes)
and reads every rank's, summed in rank order: every worker gets the same bits. Every read waits at most
``timeout`` seconds, then raises ``TimeoutError`` naming it (a worker gone, or one that never calls):
never a hang. A worker that has read call ``c`` knows every worker has finished reading call ``c - 1``
(each set call ``c`` after reading ``c - 1``), so it deletes its own Variables of call ``c - 1``; the
client deletes the last call's after training (:func:`drop_variables`).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from customobj.multi import MultiObjective

__all__ = ["COLLECTIVE_TIMEOUT_S", "VariableCollective", "drop_variables", "lightgbm_refusal", "release_collective"]

#: Seconds a worker waits for another's part of a sum before it raises (a round of a large query set
#: can take minutes on a loaded worker: generous, but finite).
COLLECTIVE_TIMEOUT_S = 600.0


def _timeout_error(what: str, timeout: float) -> TimeoutError:
    return TimeoutError(f"customobj's Dask collective (lightgbm.dask, MultiObjective's sums over the workers): "
                        f"{what} did not arrive within timeout={timeout:g} s; a worker left the training or "
                        "never called the objective")


class VariableCollective:
    """``customobj.objectives.prepared.Collective`` over Dask ``Variable``s, for one worker of one training.

    Parameters
    ----------
    run : str
        The training's unique key (every Variable's name starts with it).
    n_partitions : int
        How many partitions the training data has (each held by one training worker).
    held : sequence of int
        The partitions this worker holds (non-empty).
    timeout : float
        Seconds each read waits at most.
    client : distributed.Client, optional
        Default: the worker's client (``distributed.get_client``).
    """

    def __init__(self, run: str, n_partitions: int, held: Any, *, timeout: float = COLLECTIVE_TIMEOUT_S,
                 client: Any = None) -> None:
        held = sorted({int(p) for p in held})
        if not held or held[0] < 0 or held[-1] >= n_partitions:
            raise ValueError(f"held must name partitions in 0..{n_partitions - 1}, got {held}")
        if not timeout > 0:
            raise ValueError(f"timeout must be > 0 seconds, got {timeout!r}")
        self.run, self.n_partitions, self.held, self.timeout = run, int(n_partitions), held, float(timeout)
        self._client = client
        self.calls = 0  # collective calls made (every worker makes the same ones, in the same order)
        self.rank: "int | None" = None
        self.n_ranks: "int | None" = None

    # --- Variables ------------------------------------------------------------------------------
    def _variable(self, name: str) -> Any:
        from distributed import Variable, get_client

        if self._client is None:
            self._client = get_client()
        return Variable(name, client=self._client)

    def _read(self, name: str, what: str) -> Any:
        from distributed.utils import TimeoutError as DaskTimeout

        try:
            return self._variable(name).get(timeout=self.timeout)
        except (DaskTimeout, TimeoutError):
            raise _timeout_error(what, self.timeout) from None

    def _join(self) -> None:
        """Rank and number of the training workers, from the partitions each holds."""
        me = self.held[0]
        for p in self.held:
            self._variable(f"{self.run}-part-{p}").set(me)
        ids = sorted({int(self._read(f"{self.run}-part-{p}", f"the worker holding partition {p}"))
                      for p in range(self.n_partitions)})
        self.rank, self.n_ranks = ids.index(me), len(ids)

    def _reduce(self, values: np.ndarray, combine: Any) -> np.ndarray:
        values = np.ascontiguousarray(values, dtype="<f8")
        if self.rank is None:
            self._join()
        c = self.calls
        self._variable(f"{self.run}-{c}-{self.rank}").set(values.tobytes())
        parts = []
        for r in range(self.n_ranks or 0):
            raw = self._read(f"{self.run}-{c}-{r}", f"rank {r}'s part of collective call {c}")
            part = np.frombuffer(raw, dtype="<f8")
            if part.shape != values.ravel().shape:
                raise RuntimeError(f"rank {r} gave {part.size} values to collective call {c}, this worker "
                                   f"{values.size}: the workers' calls differ")
            parts.append(part)
        out = parts[0].copy()
        for part in parts[1:]:  # rank order: the same additions, the same bits, on every worker
            out = combine(out, part)
        # every worker has read call c - 1 (each set call c after reading it): this worker's can go
        if c == 0:
            for p in self.held:
                self._variable(f"{self.run}-part-{p}").delete()
        else:
            self._variable(f"{self.run}-{c - 1}-{self.rank}").delete()
        self.calls = c + 1
        return out.reshape(values.shape)

    # --- Collective -----------------------------------------------------------------------------
    def sum(self, values: np.ndarray) -> np.ndarray:
        """Element-wise sum over the training workers (in rank order)."""
        return self._reduce(values, np.add)

    def max(self, values: np.ndarray) -> np.ndarray:
        """Element-wise maximum over the training workers."""
        return self._reduce(values, np.maximum)


def drop_variables(client: Any, run: str, n_partitions: int, calls: int, n_ranks: int) -> None:
    """After a training (finished or failed): delete the Variables that may remain, the partitions'
    and the last call's (``calls`` made, by ``n_ranks`` workers)."""
    from distributed import Variable

    names = [f"{run}-part-{p}" for p in range(n_partitions)]
    if calls > 0:
        names += [f"{run}-{calls - 1}-{r}" for r in range(n_ranks)]
    for name in names:
        Variable(name, client=client).delete()  # a name never set: nothing to delete


def release_collective(client: Any, returned: Any, sent: Any, n_partitions: int) -> None:
    """After ``train_lightgbm``: the Variables its sums may leave deleted. ``sent``: the objective callable
    given to ``fit`` (its ``collective_run``); ``returned``: the one that came back with the model (the calls
    made), else ``sent`` (a failed training: the partitions' Variables only)."""
    from distributed import default_client

    run = getattr(sent, "collective_run", None)
    if run is None:
        return
    back = returned if getattr(returned, "collective_run", None) == run else sent
    drop_variables(client if client is not None else default_client(), run, n_partitions,
                   getattr(back, "calls", 0), getattr(back, "n_ranks", 0))


_LGB_NO_POOLING = (
    "train_lightgbm cannot train this {name}: Unbiased without propensity= (alone or in a sum) estimates its "
    "propensities from all rows every round, and "
    "lightgbm.dask gives a custom objective no way to sum the workers' statistics (no collective operations "
    "reach Python), so each worker would estimate its own. Use train_xgboost (XGBoost's allreduce sums them: "
    "one estimate from all workers' rows), or give known propensities, Unbiased(..., propensity=...) (for "
    "example the position_bias_ that train_xgboost estimated): nothing is estimated then"
)

_LGB_NO_MULTI_POOLING = (
    "train_lightgbm cannot train MultiObjective(method={method!r}) without label columns when one of its losses "
    "converts its labels (Logistic: {{-1, +1}} to {{0, 1}}): each round it reads the per-label costs (and the "
    "m x m Gram matrix) summed over all rows; lightgbm.dask gives a custom objective no sum over the workers, and "
    "train_lightgbm's own (Dask Variables) finds the training workers from the partitions the rows carry, which "
    "only label columns bring. Without columns it makes the data's label the columns, which would change this "
    "objective (the data's label passes through every loss's conversion in turn, a column through its own loss's "
    "only). Use train_xgboost (XGBoost's allreduce sums them: the one-machine weights), or method='linear' (fixed "
    "weights, nothing summed), or give label columns (labels=[None, y2, ...]), converted as you mean them"
)


def lightgbm_refusal(objective: Any) -> str:
    """Why lightgbm.dask cannot train an objective that pools rows, and what can."""
    if isinstance(objective, MultiObjective) and not any(o.pools_rows for o in objective.objectives):
        return _LGB_NO_MULTI_POOLING.format(method=objective.method)
    return _LGB_NO_POOLING.format(name=type(objective).__name__)
