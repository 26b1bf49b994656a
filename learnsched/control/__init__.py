"""The running scheduler: LearnSched's online control loop over a serving engine and a trainer.

- :mod:`.loop`: :class:`ControlLoop` (the event loop); :mod:`.restart`: what a restarted
  loop reads from its ledger and how it heals an engine a killed run left parked;
- :mod:`.deciders`: every decider (:class:`ModelDecider`, :class:`ForecastDecider`
  under sampled calendars, :class:`CausalForecastDecider`, :class:`QueueDecider`);
- :mod:`.config`: :class:`RunConfig` and :func:`build_run`, the scheduler as
  ``learnsched run`` assembles it, for the command line and Python programs alike;
- :mod:`.windows`: calendar sources (:class:`KnownCalendar`, :func:`read_calendar`);
- :mod:`.watcher`: the load signal from ``/metrics`` and notified arrivals;
- :mod:`.actuation`: parking and returning the engine (:class:`ServingEngine`);
- :mod:`.trainer`: the trainer protocol over a process boundary (:class:`Trainer`,
  :class:`TrainerProcess`); :mod:`.lora_trainer`: the reference LoRA trainer;
  :mod:`.peft_trainer`: the user's own LoRA job (:class:`PeftTrainer`), both on
  :mod:`.adapter_trainer`;
- :mod:`.journal`: the ledger's records and their replay (:func:`replay`);
- :mod:`.loadgen`: the trace replayer; :mod:`.demo`, :mod:`.timeline`: the demo and its plot.

Names load on first use, so importing the package costs nothing.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .actuation import EngineControl, ServingEngine
    from .config import RunConfig, SchedulerRun, build_run
    from .deciders import (
        CausalForecastDecider,
        Decider,
        ForecastDecider,
        ModelDecider,
        MoveDecider,
        QueueDecider,
    )
    from .journal import SUMMARY_KEYS, Totals, replay
    from .loadgen import LoadGenerator, RequestResult, TraceRequest, read_requests
    from .loop import ControlLoop, LoopOptions
    from .lora_trainer import LoraTrainer
    from .peft_trainer import PeftTrainer
    from .trainer import Advanced, Trainer, TrainerCosts, TrainerError, TrainerLost, TrainerProcess
    from .windows import KnownCalendar, Window, read_calendar

_NAMES = {
    "RunConfig": "config",
    "SchedulerRun": "config",
    "build_run": "config",
    "EngineControl": "actuation",
    "ServingEngine": "actuation",
    "SUMMARY_KEYS": "journal",
    "Totals": "journal",
    "replay": "journal",
    "LoadGenerator": "loadgen",
    "RequestResult": "loadgen",
    "TraceRequest": "loadgen",
    "read_requests": "loadgen",
    "CausalForecastDecider": "deciders",
    "Decider": "deciders",
    "ForecastDecider": "deciders",
    "ModelDecider": "deciders",
    "MoveDecider": "deciders",
    "QueueDecider": "deciders",
    "ControlLoop": "loop",
    "LoopOptions": "loop",
    "Advanced": "trainer",
    "Trainer": "trainer",
    "TrainerCosts": "trainer",
    "TrainerError": "trainer",
    "TrainerLost": "trainer",
    "TrainerProcess": "trainer",
    "LoraTrainer": "lora_trainer",
    "PeftTrainer": "peft_trainer",
    "KnownCalendar": "windows",
    "Window": "windows",
    "read_calendar": "windows",
}

__all__ = [
    "SUMMARY_KEYS",
    "Advanced",
    "CausalForecastDecider",
    "ControlLoop",
    "Decider",
    "EngineControl",
    "ForecastDecider",
    "KnownCalendar",
    "LoadGenerator",
    "LoopOptions",
    "LoraTrainer",
    "ModelDecider",
    "MoveDecider",
    "PeftTrainer",
    "QueueDecider",
    "RequestResult",
    "RunConfig",
    "SchedulerRun",
    "ServingEngine",
    "Totals",
    "TraceRequest",
    "Trainer",
    "TrainerCosts",
    "TrainerError",
    "TrainerLost",
    "TrainerProcess",
    "Window",
    "build_run",
    "read_calendar",
    "read_requests",
    "replay",
]


def __getattr__(name: str) -> object:
    if name in _NAMES:
        return getattr(importlib.import_module(f".{_NAMES[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
