"""The cost profile: measured handoff costs as a versioned JSON document.

``learnsched probe ... --out profile.json`` writes one; :func:`load_cost_profile`
reads it and :meth:`CostProfile.handoff_costs` turns it into the solver's
:class:`~learnsched.HandoffCosts` (paper App. D.2). The paper's A100 figures ship as
:data:`PAPER_PROFILE`.

A warm figure measured on parks whose memory release the probe never saw (no device to
watch, or one that did not list the engine) carries why, as ``unconfirmed``:
:meth:`CostProfile.handoff_costs` refuses to plan with it (:class:`UnconfirmedRelease`)
unless told to accept it. Documents of versions 1 and 2 hold no such flag and are read
as they always were.
"""

from __future__ import annotations

import importlib.metadata
import json
import math
import os
import platform
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._atomic import atomic_write_text, locked
from .._checks import nonnegative, number
from .._json import read_json
from ..scenario import HandoffCosts, Recovery
from ._util import CPU
from .nvml import NvmlDevice, device_info

if TYPE_CHECKING:
    from .lora import LoraBenchmark
    from .phases import RecoveryRun

__all__ = [
    "BASE_PROFILES",
    "LORA_QUANTITIES",
    "PAPER_PROFILE",
    "PAPER_RESIDENCY_PRICE",
    "QUANTITIES",
    "RECOVERY_QUANTITIES",
    "CostProfile",
    "Measurement",
    "UnconfirmedRelease",
    "base_profile",
    "costs_quantities",
    "load_cost_profile",
    "package_versions",
    "provenance",
    "update_cost_profile",
]

FORMAT = "learnsched-cost-profile"
# 2 adds each measurement's device and note, 3 its unconfirmed; older files are still read.
VERSION = 3
READABLE_VERSIONS = (1, 2, 3)
GIB = 2**30
# App. D.2: an assumed price, not a measurement.
PAPER_RESIDENCY_PRICE = 0.01  # s-eq. per GiB-second of incremental host PSS

# Every quantity a profile may hold, with its one unit.
QUANTITIES = {
    "checkpoint_save_s": "s",  # durable: file and folder fsynced (t_ck)
    "checkpoint_save_buffered_s": "s",
    "checkpoint_load_s": "s",  # onto the device (t_ld)
    "adapter_bytes": "B",
    "cold_recovery_s": "s",  # launch to first completed request (t_ret, cold)
    # Warm: resume sent until acknowledged with the device memory back (t_ret, warm; the
    # paper's 0.487 s, which its solver plans with) ...
    "warm_recovery_s": "s",
    # ... and resume sent until the first request completed (the paper's 0.520 s).
    "warm_ready_s": "s",
    "host_pss_awake_gib": "GiB",  # engine tree PSS while serving
    "host_pss_parked_gib": "GiB",  # engine tree PSS while parked (warm state kept)
    "device_parked_gib": "GiB",  # device memory held while parked (see the note)
}
# What each probe writes (the --out check is made with these before measuring).
LORA_QUANTITIES = (
    "checkpoint_save_s",
    "checkpoint_save_buffered_s",
    "checkpoint_load_s",
    "adapter_bytes",
)
RECOVERY_QUANTITIES = (
    "cold_recovery_s",
    "warm_recovery_s",
    "warm_ready_s",
    "host_pss_awake_gib",
    "host_pss_parked_gib",
    "device_parked_gib",
)
PACKAGES = ("learnsched", "torch", "safetensors", "peft", "nvidia-ml-py", "psutil")


