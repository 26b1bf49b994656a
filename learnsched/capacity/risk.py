"""Service-risk accounting: normalised latency, bad-request rate, tails (Appendix A.1-A.2).

A request is bad if it fails or succeeds late. Failures have no completion time, so they
never enter the successful-latency tail, but they stay in the bad-request denominator:
``b = f + (1 - f) S_s(1)`` (Eq. A.2). Averages over runs come in two named kinds that
must not be mixed: *pooled* (weights runs by their request counts) and *per-run mean*
(weights every run equally).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from .. import _capacity
from .._checks import FloatArray, integer
from ._checks import deadlines_after_arrivals, first_index, float_array, same_length, vector

__all__ = [
    "RiskSummary",
    "RunRisk",
    "empirical_tail",
    "normalized_latency",
    "run_risk",
    "summarize_risk",
]


def _request_times(
    a: FloatArray, finish: object, deadline: object, failed: npt.NDArray[np.bool_] | None
) -> tuple[FloatArray, FloatArray]:
    """Validated completion times and deadlines for the validated arrivals ``a``.

    Every check runs over the full arrays, so an error names the caller's index. Deadlines
    may equal arrivals, as in :class:`Trace`; a ``finish`` must be a time or ``inf``
    except where ``failed`` holds.
    """
    f = vector("finish", finish)
    same_length("finish", f, "arrival", a.shape[0])
    d = float_array("deadline", deadline)
    same_length("deadline", d, "arrival", a.shape[0])
    bad = np.isnan(f) | (f == -np.inf)
    if failed is not None:
        bad &= ~failed
    nan = first_index(bad)
    if nan is not None:
        raise ValueError(f"finish[{nan}] must be a time or inf, got {float(f[nan])!r}")
    deadlines_after_arrivals(a, d)
    return f, d


def normalized_latency(arrival: object, finish: object, deadline: object) -> FloatArray:
    """``x_i = (f_i - a_i) / D_i`` with ``D_i = d_i - a_i > 0`` (A.1); ``x_i > 1`` is late.

    Latency is measured from the *scheduled* arrival, so waiting before dispatch counts.
    A request with a zero budget (``d_i = a_i``, which :class:`Trace` allows) has no
    normalised latency and is rejected; :func:`run_risk` still counts it (late iff
    ``f_i > d_i``).

    Parameters
    ----------
    arrival
        Scheduled arrivals ``a_i``, seconds.
    finish
        Completion times ``f_i``, seconds; ``inf`` for a request never completed.
    deadline
        Deadlines ``d_i > a_i``, seconds.
    """
    a = float_array("arrival", arrival)
    f, d = _request_times(a, finish, deadline, None)
    budget = d - a
    flat = first_index(budget <= 0)
    if flat is not None:
        raise ValueError(
            f"deadline[{flat}] = {float(d[flat])!r} equals arrival[{flat}]: a zero latency "
            "budget D cannot be normalised (A.1 needs D > 0)"
        )
    return (f - a) / budget


def empirical_tail(latency: object, points: object) -> FloatArray:
    """The empirical tail ``S_s(x) = |{i : x_i > x}| / N_s`` of successful requests (A.1).

    Parameters
    ----------
    latency
        Normalised latencies ``x_i`` of the successful requests (``inf`` allowed).
    points
        Where to evaluate the tail, any order.

    Raises
    ------
    ValueError
        With no successful request the tail is undefined (A.2).
    """
    x = np.sort(np.array(latency, dtype=np.float64))
    if x.ndim != 1 or x.shape[0] == 0:
        raise ValueError("latency must be a non-empty one-dimensional array (N_s > 0)")
    if np.isnan(x[-1]):  # sort puts NaN last
        raise ValueError("latency must not contain NaN")
    at = float_array("points", points)
    counts = np.empty(at.shape[0], dtype=np.intp)
    _capacity.tail_counts(x, at, counts)
    return np.asarray(counts / x.shape[0], dtype=np.float64)


@dataclass(frozen=True)
class RunRisk:
    """Request outcomes of one run (A.2).

    Parameters
    ----------
    requests
        ``N > 0``, all requests, failures included.
    failures
        ``N_f``, requests that failed (no completion time).
    late
        ``N_l``, successful requests with normalised latency ``x > 1``.
    """

    requests: int
    failures: int
    late: int

    def __post_init__(self) -> None:
        for name, low in (("requests", 1), ("failures", 0), ("late", 0)):
            object.__setattr__(self, name, integer(name, getattr(self, name), low))
        if self.failures + self.late > self.requests:
            raise ValueError(
                f"failures + late must be <= requests, got {self.failures} + {self.late} "
                f"> {self.requests}"
            )

    @property
    def successes(self) -> int:
        """``N_s = N - N_f``."""
        return self.requests - self.failures

    @property
    def bad(self) -> int:
        """Bad requests, ``N_f + N_l``: failures and late successes are disjoint."""
        return self.failures + self.late

    @property
    def bad_rate(self) -> float:
        """``b = (N_f + N_l) / N`` (A.2, count form)."""
        return self.bad / self.requests

    @property
    def failure_fraction(self) -> float:
        """``f = N_f / N``."""
        return self.failures / self.requests

    @property
    def tail_at_one(self) -> float | None:
        """``S_s(1) = N_l / N_s``, the late fraction of successes; None if ``N_s = 0``."""
        return self.late / self.successes if self.successes else None


def run_risk(
    arrival: object, finish: object, deadline: object, failed: object | None = None
) -> RunRisk:
    """Count failures and late successes of one run (A.1-A.2).

    A success is late iff ``f_i > d_i``, which for ``D_i > 0`` is ``x_i > 1``; requests
    with a zero budget (``d_i = a_i``) count too, late unless they finish at arrival.

    Parameters
    ----------
    arrival, finish, deadline
        As for :func:`normalized_latency`, with ``d_i >= a_i``; ``finish`` of a failed
        request is ignored (it may be NaN). Errors name indices of the full arrays.
    failed
        Boolean per request, True where the request failed (default: none failed).
    """
    a = float_array("arrival", arrival)
    fail = np.zeros(a.shape[0], dtype=bool) if failed is None else np.asarray(failed)
    if fail.dtype != np.bool_ or fail.shape != a.shape:
        raise ValueError(f"failed must be {a.shape[0]} booleans, got {fail.dtype} {fail.shape}")
    f, d = _request_times(a, finish, deadline, fail)
    late = np.count_nonzero(~fail & (f > d))
    return RunRisk(requests=f.shape[0], failures=int(fail.sum()), late=int(late))


@dataclass(frozen=True)
class RiskSummary:
    """Bad-request rates over repeated runs, pooled and per-run, never mixed (A.2).

    Parameters
    ----------
    pooled_bad_rate
        ``sum_r bad_r / sum_r N_r``: every request weighs the same.
    per_run_mean_bad_rate
        ``mean_r (bad_r / N_r)``: every run weighs the same.
    pooled_tail_at_one
        ``sum_r N_l,r / sum_r N_s,r``, or None without successes.
    max_run_bad_rate
        The worst run's bad-request rate.
    runs
        Number of runs.
    """

    pooled_bad_rate: float
    per_run_mean_bad_rate: float
    pooled_tail_at_one: float | None
    max_run_bad_rate: float
    runs: int


def summarize_risk(runs: Sequence[RunRisk]) -> RiskSummary:
    """Pooled and per-run-mean bad-request rates of ``runs`` (at least one)."""
    if not runs:
        raise ValueError("runs must hold at least one RunRisk, got none")
    for i, run in enumerate(runs):
        if not isinstance(run, RunRisk):
            raise TypeError(f"runs[{i}] must be a RunRisk, got {type(run).__name__}")
    successes = sum(run.successes for run in runs)
    rates: npt.NDArray[np.float64] = np.array([run.bad_rate for run in runs])
    return RiskSummary(
        pooled_bad_rate=sum(run.bad for run in runs) / sum(run.requests for run in runs),
        per_run_mean_bad_rate=float(rates.mean()),
        pooled_tail_at_one=sum(run.late for run in runs) / successes if successes else None,
        max_run_bad_rate=float(rates.max()),
        runs=len(runs),
    )
