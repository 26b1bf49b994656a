"""Plans as readable text timelines (``learnsched explain``)."""

from __future__ import annotations

from collections.abc import Mapping

from .benefit import benefit_text
from .plan import Plan, Step
from .scenario import Scenario

__all__ = ["describe_scenario", "format_plan", "format_plans"]


def describe_scenario(scenario: Scenario) -> str:
    """Two lines: the work, benefit, costs and initial state; then the windows."""
    c, init = scenario.costs, scenario.initial
    mode = "active" if init.active else "service"
    ret = (
        f"return {c.recovery_s:g} s"
        if c.cold_recovery_s is None
        else f"return warm {c.recovery_s:g} s or cold {c.cold_recovery_s:g} s"
    )
    head = (
        f"work {scenario.work_quanta} x {scenario.quantum_s:g} s, g = {benefit_text(scenario.benefit_rate)} "
        f"s-eq./s until H = {scenario.horizon_s:g} s; {ret}, "
        f"residency {c.residency_rate:g} s-eq./s, save {c.save_s:g} s, load {c.load_s:g} s; "
        f"start: progress {init.progress}, durable {init.durable}, {mode}"
    )
    windows = " ".join(f"[{a:g}, {b:g}]" for a, b in scenario.windows)
    return f"{head}\nwindows: {windows}"


def _what(step: Step) -> str:
    path = "" if step.path is None else f", {step.path} return"  # two-path scenarios only
    if step.action == "advance":
        saved = " + checkpoint" if step.checkpoint else " (unsaved)"
        return f"advance {step.quanta} quanta{saved}{path}"
    if step.action == "publish":
        return f"publish: finish {step.quanta} quanta{path}"
    return step.action.replace("_", " ") + path


def _row(step: Step) -> str:
    if step.ready_s is None:
        return f"  {step.window:>3}  {step.start_s:>9.3f}  {_what(step)}"
    c = step.cost
    published = f", published at {step.publish_s:.6f} s" if step.publish_s is not None else ""
    return (
        f"  {step.window:>3}  {step.start_s:>9.3f}  {_what(step):<32}  ready {step.ready_s:>10.6f}  "
        f"cost {c.total:>10.6f} (work {c.work:g}, save {c.save:g}, load {c.load:g}, "
        f"return {c.recovery:g}, residency {c.residency:.6g}){published}"
    )


def format_plan(plan: Plan) -> str:
    """A plan's headline (value = benefit - cost, publication) and one line per window."""
    published = (
        f"publishes at {plan.publish_s:.6f} s" if plan.publish_s is not None else "never publishes"
    )
    head = (
        f"{plan.policy}: value {plan.value:.6f} s-eq. = benefit {plan.benefit:.6f} "
        f"- cost {plan.cost.total:.6f}; {published}"
    )
    return "\n".join([head, "  win      start  action", *(_row(s) for s in plan.steps)])


def format_plans(plans: Mapping[str, Plan]) -> str:
    """Every plan, then Rollout's gain over Costed Window when both are present."""
    blocks = [format_plan(p) for p in plans.values()]
    if "rollout" in plans and "costed_window" in plans:
        gain = plans["rollout"].value - plans["costed_window"].value
        blocks.append(f"rollout - costed_window: {gain:+.6f} s-eq.")
    return "\n\n".join(blocks)