class UnconfirmedRelease(ValueError):
    """Costs asked of measurements taken on parks whose memory release was never seen.

    A park that frees nothing still resumes in milliseconds: planning with its figures
    would lend an engine whose memory never moved (CLI: exit 2, like other bad input).

    Parameters
    ----------
    flagged
        Each quantity refused, to why its parks' release was not confirmed.
    source
        Where the profile came from (a file, a flag), put before the message.
    accept
        How to plan with them all the same, as the caller spells it.
    """

    def __init__(
        self,
        flagged: Mapping[str, str],
        *,
        source: str = "",
        accept: str = "accept_unconfirmed=True",
    ) -> None:
        self.flagged = dict(flagged)
        why = "; ".join(dict.fromkeys(self.flagged.values()))
        super().__init__(
            f"{source}{': ' if source else ''}{', '.join(self.flagged)} were measured on "
            f"parks whose memory release was never seen ({why}), so a plan would count on "
            "memory that may not be freed; measure where the device shows the release "
            "(NVML listing the engine's GPU, or --release-gib), or plan with them knowingly "
            f"({accept})"
        )


@dataclass(frozen=True)
class Measurement:
    """One measured quantity.

    Parameters
    ----------
    mean
        Mean of the warm samples (the value planned with), in ``unit``.
    unit
        ``"s"``, ``"B"`` or ``"GiB"``; fixed per quantity (:data:`QUANTITIES`).
    samples
        The warm samples (empty where only a mean was published).
    first
        The first (cold-cache) run, reported apart (``None`` if not separate).
    device
        Where it was measured: ``"cpu"``, a GPU's name, or ``None`` if not known.
    note
        How it was measured where that matters (e.g. what device memory counts).
    unconfirmed
        Measured on parks whose memory release was never seen on the device: why
        (``None``: confirmed, or not measured on a park).
    """

    mean: float
    unit: str
    samples: tuple[float, ...] = ()
    first: float | None = None
    device: str | None = None
    note: str = ""
    unconfirmed: str | None = None

    def __post_init__(self) -> None:
        number("mean", self.mean)
        device: object = self.device  # checked at run time: profiles are read from JSON
        if device is not None and (not isinstance(device, str) or not device):
            raise TypeError(f"device must be a non-empty string or null, got {device!r}")
        note: object = self.note
        if not isinstance(note, str):
            raise TypeError(f"note must be a string, got {note!r}")
        why: object = self.unconfirmed
        if why is not None and (not isinstance(why, str) or not why):
            raise TypeError(f"unconfirmed must be a non-empty string or null, got {why!r}")
        object.__setattr__(self, "samples", tuple(number("samples", s) for s in self.samples))
        if self.first is not None:
            number("first", self.first)
        if self.samples:
            mean = math.fsum(self.samples) / len(self.samples)
            if not math.isclose(mean, self.mean, rel_tol=1e-9, abs_tol=1e-12):
                raise ValueError(f"mean {self.mean!r} is not the mean of its samples ({mean!r})")

    @classmethod
    def of(
        cls,
        samples: tuple[float, ...],
        unit: str,
        first: float | None = None,
        *,
        device: str | None = None,
        note: str = "",
        unconfirmed: str | None = None,
    ) -> Measurement:
        """From warm samples (at least one)."""
        if not samples:
            raise ValueError("samples must hold at least one value")
        mean = math.fsum(samples) / len(samples)
        return cls(mean, unit, samples, first, device, note, unconfirmed)


def package_versions() -> dict[str, str]:
    """Installed versions of learnsched and the probes' dependencies, and Python's."""
    versions = {"python": platform.python_version()}
    for name in PACKAGES:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    return versions


