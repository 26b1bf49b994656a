"""What a recovery measured: stamps, and host and device memory at phase boundaries.

:class:`RecoveryRun` is the result of a cold start (:mod:`.cold_start`) or a warm
park/resume (:mod:`.recovery`); :class:`Phases` reads the memory it holds. Every stamp
is ``time.perf_counter_ns()`` of this process.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..scenario import Recovery
from ..serving.ledger import HandoffRecord
from ..serving.memory import DeviceMemory, GpuProcess, HostMemory
from .host_memory import PhaseSampler, process_tree
from .release import MemoryReader

__all__ = ["UNCONFIRMED", "Phases", "RecoveryRun"]

# How a warm run's ``release`` begins when the device could not show the memory freed.
UNCONFIRMED = "unconfirmed: "


@dataclass(frozen=True)
class RecoveryRun:
    """One measured recovery.

    Parameters
    ----------
    kind
        ``"cold"`` (launch to first completed request) or ``"warm"`` (park, resume).
    engine
        ``"vllm"`` or ``"sglang"``.
    stamps_ns
        ``perf_counter_ns`` stamps. Cold: ``launched``, ``port_open``, ``health_200``,
        ``first_token``, ``request_done``. Warm: ``idle_checked``, ``paused`` (SGLang),
        ``release_sent``, ``release_ack`` (vLLM's ``asleep_reported``),
        ``release_confirmed`` (device memory seen freed), ``resume_sent``, ``resume_ack``
        (vLLM's ``awake_reported``; ``found_awake``: nothing to wake), ``continued``
        (SGLang generation continued), ``memory_back``
        (device memory seen re-occupied), ``health_200``, ``first_token``,
        ``request_done``. A stamp that could not be observed is absent.
    host
        Host PSS of the engine's process tree at phase boundaries: warm ``"awake"``,
        ``"parked"``, ``"resumed"``; cold ``"ready"`` (empty without a PID).
    device
        Device memory at the same phases (empty without a device to read).
    engine_device
        Device bytes of the engine's own processes at those phases, from the device's
        per-process figures (empty where the device does not list the engine's
        processes with their memory, e.g. in another PID namespace).
    release
        Warm: how the release was confirmed (``"free-rose"``, ``"process-gone"``,
        ``"process-below-floor"``) or ``"unconfirmed: <why>"``; cold: ``""``.
    notes
        Warnings about what the figures mean (e.g. the engine is not on the GPU watched,
        a server flag that could not be checked).
    failure
        Why the recovery did not bring the same capacity back (e.g. ``"weights not
        restored: ..."``), or ``None``: a failed recovery is recorded, never counted.
    """

    kind: Recovery
    engine: str
    stamps_ns: dict[str, int]
    host: dict[str, HostMemory]
    device: dict[str, DeviceMemory]
    engine_device: dict[str, int] = field(default_factory=dict)
    release: str = ""
    notes: tuple[str, ...] = ()
    failure: str | None = None

    @property
    def start_stamp(self) -> str:
        """Where readiness is counted from."""
        return "launched" if self.kind is Recovery.COLD else "resume_sent"

    @property
    def ready_s(self) -> float:
        """Start until the first real request completed (capacity ready), seconds."""
        return (self.stamps_ns["request_done"] - self.stamps_ns[self.start_stamp]) / 1e9

    @property
    def resume_s(self) -> float:
        """Warm: resume sent until acknowledged with the memory back, seconds.

        The paper's resume latency (0.487 s with SGLang): the later of the resume
        call's answer, vLLM's ``is_sleeping`` false and device memory seen re-occupied
        (where a device was watched). :attr:`ready_s` adds the first request.
        """
        if self.kind is not Recovery.WARM:
            raise ValueError("resume_s is defined for warm recoveries only")
        ends = [self.stamps_ns[k] for k in RESUMED_STAMPS if k in self.stamps_ns]
        return (max(ends) - self.stamps_ns["resume_sent"]) / 1e9

    @property
    def release_s(self) -> float | None:
        """Warm: release sent until the device showed the memory freed, seconds.

        ``None`` where the release could not be confirmed (see :attr:`release`); the
        release call's own answer (``release_ack``) is not used in its place.
        """
        if "release_confirmed" not in self.stamps_ns:
            return None
        return self.interval_s("release_sent", "release_confirmed")

    @property
    def device_basis(self) -> str | None:
        """What the device figures count: the engine's processes, or the whole device.

        ``"engine-processes"`` (per-process bytes of the engine's tree),
        ``"device-occupied"`` (total minus free: everything on the GPU, other
        processes included) or ``None`` without a device.
        """
        if self.engine_device:
            return "engine-processes"
        return "device-occupied" if self.device else None

    def device_bytes(self, phase: str) -> int | None:
        """Device bytes at ``phase`` on :attr:`device_basis` (``None`` if not read)."""
        if self.engine_device:
            return self.engine_device.get(phase)
        memory = self.device.get(phase)
        return None if memory is None else memory.occupied

    @property
    def unconfirmed(self) -> str | None:
        """Warm: why the release was never seen on the device (``None``: it was, or cold)."""
        if not self.release.startswith(UNCONFIRMED):
            return None
        return self.release[len(UNCONFIRMED) :]

    def interval_s(self, start: str, end: str) -> float:
        """Seconds between two stamps."""
        return (self.stamps_ns[end] - self.stamps_ns[start]) / 1e9

    def to_record(self) -> HandoffRecord:
        """The ledger record of this recovery."""
        before, after = (
            ("awake", "resumed") if self.kind is Recovery.WARM else ("launched", "ready")
        )
        return HandoffRecord(
            kind=f"{self.kind}-recovery" + ("-failed" if self.failure else ""),
            failure=self.failure,
            engine=self.engine,
            stamps_ns=self.stamps_ns,
            readiness_s=self.ready_s,
            device_before=self.device.get(before),
            device_after=self.device.get(after),
            host_before=self.host.get(before),
            host_after=self.host.get(after),
        )


# Any of these ends a warm resume: the call's answer, vLLM's view, the memory seen back.
# The resume is done when the call answered, vLLM reports awake, SGLang generates again
# (``continued``) and the device shows the memory back.
RESUMED_STAMPS = ("resume_ack", "awake_reported", "continued", "memory_back")


class Phases:
    """Host and device memory read at phase boundaries, and the device watched between.

    Parameters
    ----------
    pid
        The engine's process: its tree's PSS is read at each phase, and its processes
        on the device are told apart (``None``: neither).
    device
        The GPU to read (``None``: no device figures).
    """

    def __init__(self, pid: int | None, device: MemoryReader | None) -> None:
        self.pid = pid
        self.host = PhaseSampler(pid) if pid is not None else None
        self.reader = device
        self.device: dict[str, DeviceMemory] = {}
        self.listed: dict[str, list[GpuProcess]] = {}
        self.engine_device: dict[str, int] = {}
        self.per_process = True  # until a phase shows the engine unlisted or without bytes
        self.notes: list[str] = []

    def engine_pids(self) -> set[int]:
        """The PIDs of the engine's process tree now (none without a PID, or once gone)."""
        if self.pid is None:
            return set()
        try:
            return set(process_tree(self.pid))
        except ProcessLookupError:
            return set()

    def mark(self, phase: str) -> None:
        """Read host and device memory now, as ``phase``."""
        if self.host is not None:
            self.host.mark(phase)
        if self.reader is None:
            return
        self.device[phase] = self.reader.memory()
        self.listed[phase] = self.reader.processes()
        engine_pids = self.engine_pids()
        mine = [p for p in self.listed[phase] if p.pid in engine_pids]
        if len(self.device) == 1 and engine_pids and not mine:
            self._not_on_device(engine_pids, self.listed[phase])
        # The engine must be listed while awake; later it may have left the device.
        if self.per_process and (mine or self.engine_device) and self.pid is not None:
            used = [p.used_bytes for p in mine]
            if all(u is not None for u in used):
                self.engine_device[phase] = sum(u for u in used if u is not None)
                return
        self.per_process = False
        self.engine_device.clear()

    def _not_on_device(self, engine: set[int], listed: list[GpuProcess]) -> None:
        """Note that the engine is not among the processes the watched GPU lists."""
        which = getattr(self.reader, "uuid", None) or "the watched GPU"
        self.notes.append(
            f"the engine's processes {sorted(engine)} are not among those {which} lists "
            f"({sorted(p.pid for p in listed) or 'none'}): it may run on another GPU (match "
            "--gpu to the engine's CUDA_VISIBLE_DEVICES by UUID) or in another PID "
            "namespace; device figures then count the whole GPU"
        )

    def run(
        self,
        kind: Recovery,
        engine: str,
        stamps: dict[str, int],
        release: str,
        failure: str | None = None,
    ) -> RecoveryRun:
        """The measured recovery: ``stamps`` and every phase read so far."""
        host = {} if self.host is None else {s.phase: s.memory for s in self.host.samples}
        return RecoveryRun(
            kind,
            engine,
            stamps,
            host,
            self.device,
            dict(self.engine_device),
            release,
            tuple(self.notes),
            failure,
        )
