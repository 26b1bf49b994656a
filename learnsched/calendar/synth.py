"""Synthetic request traces fitted on a real one: bursts from the trace, a daily cycle assumed.

A one-hour trace gives a handful of horizons; a study that must tell policies apart needs
hundreds. :func:`fit_synthesizer` fits a model of the trace's arrival process and
:meth:`TraceSynthesizer.generate` draws traces of any length from it:

* **Bursts** (fitted): the trace is cut into ``bin_s`` bins, each labelled *calm* or *busy*
  by a two-means split of their counts, and into the runs of consecutive bins of one
  label. The process alternates between the two states, and each stay is one of the
  trace's runs of that state, drawn at random and replayed whole (its arrivals at their
  offsets, with their token counts): a block bootstrap of runs. The clusters of arrivals,
  the heavy-tailed idle gaps inside calm runs and the mean rate of the trace are kept.
* **A daily cycle** (assumed): bursts come more often by day. A calm stay that begins at
  time ``t`` is shortened by the factor ``m(t) = 1 + amplitude * cos(2 pi (t - peak) /
  1 day)`` (its arrivals with it), while every burst is replayed as the trace had it: the
  bursts' own intensity, which sets how deep the queue gets, stays the fitted one. A
  one-hour trace cannot show a day: ``amplitude`` (default 0.5: calm stays from 1/1.5 to
  1/0.5 of the fitted ones) and ``peak_hour`` are assumptions to set to the service's
  own; the generated trace's mean rate is reported beside the source's.

Every synthetic trace is labelled: the CSV has a ``Synthetic`` column in every row
(:data:`SYNTHETIC_COLUMN`, read by :func:`~learnsched.calendar.traces.is_synthetic`), its
timestamps start on 2000-01-01, and the studies print and record ``synthetic``.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any

import numpy as np
import numpy.typing as npt

from .._atomic import atomic_write
from .._checks import FloatArray, integer, nonnegative, positive
from .._csvfile import MAX_ROWS
from .traces import AZURE_COLUMNS, SYNTHETIC_COLUMN, SYNTHETIC_LABEL, TokenTrace

__all__ = ["DAY_S", "TraceSynthesizer", "fit_synthesizer", "write_synthetic_trace"]

DAY_S = 86_400.0
"""Seconds in a day."""

_ORIGIN = datetime(2000, 1, 1, tzinfo=timezone.utc)  # synthetic timestamps start here


@dataclass(frozen=True, eq=False)
class _State:
    """One state of the burst process: the trace's runs of it, replayed whole."""

    stays_s: FloatArray  # run lengths, seconds
    offsets: tuple[FloatArray, ...]  # per run: its arrivals after the run's start, seconds
    tokens: tuple[npt.NDArray[np.float64], ...]  # per run: (n, 2) context, generated tokens


@dataclass(frozen=True, eq=False)
class TraceSynthesizer:
    """A burst process fitted on a trace, with an assumed daily cycle.

    Attributes
    ----------
    bin_s
        The bin length the states were labelled on, seconds.
    threshold
        Arrivals per bin above which a bin is busy.
    amplitude
        Relative swing of the daily cycle, in [0, 1).
    peak_hour
        Hour of the day (0-24, from the trace's start) at which the rate peaks.
    source_requests, source_span_s
        The fitted trace's size and length.
    """

    bin_s: float
    threshold: float
    amplitude: float
    peak_hour: float
    source_requests: int
    source_span_s: float
    _states: tuple[_State, ...]

    @property
    def mean_rate(self) -> float:
        """Arrivals per second of the fitted trace (the daily mean), 1/s."""
        return self.source_requests / self.source_span_s if self.source_span_s > 0 else 0.0

    def to_json(self) -> dict[str, Any]:
        """The model's parameters and its source's size."""
        return {
            "synthetic": True,
            "bin_s": self.bin_s,
            "busy_threshold": self.threshold,
            "amplitude": self.amplitude,
            "peak_hour": self.peak_hour,
            "source_requests": self.source_requests,
            "source_span_s": self.source_span_s,
            "states": [
                {
                    "runs": int(s.stays_s.size),
                    "mean_stay_s": float(np.mean(s.stays_s)),
                    "requests": int(sum(o.size for o in s.offsets)),
                }
                for s in self._states
            ],
        }

    def generate(self, duration_s: float, rng: np.random.Generator) -> TokenTrace:
        """A synthetic trace of ``duration_s`` seconds (arrivals from 0), labelled so by
        :func:`write_synthetic_trace`."""
        duration_s = positive("duration_s", duration_s)
        # Bounded before the loop (duration x rate may be huge: 1e300 s ran until memory
        # ran out), and in it: the daily cycle speeds calm stays up by 1 + amplitude.
        expected = self.mean_rate * duration_s
        if not expected <= MAX_ROWS:
            raise ValueError(
                f"synthetic trace rows: mean_rate x duration_s = {self.mean_rate:g} x "
                f"{duration_s:g} = {expected:g} exceeds the limit of {MAX_ROWS}"
            )
        times: list[FloatArray] = []
        tokens: list[npt.NDArray[np.float64]] = []
        rows = 0
        t = 0.0
        k = int(rng.integers(0, len(self._states)))
        while t < duration_s:
            state = self._states[k]
            run = int(rng.integers(0, state.stays_s.size))
            # Calm stays (state 0 when the trace has both) follow the daily cycle.
            speed = self.cycle(t) if k == 0 and len(self._states) == 2 else 1.0
            times.append(t + state.offsets[run] / speed)
            tokens.append(state.tokens[run])
            rows += state.offsets[run].size
            if rows > MAX_ROWS:
                raise ValueError(
                    f"synthetic trace rows: more than {MAX_ROWS} within {t:g} of "
                    f"duration_s = {duration_s:g} s"
                )
            t += float(state.stays_s[run]) / speed
            k = (k + 1) % len(self._states)
        arrival = np.concatenate(times)
        pairs = np.concatenate(tokens)
        keep = arrival < duration_s
        arrival, pairs = arrival[keep], pairs[keep]
        if arrival.size == 0:
            raise ValueError(f"no request falls in {duration_s:g} s: generate a longer trace")
        return TokenTrace(arrival - arrival[0], pairs[:, 0].copy(), pairs[:, 1].copy())

    def cycle(self, t_s: float) -> float:
        """The daily cycle's factor ``m(t)`` at clock time ``t_s``."""
        phase = 2.0 * math.pi * (t_s - self.peak_hour * 3600.0) / DAY_S
        return 1.0 + self.amplitude * math.cos(phase)