@dataclass(frozen=True)
class CostProfile:
    """Measured handoff costs and where they were measured.

    Parameters
    ----------
    measurements
        Quantity name (a key of :data:`QUANTITIES`) to its measurement.
    device
        ``{"name": ..., "uuid": ..., "driver": ...}`` of the GPU, or ``None``
        (measured on CPU, or not reported).
    packages
        Package name to version at measurement time.
    created
        ISO 8601 UTC time of writing.
    source
        What produced it (a command, or a citation).
    """

    measurements: Mapping[str, Measurement]
    device: Mapping[str, str | None] | None = None
    packages: Mapping[str, str] = field(default_factory=dict)
    created: str | None = None
    source: str = ""

    def __post_init__(self) -> None:
        for name, value in self.measurements.items():
            if name not in QUANTITIES:
                raise ValueError(
                    f"unknown quantity {name!r}; known: {', '.join(sorted(QUANTITIES))}"
                )
            if not isinstance(value, Measurement):
                raise TypeError(f"{name} must be a Measurement, got {type(value).__name__}")
            if value.unit != QUANTITIES[name]:
                raise ValueError(f"{name} must be in {QUANTITIES[name]}, got {value.unit!r}")
        object.__setattr__(self, "measurements", dict(self.measurements))

    def mean(self, name: str) -> float:
        """The planning value of quantity ``name``.

        Raises
        ------
        ValueError
            The profile does not hold it (the message says which probe measures it).
        """
        if name not in self.measurements:
            raise ValueError(_missing([name]))
        return self.measurements[name].mean

    def require(self, names: Iterable[str]) -> None:
        """Check the profile holds every one of ``names``.

        Raises
        ------
        ValueError
            Naming every missing one at once, each with the probe run and flag that
            measures it, so one run can then measure them all.
        """
        missing = [n for n in dict.fromkeys(names) if n not in self.measurements]
        if missing:
            raise ValueError(_missing(missing))

    def unconfirmed(self, names: Iterable[str] | None = None) -> dict[str, str]:
        """Those of ``names`` (default: every quantity held) measured on parks whose
        memory release was never seen, each with why (empty: none)."""
        chosen = self.measurements if names is None else dict.fromkeys(names)
        return {
            name: why
            for name in chosen
            if name in self.measurements
            and (why := self.measurements[name].unconfirmed) is not None
        }

    def filled_from(self, base: CostProfile) -> CostProfile:
        """This profile with every quantity it lacks taken from ``base``.

        Unlike :meth:`merged` the two may come from different machines: filling is the
        caller's explicit choice, and :func:`provenance` says which number came from
        where. The device and packages stay this profile's.
        """
        measurements = {**base.measurements, **self.measurements}
        filled = sorted(set(base.measurements) - set(self.measurements))
        note = f"filled from {base.source or 'a base profile'}: {', '.join(filled)}"
        return CostProfile(
            measurements=measurements,
            device=self.device if self.device is not None else base.device,
            packages=self.packages,
            created=self.created,
            source="; ".join(s for s in (self.source, note if filled else "") if s),
        )

    def handoff_costs(
        self,
        recovery: str | Recovery,
        residency_price: float = PAPER_RESIDENCY_PRICE,
        *,
        accept_unconfirmed: bool = False,
    ) -> HandoffCosts:
        """The solver's costs for ``"cold"`` or ``"warm"`` recovery (App. D.2).

        Parameters
        ----------
        recovery
            ``"cold"``: relaunch; no residency. ``"warm"``: resume a parked engine; its
            residency rate is the parked-minus-awake host PSS in GiB times
            ``residency_price`` (a parked state that holds less host memory than a
            serving one costs nothing extra).
        residency_price
            s-eq. per GiB-second (App. D.2 assumes 0.01).
        accept_unconfirmed
            Plan with figures measured on parks whose release was never seen
            (:meth:`unconfirmed`); by default they are refused.

        Raises
        ------
        UnconfirmedRelease
            A quantity these costs read is flagged unconfirmed, and not accepted.
        ValueError
            A quantity these costs read is missing.
        """
        recovery = Recovery.parse(recovery)
        price = nonnegative("residency_price", residency_price)
        self.require(costs_quantities(recovery))
        residency = 0.0
        if recovery is Recovery.WARM:
            added = self.mean("host_pss_parked_gib") - self.mean("host_pss_awake_gib")
            residency = max(added, 0.0) * price
        costs = HandoffCosts(
            recovery_s=self.mean(f"{recovery}_recovery_s"),
            residency_rate=residency,
            save_s=self.mean("checkpoint_save_s"),
            load_s=self.mean("checkpoint_load_s"),
        )
        flagged = self.unconfirmed(costs_quantities(recovery))
        if flagged and not accept_unconfirmed:
            raise UnconfirmedRelease(flagged)
        return costs

    def merged(self, newer: CostProfile) -> CostProfile:
        """This profile with ``newer``'s measurements (and metadata) taking precedence.

        Raises
        ------
        ValueError
            The two were measured on different GPUs, or the merged costs would mix
            devices (e.g. a CPU checkpoint load with a GPU's recovery): the solver would
            plan one machine with another's costs. The message names the quantities.
        """
        names = {p.device.get("name") for p in (self, newer) if p.device is not None}
        if len(names) > 1:
            raise ValueError(f"cannot merge profiles of different GPUs: {sorted(map(str, names))}")
        measurements = {**self.measurements, **newer.measurements}
        where = {n: m.device for n, m in sorted(measurements.items()) if m.device is not None}
        if len(set(where.values())) > 1:
            listed = ", ".join(f"{n} on {d}" for n, d in where.items())
            raise ValueError(
                f"cannot merge measurements from different devices ({listed}); "
                "measure every quantity on the machine you plan for"
            )
        return CostProfile(
            measurements=measurements,
            device=newer.device if newer.device is not None else self.device,
            packages=newer.packages or self.packages,
            created=newer.created or self.created,
            source="; ".join(s for s in (self.source, newer.source) if s),
        )

    @classmethod
    def from_lora(
        cls, result: LoraBenchmark, device: NvmlDevice | None = None, device_name: str = CPU
    ) -> CostProfile:
        """The checkpoint costs a LoRA benchmark measured, as a profile.

        Parameters
        ----------
        result
            What :func:`~learnsched.handoff.benchmark_lora` measured (times in ms).
        device
            The NVML device of the GPU it loaded onto (``None``: CPU, or NVML unavailable).
        device_name
            Where it was measured: ``"cpu"`` or the GPU's name.

        Returns
        -------
        CostProfile
            ``checkpoint_save_s`` (durable), ``checkpoint_save_buffered_s``,
            ``checkpoint_load_s`` (seconds) and ``adapter_bytes`` (bytes).
        """

        def seconds(timing: Any, note: str = "") -> Measurement:
            warm = tuple(t / 1e3 for t in timing.warm_ms)
            return Measurement.of(warm, "s", timing.first_ms / 1e3, device=device_name, note=note)

        fs = result.filesystem
        where = f"file and folder fsynced on {fs.fs_type} at {fs.mount_point}"
        if fs.volatile:
            where += " (memory-backed: not durable, and cheaper than a disk)"
        return cls(
            measurements={
                "checkpoint_save_s": seconds(result.save_durable, where),
                "checkpoint_save_buffered_s": seconds(result.save),
                "checkpoint_load_s": seconds(result.load),
                "adapter_bytes": Measurement.of(
                    (float(result.adapter_bytes),), "B", device=device_name
                ),
            },
            device=device_info(device),
            packages=package_versions(),
            created=now_iso(),
            source=f"learnsched probe lora (load onto {result.device})",
        )

    @classmethod
    def from_recoveries(
        cls, runs: Sequence[RecoveryRun], device: NvmlDevice | None = None
    ) -> CostProfile:
        """The recovery costs ``runs`` measured, as a profile.

        Parameters
        ----------
        runs
            Cold starts and warm park/resume cycles of one engine.
        device
            The NVML device they ran on (``None``: not read).

        Returns
        -------
        CostProfile
            Those of ``cold_recovery_s``, ``warm_recovery_s``, ``warm_ready_s`` (seconds),
            ``host_pss_awake_gib``, ``host_pss_parked_gib`` and ``device_parked_gib`` (GiB)
            that ``runs`` measured; the warm ones flagged ``unconfirmed`` when a park's
            release was not seen.
        """
        warm = [r for r in runs if r.kind is Recovery.WARM]
        name = None if device is None else device.name
        why = _unconfirmed(warm)
        host = {p: [r.host[p].pss / GIB for r in warm if p in r.host] for p in ("awake", "parked")}
        candidates = {
            "cold_recovery_s": _measured(
                [r.ready_s for r in runs if r.kind is Recovery.COLD], "s", name
            ),
            "warm_recovery_s": _measured(
                [r.resume_s for r in warm],
                "s",
                name,
                "resume sent to acknowledged with the device memory back"
                if all("memory_back" in r.stamps_ns for r in warm)
                else "resume sent to acknowledged (device memory not watched)",
                why,
            ),
            "warm_ready_s": _measured([r.ready_s for r in warm], "s", name, unconfirmed=why),
            "host_pss_awake_gib": _measured(host["awake"], "GiB", name, unconfirmed=why),
            "host_pss_parked_gib": _measured(host["parked"], "GiB", name, unconfirmed=why),
            "device_parked_gib": _parked_device(warm, name, why),
        }
        return cls(
            measurements={k: m for k, m in candidates.items() if m is not None},
            device=device_info(device),
            packages=package_versions(),
            created=now_iso(),
            source=f"learnsched probe recovery ({runs[0].engine})" if runs else "",
        )

    def to_json(self) -> dict[str, Any]:
        """The versioned JSON document."""
        return {
            "format": FORMAT,
            "version": VERSION,
            "created": self.created,
            "source": self.source,
            "device": None if self.device is None else dict(self.device),
            "packages": dict(self.packages),
            "measurements": {
                name: {
                    "unit": m.unit,
                    "mean": m.mean,
                    "samples": list(m.samples),
                    "first": m.first,
                    "device": m.device,
                    "note": m.note,
                    "unconfirmed": m.unconfirmed,
                }
                for name, m in sorted(self.measurements.items())
            },
        }

    @classmethod
    def from_json(cls, obj: object) -> CostProfile:
        """Read :meth:`to_json`'s document; ``ValueError`` names what is wrong."""
        try:
            return cls._from_json(obj)
        except TypeError as err:  # JSON input: a wrong type is a bad value
            raise ValueError(str(err)) from err

    @classmethod
    def _from_json(cls, obj: object) -> CostProfile:
        if not isinstance(obj, Mapping):
            raise TypeError(f"cost profile must be a JSON object, got {type(obj).__name__}")
        if obj.get("format") != FORMAT:
            raise ValueError(f"format must be {FORMAT!r}, got {obj.get('format')!r}")
        version = obj.get("version")
        if isinstance(version, bool) or version not in READABLE_VERSIONS:
            raise ValueError(
                f"version {obj.get('version')!r} is not supported (this learnsched reads "
                f"versions {', '.join(map(str, READABLE_VERSIONS))})"
            )
        raw = obj.get("measurements")
        if not isinstance(raw, Mapping):
            raise TypeError("measurements must be a JSON object")
        measurements = {}
        keys = {"unit", "mean", "samples", "first"}
        if version >= 2:
            keys |= {"device", "note"}
        if version >= 3:
            keys |= {"unconfirmed"}
        for name, item in raw.items():
            if not isinstance(item, Mapping) or set(item) != keys:
                raise ValueError(f"measurements.{name} must have {', '.join(sorted(keys))}")
            try:
                measurements[name] = Measurement(
                    mean=item["mean"],
                    unit=item["unit"],
                    samples=tuple(item["samples"]),
                    first=item["first"],
                    device=item.get("device"),
                    note=item.get("note", ""),
                    unconfirmed=item.get("unconfirmed"),
                )
            except (TypeError, ValueError) as err:
                raise ValueError(f"measurements.{name}: {err}") from err
        device = obj.get("device")
        if device is not None and not isinstance(device, Mapping):
            raise TypeError("device must be a JSON object or null")
        packages = obj.get("packages", {})
        if not isinstance(packages, Mapping):
            raise TypeError("packages must be a JSON object")
        return cls(
            measurements=measurements,
            device=device,
            packages=packages,
            created=obj.get("created"),
            source=str(obj.get("source", "")),
        )

    def write(self, path: str | os.PathLike[str]) -> None:
        """Write the document atomically (fsynced, then renamed into place)."""
        atomic_write_text(path, json.dumps(self.to_json(), indent=2, allow_nan=False) + "\n")


