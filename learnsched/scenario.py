"""Finite-model scenarios: idle windows, handoff costs and the initial state.

A :class:`Scenario` is validated when it is built (``ValueError`` naming the field and
value) and round-trips through the JSON object read by ``learnsched solve``. Python only
converts each field to the core's C type (``TypeError`` for a wrong type); every range and
consistency check is the core's own, run once per scenario.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from enum import Enum
from typing import Any

import numpy as np

from . import _core
from ._checks import integer, nonnegative, real
from ._json import exact_keys
from .benefit import BenefitRate, benefit_rate, rate_json, schedule_of

__all__ = [
    "PAPER_COLD",
    "PAPER_WARM",
    "HandoffCosts",
    "InitialState",
    "Recovery",
    "Scenario",
]

JSON_KEYS = (
    "windows",
    "work_quanta",
    "quantum_s",
    "benefit_rate",
    "horizon_s",
    "recovery_s",
    "residency_rate",
    "save_s",
    "load_s",
    "initial",
)
# A scenario offering both recovery paths names them instead of the one recovery_s.
TWO_PATH_JSON_KEYS = (
    *tuple(k for k in JSON_KEYS if k != "recovery_s"),
    "warm_recovery_s",
    "cold_recovery_s",
)
INITIAL_KEYS = ("progress", "durable", "active")
C_INT_MAX = 2**31 - 1
_EXACT_INT = 2**53  # every int up to this magnitude is exactly a double


def flag(name: str, value: object) -> bool:
    """``value`` as a bool: only ``True``/``False`` (numpy's too), never a number."""
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be true or false, got {value!r}")
    return bool(value)


def _listed(value: object) -> object:
    """A numpy array as nested Python lists of Python numbers; anything else as it is."""
    return value.tolist() if isinstance(value, np.ndarray) else value


def _seconds(name: str, value: object) -> float:
    """A window time as a float: plain floats and ints directly (JSON gives both)."""
    if type(value) is float:
        return value
    if type(value) is int and -_EXACT_INT <= value <= _EXACT_INT:
        return float(value)
    return real(name, value)


def _window(index: int, pair: object) -> tuple[float, float]:
    if type(pair) is not list and type(pair) is not tuple:
        pair = _listed(pair)
        if isinstance(pair, (str, bytes)) or not isinstance(pair, Sequence):
            raise ValueError(f"windows[{index}] must be a [start, end] pair, got {pair!r}")
    if len(pair) != 2:
        raise ValueError(f"windows[{index}] must be a [start, end] pair, got {pair!r}")
    start, end = pair
    return (_seconds(f"windows[{index}] start", start), _seconds(f"windows[{index}] end", end))


def window_pairs(windows: object) -> tuple[tuple[float, float], ...]:
    """``windows`` checked, as a tuple of ``(start, end)`` float pairs, seconds.

    Parameters
    ----------
    windows
        A sequence of ``[start, end]`` pairs, seconds (a tuple of float tuples is
        returned as it is).

    Raises
    ------
    TypeError, ValueError
        Not a list of pairs, more than ``_core.finite.MAX_WINDOWS`` windows, or a bound that is
        not a finite number of seconds (each named by its index).
    """
    if type(windows) is tuple and len(windows) <= _core.finite.MAX_WINDOWS and _float_pairs(windows):
        return windows
    if isinstance(windows, (Sequence, np.ndarray)) and len(windows) > _core.finite.MAX_WINDOWS:
        # Before converting them: 2^23 windows would take seconds and a GiB to refuse.
        raise ValueError(
            f"windows must hold at most {_core.finite.MAX_WINDOWS} windows, got {len(windows)}"
        )
    windows = _listed(windows)
    if isinstance(windows, (str, bytes)) or not isinstance(windows, Sequence):
        raise TypeError(f"windows must be a list of [start, end] pairs, got {windows!r}")
    return tuple(_window(i, w) for i, w in enumerate(windows))


def _float_pairs(windows: tuple[object, ...]) -> bool:
    """Whether every window is already a ``(start, end)`` tuple of floats."""
    for w in windows:
        if type(w) is not tuple or len(w) != 2 or type(w[0]) is not float:
            return False
        if type(w[1]) is not float:
            return False
    return True


def _init_fields(obj: Any) -> tuple[Any, ...]:
    """The constructor's fields of a dataclass holding a core object, which does not pickle:
    pickle, copy and multiprocessing rebuild it from these."""
    return tuple(getattr(obj, f.name) for f in fields(obj) if f.init)


class Recovery(str, Enum):
    """How serving capacity comes back after a handoff (the return path, App. D.2)."""

    WARM = "warm"
    """Resume a parked engine that kept its state in host memory."""
    COLD = "cold"
    """Relaunch the engine."""

    def __str__(self) -> str:
        return self.value

    def __format__(self, spec: str) -> str:
        return format(self.value, spec)

    @classmethod
    def parse(cls, value: str | Recovery) -> Recovery:
        """The recovery named ``value``; ``ValueError`` naming both otherwise."""
        try:
            return cls(value)
        except ValueError:
            names = " or ".join(repr(r.value) for r in sorted(cls, key=lambda r: r.value))
            raise ValueError(f"recovery must be {names}, got {value!r}") from None


@dataclass(frozen=True)
class HandoffCosts:
    """Measured handoff costs (paper App. D.2).

    Parameters
    ----------
    recovery_s
        Return path until serving capacity is ready again (``t_ret``), seconds.
    residency_rate
        Price of the parked serving state, s-eq. per second from the window start until
        capacity is ready (``rho``; 0 for cold recovery).
    save_s
        Checkpoint save (``t_ck``), seconds.
    load_s
        Checkpoint load when resuming from durable progress (``t_ld``), seconds.
    cold_recovery_s
        When given, the scenario offers both recovery paths and every action that returns
        capacity chooses one: warm, ``(recovery_s, residency_rate)``, or cold,
        ``(cold_recovery_s, 0)``, seconds. Parked state is held, and ``residency_rate``
        charged, from the window start until capacity is ready, as for one warm path.
        ``None`` (default): the one path ``(recovery_s, residency_rate)``, as before.
    """

    recovery_s: float
    residency_rate: float = 0.0
    save_s: float = 0.0
    load_s: float = 0.0
    cold_recovery_s: float | None = None
    _core_costs: _core.finite.HandoffCosts = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        # Checked here, not only by the core's scenario checks: costs are a value of their
        # own (profiles, sweeps), and every scenario sharing them reuses the core object.
        for name in ("recovery_s", "residency_rate", "save_s", "load_s"):
            object.__setattr__(self, name, nonnegative(name, getattr(self, name)))
        if self.cold_recovery_s is not None:
            cold = nonnegative("cold_recovery_s", self.cold_recovery_s)
            object.__setattr__(self, "cold_recovery_s", cold)
        core = _core.finite.HandoffCosts(
            self.recovery_s, self.residency_rate, self.save_s, self.load_s, self.cold_recovery_s
        )
        object.__setattr__(self, "_core_costs", core)

    def __reduce__(self) -> tuple[type[HandoffCosts], tuple[Any, ...]]:
        return (type(self), _init_fields(self))

    @property
    def offers_choice(self) -> bool:
        """Whether both recovery paths are offered (each return chooses warm or cold)."""
        return self.cold_recovery_s is not None

    @classmethod
    def choice(cls, warm: HandoffCosts, cold: HandoffCosts) -> HandoffCosts:
        """Both paths offered: ``warm``'s return and residency, ``cold``'s return.

        Raises
        ------
        ValueError
            If either already offers a choice, ``cold`` parks state (``residency_rate > 0``)
            or the two differ in save/load costs (those do not depend on the path).
        """
        if warm.offers_choice or cold.offers_choice:
            raise ValueError("choice() takes two single-path costs")
        if cold.residency_rate != 0.0:
            raise ValueError(f"cold residency_rate must be 0, got {cold.residency_rate!r}")
        for name in ("save_s", "load_s"):
            if getattr(warm, name) != getattr(cold, name):
                raise ValueError(
                    f"{name} must be the same for both paths, got {getattr(warm, name)!r} "
                    f"and {getattr(cold, name)!r}"
                )
        return replace(warm, cold_recovery_s=cold.recovery_s)

    def path(self, recovery: str | Recovery) -> HandoffCosts:
        """The single-path costs of ``"warm"`` or ``"cold"`` recovery of a two-path offer."""
        cold_s = self.cold_recovery_s
        if cold_s is None:
            raise ValueError("path() needs costs that offer both recovery paths")
        if Recovery.parse(recovery) is Recovery.WARM:
            return replace(self, cold_recovery_s=None)
        return replace(self, recovery_s=cold_s, residency_rate=0.0, cold_recovery_s=None)

    @classmethod
    def paper(cls, recovery: str | Recovery) -> HandoffCosts:
        """The paper's A100/SGLang costs for ``"cold"`` or ``"warm"`` recovery."""
        return PAPER_COLD if Recovery.parse(recovery) is Recovery.COLD else PAPER_WARM

    def to_core(self) -> _core.finite.HandoffCosts:
        """The C++ core's value type (immutable: built once)."""
        return self._core_costs

    def to_json(self) -> dict[str, float]:
        """The recovery and handoff keys of a scenario's JSON object (seconds, s-eq./s)."""
        if self.cold_recovery_s is None:
            return {
                "recovery_s": self.recovery_s,
                "residency_rate": self.residency_rate,
                "save_s": self.save_s,
                "load_s": self.load_s,
            }
        return {
            "warm_recovery_s": self.recovery_s,
            "cold_recovery_s": self.cold_recovery_s,
            "residency_rate": self.residency_rate,
            "save_s": self.save_s,
            "load_s": self.load_s,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> HandoffCosts:
        """The costs named by a scenario's JSON object, in either form of :meth:`to_json`."""
        two_path = "cold_recovery_s" in data
        return cls(
            recovery_s=data["warm_recovery_s" if two_path else "recovery_s"],
            residency_rate=data["residency_rate"],
            save_s=data["save_s"],
            load_s=data["load_s"],
            cold_recovery_s=data["cold_recovery_s"] if two_path else None,
        )


# Paper App. D.2: SGLang 3-run means; LoRA save/load 68.075 / 47.748 ms; warm residency
# 6.383 GiB priced at 0.01 s-eq. per GiB-second.
PAPER_COLD = HandoffCosts(recovery_s=69.988, residency_rate=0.0, save_s=0.068075, load_s=0.047748)
PAPER_WARM = HandoffCosts(
    recovery_s=0.487, residency_rate=0.06383, save_s=0.068075, load_s=0.047748
)


@dataclass(frozen=True)
class InitialState:
    """Where the candidate stands when the first window opens.

    Parameters
    ----------
    progress
        Completed quanta ``p`` (including unsaved work while active).
    durable
        Checkpointed quanta ``pbar <= p``; a service-mode state has ``durable == progress``.
    active
        Whether the candidate is running in evolution mode (it must return in window 0).
    """

    progress: int = 0
    durable: int = 0
    active: bool = False
    _core_state: _core.finite.State = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        # Range checks are the core's (they name work_quanta); these keep a C int.
        # Stored as Python ints and bool, so numpy scalars round-trip through JSON.
        for name in ("progress", "durable"):
            value = getattr(self, name)
            if type(value) is not int or not -C_INT_MAX <= value <= C_INT_MAX:
                value = integer(f"initial.{name}", value, -C_INT_MAX, C_INT_MAX)
                object.__setattr__(self, name, value)
        active: object = self.active  # callers may pass anything
        if type(active) is not bool:
            object.__setattr__(self, "active", flag("initial.active", active))
        core = _core.finite.State(0, self.progress, self.durable, self.active)
        object.__setattr__(self, "_core_state", core)

    def __reduce__(self) -> tuple[type[InitialState], tuple[Any, ...]]:
        return (type(self), _init_fields(self))

    def to_core(self) -> _core.finite.State:
        """The C++ core's state at window 0 (immutable: built once)."""
        return self._core_state


@dataclass(frozen=True)
class Scenario:
    """One candidate capability on a calendar of idle windows (paper Section 4.1).

    Parameters
    ----------
    windows
        Sorted, non-overlapping idle windows ``(start, end)`` in seconds; capacity must be
        ready again by each window's end. Any sequence of pairs (a list, a numpy array of
        shape ``(K, 2)``); kept as a tuple of float pairs.
    work_quanta
        Construction and validation work ``J`` in quanta.
    quantum_s
        Length of one quantum ``delta``, seconds.
    benefit_rate
        Benefit rate ``g`` after publication, s-eq. per second, until ``horizon_s``: a
        number, or a piecewise-constant schedule ``[[t_0, g_0], [t_1, g_1], ...]`` (rate
        ``g_i`` from ``t_i`` seconds until the next piece starts, 0 before ``t_0``; starts
        strictly increasing), stored as a tuple of ``(start_s, rate)`` pairs.
    horizon_s
        End of the benefit stream ``H``, seconds: publishing at ``t`` earns the integral of
        the rate from ``t`` to ``H`` (:meth:`benefit`), ``g*(H - t)^+`` for a constant rate.
    costs
        Handoff costs.
    initial
        State at the start of the first window.
    """

    windows: Sequence[tuple[float, float]]
    work_quanta: int
    quantum_s: float
    benefit_rate: BenefitRate
    horizon_s: float
    costs: HandoffCosts
    initial: InitialState = field(default_factory=InitialState)
    _core_scenario: _core.finite.Scenario = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        # Checked at run time: callers may pass anything, numpy arrays included. Only the
        # conversion to C types is Python's (exact types pass as they are); the ranges are
        # the core's validate, run once here.
        put = object.__setattr__
        windows = window_pairs(self.windows)
        if windows is not self.windows:
            put(self, "windows", windows)
        work_quanta = self.work_quanta
        if type(work_quanta) is not int or not 1 <= work_quanta <= _core.finite.MAX_STATES:
            put(self, "work_quanta", integer("work_quanta", work_quanta, 1, _core.finite.MAX_STATES))
        for name in ("quantum_s", "horizon_s"):
            value = getattr(self, name)
            if type(value) is not float:  # inf and NaN pass: their check is the core's
                put(self, name, real(name, value))
        if type(self.benefit_rate) is not float:
            put(self, "benefit_rate", benefit_rate(self.benefit_rate))
        constant_rate, schedule = schedule_of(self.benefit_rate)
        if not isinstance(self.costs, HandoffCosts):
            raise TypeError(f"costs must be HandoffCosts, got {type(self.costs).__name__}")
        if not isinstance(self.initial, InitialState):
            raise TypeError(f"initial must be InitialState, got {type(self.initial).__name__}")
        core = _core.finite.Scenario(
            list(self.windows),
            self.work_quanta,
            self.quantum_s,
            constant_rate,
            self.horizon_s,
            self.costs.to_core(),
            self.initial.to_core(),
            schedule,
        )
        _core.finite.validate(core)  # the core's own checks name the field and value
        # Built once: the core object is immutable, and batches reuse it.
        put(self, "_core_scenario", core)

    @classmethod
    def _validated(
        cls,
        core: _core.finite.Scenario,
        windows: tuple[tuple[float, float], ...],
        costs: HandoffCosts,
        initial: InitialState,
    ) -> Scenario:
        """The scenario of an already validated core scenario ``core``, whose windows,
        costs and initial state are given as Python objects (shared by many scenarios)."""
        scenario = cls.__new__(cls)
        put = object.__setattr__
        put(scenario, "windows", windows)
        put(scenario, "work_quanta", core.work_quanta)
        put(scenario, "quantum_s", core.quantum_s)
        schedule = core.benefit_schedule
        put(scenario, "benefit_rate", tuple(schedule) if schedule else core.benefit_rate)
        put(scenario, "horizon_s", core.horizon_s)
        put(scenario, "costs", costs)
        put(scenario, "initial", initial)
        put(scenario, "_core_scenario", core)
        return scenario

    def __reduce__(self) -> tuple[type[Scenario], tuple[Any, ...]]:
        # The core object does not pickle: rebuild it (and validate again) from the
        # constructor's fields, so pickle, copy.deepcopy and multiprocessing work.
        return (type(self), _init_fields(self))

    def to_core(self) -> _core.finite.Scenario:
        """The C++ core's (validated, immutable) scenario."""
        return self._core_scenario

    def benefit(self, publish_s: float) -> float:
        """``Phi(publish_s)``: the benefit of publishing at ``publish_s`` seconds, s-eq.

        The integral of the benefit rate from ``publish_s`` to ``horizon_s`` (0 from the
        horizon on), computed by the core as every policy values it.
        """
        return float(self._core_scenario.benefit(real("publish_s", publish_s)))

    def with_costs(self, costs: HandoffCosts) -> Scenario:
        """The same scenario planned with other handoff costs (e.g. a measured profile's)."""
        return replace(self, costs=costs)

    def to_json(self) -> dict[str, Any]:
        """The JSON object of ``learnsched solve`` (seconds, quanta, s-eq./s)."""
        return {
            "windows": [list(w) for w in self.windows],
            "work_quanta": self.work_quanta,
            "quantum_s": self.quantum_s,
            "benefit_rate": rate_json(self.benefit_rate),
            "horizon_s": self.horizon_s,
            **self.costs.to_json(),
            "initial": {
                "progress": self.initial.progress,
                "durable": self.initial.durable,
                "active": self.initial.active,
            },
        }

    @classmethod
    def from_json(cls, obj: object) -> Scenario:
        """Build from the JSON object of :meth:`to_json`; every key is required.

        A scenario offers both recovery paths when it names ``warm_recovery_s`` and
        ``cold_recovery_s`` instead of ``recovery_s``.

        Raises
        ------
        ValueError
            Missing or unknown keys, or an invalid value (the message names the field).
        """
        try:
            two_path = isinstance(obj, Mapping) and "cold_recovery_s" in obj
            data = exact_keys("scenario", obj, TWO_PATH_JSON_KEYS if two_path else JSON_KEYS)
            initial = exact_keys("initial", data["initial"], INITIAL_KEYS)
            return cls(
                windows=data["windows"],
                work_quanta=data["work_quanta"],
                quantum_s=data["quantum_s"],
                benefit_rate=data["benefit_rate"],
                horizon_s=data["horizon_s"],
                costs=HandoffCosts.from_json(data),
                initial=InitialState(initial["progress"], initial["durable"], initial["active"]),
            )
        except TypeError as err:  # JSON input: a wrong type is a bad value
            raise ValueError(str(err)) from err


def scenarios_from_json(data: object) -> tuple[list[Scenario], bool]:
    """The scenarios of a JSON document: one object, or a list of them.

    Returns the scenarios and whether the document was a list (its output is then a list).

    Raises
    ------
    ValueError
        An invalid scenario, named by its index in a list (``scenario [i]: ...``).
    """
    if isinstance(data, list):
        scenarios = []
        for i, obj in enumerate(data):
            try:
                scenarios.append(Scenario.from_json(obj))
            except ValueError as err:
                raise ValueError(f"scenario [{i}]: {err}") from None
        return scenarios, True
    return [Scenario.from_json(data)], False
