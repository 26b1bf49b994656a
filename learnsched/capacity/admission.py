"""Work-based stage admission and the count-threshold baseline (paper Sections 4.4, 6.2).

Both rules are thread-safe objects a serving loop shares between request handlers:
``try_admit`` reserves a stage's estimated work if it fits, ``track`` records in-flight
service work unconditionally, and ``release`` returns a ticket's work on completion.
"""

from __future__ import annotations

import itertools
import threading
from abc import ABC, abstractmethod
from dataclasses import dataclass
from fractions import Fraction
from typing import overload

import numpy as np

from .._checks import FloatArray, integer, nonnegative, number
from ._checks import nonnegative_array, same_length

__all__ = [
    "GUIDANCE_BUDGET",
    "PROMPT_WEIGHT",
    "TOOL_BUDGET",
    "CountThresholdAdmission",
    "Ticket",
    "WorkBudgetAdmission",
    "estimate_work",
]

PROMPT_WEIGHT = 0.0625
"""Section 4.4: a prompt token costs 1/16 of an output token in the work estimate."""
TOOL_BUDGET = 1536.0
"""Section 4.4: in-flight work budget for tool stages, tokens."""
GUIDANCE_BUDGET = 1024.0
"""Section 4.4: in-flight work budget for guidance stages, tokens."""


@overload
def estimate_work(prompt_tokens: float, max_output_tokens: float) -> float: ...
@overload
def estimate_work(prompt_tokens: FloatArray, max_output_tokens: FloatArray) -> FloatArray: ...
def estimate_work(
    prompt_tokens: float | FloatArray, max_output_tokens: float | FloatArray
) -> float | FloatArray:
    """Estimated work ``w = L_max + 0.0625 P`` (Section 4.4), tokens.

    Reserving the maximum output length is conservative: a request may stop earlier.

    Parameters
    ----------
    prompt_tokens
        Prompt length ``P``, tokens (scalar or array, ``>= 0``).
    max_output_tokens
        Maximum output length ``L_max``, tokens (``>= 0``).
    """
    if isinstance(prompt_tokens, np.ndarray) or isinstance(max_output_tokens, np.ndarray):
        prompt = nonnegative_array("prompt_tokens", prompt_tokens)
        output = nonnegative_array("max_output_tokens", max_output_tokens)
        same_length("max_output_tokens", output, "prompt_tokens", prompt.shape[0])
        return output + PROMPT_WEIGHT * prompt
    prompt_one = nonnegative("prompt_tokens", prompt_tokens)
    return nonnegative("max_output_tokens", max_output_tokens) + PROMPT_WEIGHT * prompt_one


def _stage_work(prompt_tokens: float, max_output_tokens: float) -> float:
    """A single stage's estimate; arrays are rejected so the budget test stays scalar."""
    return estimate_work(
        number("prompt_tokens", prompt_tokens), number("max_output_tokens", max_output_tokens)
    )


@dataclass(frozen=True)
class Ticket:
    """An admitted stage or tracked request; hand it back to ``release`` on completion.

    Parameters
    ----------
    id
        Unique within the admission object that issued it.
    work
        Reserved estimated work, tokens.
    """

    id: int
    work: float


class _InFlight(ABC):
    """In-flight work and count behind one lock; subclasses decide what fits."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._ids = itertools.count()
        self._open: dict[int, Ticket] = {}
        # The exact sum of the open tickets' work (floats are dyadic rationals), so that
        # release subtracts in O(1) and the total never drifts by rounding; _work is it
        # rounded once.
        self._exact = Fraction(0)
        self._work = 0.0

    @property
    def in_flight_work(self) -> float:
        """Estimated work of the open tickets, tokens."""
        with self._lock:
            return self._work

    @property
    def in_flight_count(self) -> int:
        """Number of open tickets."""
        with self._lock:
            return len(self._open)

    @abstractmethod
    def _fits(self, work: float) -> bool:
        """Whether a stage of estimated ``work`` fits now; called with the lock held."""

    def _issue(self, work: float) -> Ticket:
        ticket = Ticket(next(self._ids), work)
        self._open[ticket.id] = ticket
        self._exact += Fraction(work)
        self._work = float(self._exact)
        return ticket

    def try_admit(self, prompt_tokens: float, max_output_tokens: float) -> Ticket | None:
        """Admit a stage if it fits with the in-flight work; None (nothing reserved) if not.

        Parameters
        ----------
        prompt_tokens, max_output_tokens
            The stage's prompt length and output cap, tokens (see :func:`estimate_work`).
        """
        work = _stage_work(prompt_tokens, max_output_tokens)
        with self._lock:  # the check and the reservation are one step
            return self._issue(work) if self._fits(work) else None

    def track(self, prompt_tokens: float, max_output_tokens: float) -> Ticket:
        """Record in-flight service work that is never refused (a foreground request)."""
        work = _stage_work(prompt_tokens, max_output_tokens)
        with self._lock:
            return self._issue(work)

    def release(self, ticket: Ticket) -> None:
        """Return ``ticket``'s work on completion (or abandonment).

        Raises
        ------
        ValueError
            If ``ticket`` is not open here (released twice, or from another object).
        """
        with self._lock:
            # Identity, not the id alone: another object's ticket may carry the same id.
            if self._open.get(ticket.id) is not ticket:
                raise ValueError(f"ticket {ticket.id} is not open in this admission object")
            del self._open[ticket.id]
            self._exact -= Fraction(ticket.work)
            self._work = float(self._exact)


class WorkBudgetAdmission(_InFlight):
    """Admit a stage only if its estimated work fits with in-flight work (Section 4.4).

    Parameters
    ----------
    budget
        In-flight work budget, tokens (:data:`TOOL_BUDGET` = 1536 for tools,
        :data:`GUIDANCE_BUDGET` = 1024 for guidance).
    """

    def __init__(self, budget: float = TOOL_BUDGET) -> None:
        super().__init__()
        self.budget = nonnegative("budget", budget)

    def _fits(self, work: float) -> bool:
        return self._work + work <= self.budget

    def __repr__(self) -> str:
        return f"WorkBudgetAdmission(budget={self.budget!r})"


class CountThresholdAdmission(_InFlight):
    """The baseline: admit a stage while at most ``threshold`` tickets are in flight.

    The count is taken before the stage, as in the paper's sweep of thresholds 0-12
    (Section 6.2, Fig. 6), where every threshold admits some work and larger ones admit
    more: threshold 0 admits a stage only when nothing is in flight, and threshold ``t``
    lets the stage join up to ``t`` in-flight requests and stages (``t + 1`` with it).
    Unlike :class:`WorkBudgetAdmission` it ignores how much work each one carries.

    Parameters
    ----------
    threshold
        Largest number of in-flight requests and stages, not counting the new stage,
        at which a stage is still admitted (``>= 0``).
    """

    def __init__(self, threshold: int) -> None:
        super().__init__()
        self.threshold = integer("threshold", threshold, 0)

    def _fits(self, work: float) -> bool:
        return len(self._open) <= self.threshold

    def __repr__(self) -> str:
        return f"CountThresholdAdmission(threshold={self.threshold!r})"