def _measured(
    values: Sequence[float],
    unit: str,
    device: str | None,
    note: str = "",
    unconfirmed: str | None = None,
) -> Measurement | None:
    if not values:
        return None
    return Measurement.of(tuple(values), unit, device=device, note=note, unconfirmed=unconfirmed)


def _unconfirmed(warm: Sequence[RecoveryRun]) -> str | None:
    """Why some of ``warm``'s parks were never seen to free memory (``None``: all were)."""
    reasons = [r.unconfirmed for r in warm if r.unconfirmed is not None]
    if not reasons:
        return None
    return f"{len(reasons)} of {len(warm)} parks: {'; '.join(dict.fromkeys(reasons))}"


def _parked_device(
    warm: Sequence[RecoveryRun], device: str | None, unconfirmed: str | None
) -> Measurement | None:
    """Device memory held while parked, on one basis for all runs (the note says which)."""
    bases = {r.device_basis for r in warm if "parked" in r.device}
    if not bases:
        return None
    # Mixed bases (the engine listed in some runs only) fall back to the whole device.
    basis = bases.pop() if len(bases) == 1 else "device-occupied"
    values = []
    for run in warm:
        if "parked" not in run.device:
            continue
        if basis == "engine-processes":
            values.append(run.engine_device["parked"] / GIB)
        else:
            values.append(run.device["parked"].occupied / GIB)
    note = (
        "the engine's processes' own device bytes (NVML per-process)"
        if basis == "engine-processes"
        else "the whole device's occupied bytes, total - free (other processes included): NVML "
        "does not list the engine's processes with their memory"
    )
    return _measured(values, "GiB", device, note, unconfirmed)