def _two_means(counts: FloatArray) -> float:
    """The count threshold of a two-means split (busy: above it)."""
    threshold = float(np.median(counts))
    for _ in range(100):
        low, high = counts[counts <= threshold], counts[counts > threshold]
        if low.size == 0 or high.size == 0:
            return threshold
        updated = 0.5 * (float(np.mean(low)) + float(np.mean(high)))
        if updated == threshold:
            break
        threshold = updated
    return threshold


def fit_synthesizer(
    trace: TokenTrace, bin_s: float = 10.0, amplitude: float = 0.5, peak_hour: float = 14.0
) -> TraceSynthesizer:
    """Fit the burst process on ``trace`` (see the module docstring).

    Parameters
    ----------
    trace
        The real trace (Azure format, arrivals from 0).
    bin_s
        Bin length for the calm/busy labels, seconds.
    amplitude
        Relative swing of the assumed daily cycle, in [0, 1).
    peak_hour
        Hour of the day at which the rate peaks (0-24; hour 0 is the synthetic trace's
        start).

    Raises
    ------
    ValueError
        A trace of fewer than 3 requests or no time span; bad parameters.
    """
    bin_s = positive("bin_s", bin_s)
    amplitude = nonnegative("amplitude", amplitude)
    if amplitude >= 1.0:
        raise ValueError(f"amplitude must be < 1 (the rate stays positive), got {amplitude!r}")
    peak_hour = nonnegative("peak_hour", peak_hour)
    if peak_hour > 24.0:
        raise ValueError(f"peak_hour must be in [0, 24], got {peak_hour!r}")
    arrival = np.asarray(trace.arrival, dtype=np.float64)
    if arrival.size < 3 or not arrival[-1] > arrival[0]:
        raise ValueError("the trace needs at least 3 requests over a positive span to fit")
    span = float(arrival[-1] - arrival[0])
    if not span / bin_s <= MAX_ROWS:  # counted before bincount allocates them (or inf)
        raise ValueError(
            f"bin_s = {bin_s:g} cuts the trace's {span:g} s into {span / bin_s:g} bins, "
            f"over the limit of {MAX_ROWS}"
        )
    bins = max(1, math.ceil(span / bin_s))
    index = np.minimum(((arrival - arrival[0]) / bin_s).astype(np.int64), bins - 1)
    counts = np.bincount(index, minlength=bins).astype(np.float64)
    threshold = _two_means(counts)
    busy = counts > threshold
    tokens = np.stack([trace.context_tokens, trace.generated_tokens], axis=1)
    relative = arrival - arrival[0]
    states = []
    for label in (False, True):
        where = busy == label
        if not np.any(where):
            continue
        # Runs of consecutive bins of this label, and the requests that arrived in each.
        edges = np.flatnonzero(np.diff(np.concatenate(([0], where.astype(np.int8), [0]))))
        starts, ends = edges[0::2], edges[1::2]
        first = np.searchsorted(index, starts, side="left")
        last = np.searchsorted(index, ends, side="left")
        offsets = tuple(
            relative[a:b] - s * bin_s for a, b, s in zip(first, last, starts, strict=True)
        )
        pieces = tuple(tokens[a:b] for a, b in zip(first, last, strict=True))
        stays = (ends - starts).astype(np.float64) * bin_s
        states.append(_State(stays, offsets, pieces))
    return TraceSynthesizer(
        bin_s, threshold, amplitude, peak_hour, int(arrival.size), span, tuple(states)
    )


def _stamp(seconds: float) -> str:
    return (_ORIGIN + timedelta(seconds=seconds)).strftime("%Y-%m-%d %H:%M:%S.%f")


def write_synthetic_trace(path: str | os.PathLike[str], trace: TokenTrace) -> None:
    """Write ``trace`` as an Azure-format CSV labelled synthetic in every row (atomic)."""
    header = ",".join((*AZURE_COLUMNS, SYNTHETIC_COLUMN)) + "\n"
    context = trace.context_tokens.astype(np.int64).tolist()
    generated = trace.generated_tokens.astype(np.int64).tolist()

    def write(file: Any) -> None:
        file.write(header.encode())
        rows = []
        for t, c, g in zip(trace.arrival.tolist(), context, generated, strict=True):
            rows.append(f"{_stamp(t)},{c},{g},{SYNTHETIC_LABEL}\n")
            if len(rows) >= 65536:
                file.write("".join(rows).encode())
                rows.clear()
        file.write("".join(rows).encode())

    integer("requests", len(context), low=1)
    atomic_write(path, write)
