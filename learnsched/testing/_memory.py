"""The simulated engine's memory: real buffers for its weights and KV cache.

On ``cpu`` a buffer is an anonymous ``mmap`` with every page written, so it costs
resident host memory (its PSS shows it) and goes back to the OS when freed (a large
``bytearray`` may stay in malloc's heap after it is freed); on ``cuda[:N]`` it is a ``torch.uint8`` tensor on that
device (torch is imported only then), freed through ``torch.cuda.empty_cache`` so that
NVML sees the device memory come back, as it does when vLLM's CuMemAllocator or
SGLang's torch_memory_saver unmaps a sleeping pool.

The weights' bytes are a pattern drawn from the engine's seed: the text it generates
is a function of :func:`fingerprint` of those bytes, so a resume that brought back
fresh memory instead of the weights answers with different text.
"""

from __future__ import annotations

import hashlib
import mmap
from typing import Any

__all__ = ["PAGE", "Buffer", "check_device", "fingerprint"]

PAGE = 4096
# Strided samples across the whole buffer: a partly restored buffer changes the print too.
SAMPLES = 64


def check_device(device: str) -> str:
    """``device`` (``cpu``, ``cuda`` or ``cuda:N``), or ``ValueError`` naming it."""
    if device == "cpu" or device == "cuda":
        return device
    head, _, index = device.partition(":")
    if head == "cuda" and index.isdigit():
        return device
    raise ValueError(f"device must be cpu, cuda or cuda:N, got {device!r}")


def _pattern(seed: int, nbytes: int) -> bytes:
    """``nbytes`` (a multiple of :data:`PAGE`) of the seed's pattern: one page, repeated."""
    page = b"".join(
        hashlib.sha256(f"{seed}:{block}".encode()).digest() for block in range(PAGE // 32)
    )
    return page * (nbytes // PAGE)


def _pages(nbytes: int) -> int:
    """Whole pages holding ``nbytes`` (at least one: the fingerprint needs bytes)."""
    return max(1, -(-nbytes // PAGE)) * PAGE


class Buffer:
    """One allocation on the engine's device.

    Parameters
    ----------
    nbytes
        Size, bytes (rounded up to whole 4 KiB pages, at least one).
    device
        ``cpu``, ``cuda`` or ``cuda:N``.
    seed
        Fill with this seed's pattern (weights); ``None`` writes zeros to every page
        (a KV cache, or memory that lost its weights).
    """

    def __init__(self, nbytes: int, device: str, seed: int | None = None) -> None:
        self.nbytes = _pages(nbytes)
        self.device = check_device(device)
        self.data: Any = self._allocate(seed)

    def _allocate(self, seed: int | None) -> Any:
        if self.device == "cpu":
            data = mmap.mmap(-1, self.nbytes)  # zero pages, none resident yet
            if seed is not None:
                data[:] = _pattern(seed, self.nbytes)
            else:
                data[::PAGE] = bytes(self.nbytes // PAGE)  # touch each page
            return data
        import torch  # only for a CUDA engine

        if seed is None:
            return torch.zeros(self.nbytes, dtype=torch.uint8, device=self.device)
        host = torch.frombuffer(bytearray(_pattern(seed, self.nbytes)), dtype=torch.uint8)
        return host.to(self.device)

    def to_host(self) -> Buffer:
        """A host copy (vLLM level 1 / SGLang ``--enable-weights-cpu-backup``)."""
        copy = Buffer.__new__(Buffer)
        copy.nbytes, copy.device = self.nbytes, "cpu"
        if isinstance(self.data, mmap.mmap):
            copy.data = mmap.mmap(-1, self.nbytes)
            copy.data[:] = self.data
        else:  # a CUDA buffer's backup is a torch tensor in host memory
            copy.data = self.data.cpu()
        return copy

    def to_device(self, device: str) -> Buffer:
        """A copy on ``device`` (the restore of a host backup)."""
        if device == "cpu" or isinstance(self.data, mmap.mmap):
            copy = self.to_host()
            copy.device = check_device(device)
            if device != "cpu":
                import torch

                copy.data = torch.frombuffer(copy.data, dtype=torch.uint8).to(device)
            return copy
        copy = Buffer.__new__(Buffer)
        copy.nbytes, copy.device = self.nbytes, check_device(device)
        copy.data = self.data.to(device)
        return copy

    def _host_bytes(self, view: Any) -> bytes:
        """A slice of :attr:`data` as bytes on the host."""
        if isinstance(view, bytes):  # a slice of an mmap
            return view
        return bytes(view.cpu().numpy().tobytes())

    def head_bytes(self, count: int) -> bytes:
        """The first ``count`` bytes, on the host."""
        return self._host_bytes(self.data[:count])

    def samples(self) -> bytes:
        """:data:`SAMPLES` bytes taken at even strides across the buffer."""
        step = max(1, self.nbytes // SAMPLES)
        return self._host_bytes(self.data[::step])

    def free(self) -> None:
        """Give the memory back (to the OS, or through the CUDA caching allocator)."""
        if isinstance(self.data, mmap.mmap):
            self.data.close()
        self.data = None
        if self.device != "cpu":
            import torch

            torch.cuda.synchronize(self.device)
            torch.cuda.empty_cache()


def fingerprint(weights: Buffer) -> str:
    """What the model "is": a digest of the weights' first page and strided samples."""
    digest = hashlib.sha256(weights.head_bytes(PAGE))
    digest.update(weights.samples())
    return digest.hexdigest()[:16]