def now_iso() -> str:
    """The current UTC time, ISO 8601, whole seconds."""
    return datetime.now(timezone.utc).replace(microsecond=0).isoformat()


def load_cost_profile(path: str | os.PathLike[str]) -> CostProfile:
    """Read a cost profile file.

    Raises
    ------
    ValueError
        Not JSON or not a valid profile (the message names the file and the field).
    OSError
        The file cannot be read.
    """
    data = read_json(path)
    try:
        return CostProfile.from_json(data)
    except ValueError as err:
        raise ValueError(f"{path}: {err}") from err


def update_cost_profile(path: str | os.PathLike[str], profile: CostProfile) -> CostProfile:
    """Merge ``profile`` into the profile file at ``path`` (created if missing).

    The read, merge and write happen under an exclusive lock on ``.NAME.lock`` beside
    the file, so probes updating one profile at the same time keep every measurement.

    Returns
    -------
    CostProfile
        The merged profile, as written.
    """
    with locked(path):
        if Path(path).exists():
            profile = load_cost_profile(path).merged(profile)
        profile.write(path)
    return profile


# Paper App. D.2, Sections 3.1 and 6.3 (one A100-80GB, SGLang, rank-8 LoRA): means only.
# Host PSS 4.775 GiB serving, 11.158 GiB parked (Fig. 2(b): base 4.775 + 6.383 added);
# 3.74 GiB left on the GPU while parked. Warm recovery is two figures: 0.487 s to resume
# (what the solver's PAPER_WARM plans with, and what `probe recovery` measures as
# warm_recovery_s) and 0.520 s to the first completed request (warm_ready_s).
_A100 = "NVIDIA A100-80GB"
PAPER_PROFILE = CostProfile(
    measurements={
        "checkpoint_save_s": Measurement(0.068075, "s", device=_A100),
        "checkpoint_load_s": Measurement(0.047748, "s", device=_A100),
        "adapter_bytes": Measurement(13.24e6, "B", device=_A100),
        "cold_recovery_s": Measurement(69.988, "s", device=_A100),
        "warm_recovery_s": Measurement(0.487, "s", device=_A100),
        "warm_ready_s": Measurement(0.520, "s", device=_A100),
        "host_pss_awake_gib": Measurement(4.775, "GiB", device=_A100),
        "host_pss_parked_gib": Measurement(11.158, "GiB", device=_A100),
        "device_parked_gib": Measurement(3.74, "GiB", device=_A100),
    },
    device={"name": _A100, "uuid": None, "driver": None},
    packages={},
    created=None,
    source="LearnSched paper, App. D.2 and Sections 3.1, 6.3 (3-run SGLang means, 20 LoRA runs)",
)

