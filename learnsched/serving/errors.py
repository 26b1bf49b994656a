"""The one exception family of the engines' HTTP client and the handoff probes."""

from __future__ import annotations

from .._extras import MissingExtra, install_hint

__all__ = [
    "DeviceMismatch",
    "EngineBusy",
    "GpuExtraMissing",
    "HandoffProbeError",
    "NvmlError",
    "NvmlUnavailable",
    "RecoveryFailed",
    "ServerConfigError",
]


class HandoffProbeError(RuntimeError):
    """A probe could not measure what it was asked to (missing extra, failed check)."""


class NvmlError(HandoffProbeError):
    """An NVML call failed; the message names the call and NVML's reason."""


class NvmlUnavailable(NvmlError, MissingExtra):
    """NVML cannot be used here: no ``nvidia-ml-py``, no driver, or no GPU (CLI: exit 3)."""


class DeviceMismatch(NvmlUnavailable):
    """NVML lists no GPU with the UUID torch reports: NVML cannot watch that GPU.

    Not bad input (the user named a valid device): the two libraries see different
    devices, e.g. a MIG slice or a container's view (CLI: exit 3, like NVML missing).
    """


class GpuExtraMissing(HandoffProbeError, MissingExtra):
    """A package of the GPU extra is not installed (CLI: exit 3)."""


class ServerConfigError(HandoffProbeError):
    """The server was started without a flag the park needs; the message names it."""


class EngineBusy(HandoffProbeError):
    """The engine still ran or queued requests when the park was due."""


class RecoveryFailed(HandoffProbeError):
    """A recovery that came back wrong (e.g. without its weights); it is still recorded.

    Parameters
    ----------
    message
        The reason, e.g. ``"weights not restored: ..."``.
    run
        The measured recovery, with ``RecoveryRun.failure`` set.
    """

    def __init__(self, message: str, run: object) -> None:
        super().__init__(message)
        self.run = run


def missing_extra(module: str, err: ImportError) -> GpuExtraMissing:
    """The error for an optional dependency that is not installed."""
    return GpuExtraMissing(
        f"{module} is not installed ({err}); install the GPU extra: {install_hint('gpu')}"
    )
