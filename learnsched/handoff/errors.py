"""The one exception family of the handoff probes."""

from __future__ import annotations

from .._extras import MissingExtra

__all__ = ["DeviceMismatch", "HandoffProbeError", "NvmlError", "NvmlUnavailable"]


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


def missing_extra(module: str, err: ImportError) -> HandoffProbeError:
    """The error for an optional dependency that is not installed."""
    return HandoffProbeError(
        f"{module} is not installed ({err}); install the GPU extra: pip install 'learnsched[gpu]'"
    )