# Named profiles a partial one can be filled from (``--base NAME``).
BASE_PROFILES = {"paper": PAPER_PROFILE}
BASE_PROFILE_NAMES = tuple(BASE_PROFILES)


def base_profile(name: str) -> CostProfile:
    """The named base profile; ``ValueError`` naming the known ones."""
    if name not in BASE_PROFILES:
        raise ValueError(f"base must be one of {', '.join(BASE_PROFILE_NAMES)}, got {name!r}")
    return BASE_PROFILES[name]


# The probe run, with the flag it needs, that measures a quantity a plan reads: the
# engine's host memory is read only from a process it knows (--pid, or the one --launch
# starts), and a cold start is timed only when it can launch the engine. `probe all`
# takes the same flags.
_RECOVERY = "`learnsched probe recovery` (or `probe all`)"
_MEASURED_BY = {
    "cold_recovery_s": f"{_RECOVERY} with `--launch COMMAND`",
    "host_pss_awake_gib": f"{_RECOVERY} with `--pid ENGINE_PID` or `--launch COMMAND`",
    "host_pss_parked_gib": f"{_RECOVERY} with `--pid ENGINE_PID` or `--launch COMMAND`",
}


def _measured_by(name: str) -> str:
    """The probe run that measures quantity ``name``."""
    if name in _MEASURED_BY:
        return _MEASURED_BY[name]
    if name.startswith(("checkpoint", "adapter")):
        return "`learnsched probe lora` (or `probe all`)"
    return _RECOVERY


