"""Test-only: let a CPU vLLM accept ``--enable-sleep-mode`` (put on the server's PYTHONPATH).

vLLM refuses sleep mode on CPU ("Sleep mode is not supported on current platform"), and
without it its dev-mode control plane is half there. This hook makes
``Platform.is_sleep_mode_available()`` true once ``vllm.platforms.interface`` loads, so
``/sleep``, ``/wake_up`` and ``/is_sleeping`` run for real over HTTP. The CPU worker
still moves no memory ("sleep mode is not supported on CPU, ignore it"): tests that use
this server check the control plane, never freed bytes.
"""

import importlib.abc
import importlib.machinery
import sys

TARGET = "vllm.platforms.interface"


class _Patch(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):  # type: ignore[no-untyped-def]
        if name != TARGET:
            return None
        sys.meta_path.remove(self)
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is None or spec.loader is None:
            return spec
        run = spec.loader.exec_module

        def exec_module(module):  # type: ignore[no-untyped-def]
            run(module)
            module.Platform.is_sleep_mode_available = lambda self: True

        spec.loader.exec_module = exec_module  # type: ignore[method-assign]
        return spec


sys.meta_path.insert(0, _Patch())