def _missing(names: Sequence[str]) -> str:
    """What a profile without ``names`` says: each with the probe run that measures it."""
    base = f"or fill {'it' if len(names) == 1 else 'them'} from a base profile "
    base += f"({', '.join(BASE_PROFILE_NAMES)}: --base NAME)"
    if len(names) == 1:
        return f"cost profile has no {names[0]}; measure it with {_measured_by(names[0])}, {base}"
    by_probe: dict[str, list[str]] = {}
    for name in names:
        by_probe.setdefault(_measured_by(name), []).append(name)
    each = "; ".join(f"{' and '.join(n)} with {probe}" for probe, n in by_probe.items())
    return f"cost profile has no {', '.join(names)}; measure {each}; {base}"


def costs_quantities(recovery: str | Recovery) -> tuple[str, ...]:
    """The quantities :meth:`CostProfile.handoff_costs` reads for ``recovery``."""
    recovery = Recovery.parse(recovery)
    warm = recovery is Recovery.WARM
    residency = ("host_pss_awake_gib", "host_pss_parked_gib") if warm else ()
    return (f"{recovery}_recovery_s", *residency, "checkpoint_save_s", "checkpoint_load_s")


def provenance(
    profile: CostProfile, label: str, base: CostProfile, base_label: str, quantities: Sequence[str]
) -> dict[str, str]:
    """Where each of ``quantities`` comes from once ``profile`` is filled from ``base``.

    Returns ``{quantity: label or base_label}`` (quantities neither holds are left out).
    """
    origin = {}
    for name in quantities:
        if name in profile.measurements:
            origin[name] = label
        elif name in base.measurements:
            origin[name] = base_label
    return origin
