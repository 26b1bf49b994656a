"""``learnsched grid | solve | explain``: the finite model from the command line."""

from __future__ import annotations

import argparse
import csv
import io
import time
from collections.abc import Callable
from typing import Any

from .._atomic import atomic_write_text
from .._json import read_json
from .._progress import Progress
from ..batch import BatchResult, solve_batch
from ..explain import describe_scenario, format_plans
from ..grid import Grid, paper_grid, scenario_by_id
from ..scenario import HandoffCosts, Recovery, scenarios_from_json
from ..solver import ALL_POLICIES, Model, Policy, guard_epsilon
from ..summary import PAPER_FIGURES, GridSummary, summarize
from .costs import add_cost_flags, profile_costs
from .output import PLOT_EXTRA, emit_json

__all__ = ["register"]


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``grid``, ``solve`` and ``explain`` sub-commands."""
    grid = commands.add_parser(
        "grid", help="solve the paper's scenario grid and compare with the paper"
    )
    grid.add_argument(
        "--quantum", type=float, default=5.0, help="work quantum in seconds (default 5)"
    )
    grid.add_argument("--fresh-only", action="store_true", help="only fresh initial states (480)")
    grid.add_argument("--threads", type=int, default=1, help="solver threads (default 1)")
    grid.add_argument("--json", action="store_true", help="print the summary as JSON")
    grid.add_argument("--csv", metavar="FILE", help="write every scenario's value per policy")
    grid.add_argument(
        "--plot", metavar="FILE", help=f"draw Fig. 4(a, b) style panels ({PLOT_EXTRA})"
    )
    add_cost_flags(grid)
    grid.set_defaults(func=run_grid)

    solve = commands.add_parser("solve", help="solve scenarios from a JSON file ('-' for stdin)")
    solve.add_argument("file", help="a scenario object or a list of them")
    solve.add_argument("--policy", help="only this policy (default: the paper's six; or 'guarded')")
    solve.add_argument(
        "--epsilon",
        type=float,
        metavar="E",
        help="score-error bound of --policy guarded, s-eq. (default 0: rollout; inf: costed_window)",
    )
    solve.add_argument("--json", action="store_true", help="print plans as JSON")
    add_cost_flags(solve)
    solve.add_argument(
        "--recovery",
        choices=(*sorted(r.value for r in Recovery), "both"),
        help="which of the profile's recovery paths the scenarios use (with --costs); "
        "both: every return chooses",
    )
    solve.set_defaults(func=run_solve)

    explain = commands.add_parser("explain", help="show a grid scenario's plans as timelines")
    explain.add_argument("sid", help="scenario id, S0000..S1919")
    explain.add_argument("--quantum", type=float, default=5.0, help="work quantum in seconds")
    explain.add_argument(
        "--all", action="store_true", help="all six policies, not only CW and Rollout"
    )
    explain.add_argument(
        "--plot", metavar="FILE", help=f"draw the plans like Fig. 4(c) ({PLOT_EXTRA})"
    )
    explain.add_argument(
        "--json", action="store_true", help="print the scenario, its labels and plans as JSON"
    )
    add_cost_flags(explain)
    explain.set_defaults(func=run_explain)


def _paper_key(args: argparse.Namespace) -> str | None:
    if args.costs is not None:  # measured costs: the paper's figures do not apply
        return None
    if args.quantum == 5.0 and not args.fresh_only:
        return "5s"
    if args.quantum == 1.0 and args.fresh_only:
        return "1s-fresh"
    return None


def _fmt(value: Any, spec: str = ".3f") -> str:
    return "-" if value is None else format(value, spec)


def _by_calendar(wins: dict[str, int]) -> str:
    return ", ".join(f"{k} {v}" for k, v in wins.items()) or "none"


def _beside(paper: dict[str, Any], key: str, show: Callable[[Any], str] = str) -> str:
    """`` (paper X)`` for a published figure, or nothing where the paper has none."""
    return f" (paper {show(paper[key])})" if key in paper else ""


def grid_table(summary: GridSummary, paper: dict[str, Any] | None, seconds: float) -> str:
    """The aggregate table with the paper's figures beside ours."""
    paper = paper or {}
    p_gap, p_value = paper.get("mean_gap", {}), paper.get("mean_value", {})
    lines = [
        (
            f"{summary.scenarios} scenarios, config sha256 {summary.config_hash[:16]}, "
            f"solved in {seconds:.3f} s"
        ),
        "",
        f"{'policy':<15}{'mean value':>12}{'paper':>10}{'mean DP gap':>14}{'paper':>10}",
    ]
    for policy in ALL_POLICIES:
        name = policy.value
        lines.append(
            f"{name:<15}{summary.mean_value[name]:>12.3f}{_fmt(p_value.get(name)):>10}"
            f"{_fmt(summary.mean_gap.get(name, 0.0)):>14}{_fmt(p_gap.get(name)):>10}"
        )
    wins = {k: v for k, v in summary.wins_by_calendar.items() if v}
    lines += [
        "",
        f"Rollout vs Costed Window: {summary.wins} wins / {summary.ties} ties / "
        f"{summary.losses} losses"
        + _beside(
            paper,
            "rollout_vs_costed_window",
            lambda w: f"{w['wins']} / {w['ties']} / {w['losses']}",
        ),
        f"  strict wins by calendar: {_by_calendar(wins)}"
        + _beside(paper, "wins_by_calendar", _by_calendar),
        f"Rollout equals DP in {summary.rollout_equals_dp} scenarios"
        + _beside(paper, "rollout_equals_dp")
        + f"; max Rollout gap {summary.max_rollout_gap:.3f}"
        + _beside(paper, "max_rollout_gap"),
        "Never is negative only for initial states: "
        + (", ".join(summary.never_negative_initial_states) or "none"),
    ]
    return "\n".join(lines)


def _grid_csv(grid: Grid, result: BatchResult) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    labels = ["sid", "calendar", "work_s", "benefit_rate", "tail_s", "recovery", "initial_state"]
    writer.writerow(labels + [f"value_{p.value}" for p in result.policies])
    columns = [grid.scenarios.column(name) for name in labels]  # no GridScenario built
    for row, values in zip(zip(*columns, strict=True), result.value.tolist(), strict=True):
        writer.writerow([*row, *map(repr, values)])
    return out.getvalue()


def run_grid(args: argparse.Namespace) -> int:
    """``learnsched grid``: solve the grid with all six policies and print the aggregates."""
    grid = paper_grid(args.quantum, args.fresh_only, profile_costs(args))
    started = time.perf_counter()
    with Progress(len(grid), "solving grid") as progress:
        result = solve_batch(grid.batch, ALL_POLICIES, args.threads, progress.advance)
    seconds = time.perf_counter() - started
    summary = summarize(grid, result)
    paper = PAPER_FIGURES.get(_paper_key(args) or "")
    if args.csv:
        atomic_write_text(args.csv, _grid_csv(grid, result))
    if args.plot:
        from ..plotting import plot_grid_summary

        plot_grid_summary(summary, args.plot)
    if args.json:
        extra = {} if args.costs_from is None else {"costs_from": args.costs_from}
        emit_json({**summary.to_json(), "paper": paper, "seconds": seconds, **extra})
    else:
        print(grid_table(summary, paper, seconds))
    return 0


def run_solve(args: argparse.Namespace) -> int:
    """``learnsched solve FILE``: plans of every policy (or one) for each scenario in FILE."""
    policies = [Policy.parse(args.policy)] if args.policy else list(ALL_POLICIES)
    if args.epsilon is not None and policies != [Policy.GUARDED]:
        raise ValueError(f"--epsilon goes with --policy guarded, got --epsilon {args.epsilon!r}")
    epsilon = guard_epsilon(0.0 if args.epsilon is None else args.epsilon)
    scenarios, many = scenarios_from_json(read_json(args.file))
    if (args.costs is None) != (args.recovery is None):
        raise ValueError("--costs PROFILE and --recovery cold|warm|both go together")
    paths = (Recovery.WARM, Recovery.COLD) if args.recovery == "both" else (args.recovery,)
    costs = profile_costs(args, paths)
    if costs is not None:
        scenarios = [s.with_costs(_recovery_costs(costs, args.recovery)) for s in scenarios]
    plans = [
        {p.value: model.solve(p, epsilon if p is Policy.GUARDED else 0.0) for p in policies}
        for model in map(Model, scenarios)
    ]
    if args.json:
        objs = [{"policies": {n: p.to_json() for n, p in ps.items()}} for ps in plans]
        emit_json(objs if many else objs[0])
        return 0
    for i, (scenario, ps) in enumerate(zip(scenarios, plans, strict=True)):
        header = f"scenario [{i}]: " if many else ""
        print(f"{header}{describe_scenario(scenario)}\n\n{format_plans(ps)}\n")
    return 0


def _recovery_costs(costs: dict[str, HandoffCosts], recovery: str) -> HandoffCosts:
    """The profile's costs of ``--recovery``: one path, or both offered (``"both"``)."""
    if recovery == "both":
        return HandoffCosts.choice(costs[Recovery.WARM], costs[Recovery.COLD])
    return costs[recovery]


def run_explain(args: argparse.Namespace) -> int:
    """``learnsched explain SID``: the plans of a grid scenario as timelines."""
    item = scenario_by_id(args.sid, args.quantum)
    costs = profile_costs(args, (item.recovery,))
    scenario = item.scenario if costs is None else item.scenario.with_costs(costs[item.recovery])
    policies = ALL_POLICIES if args.all else (Policy.COSTED_WINDOW, Policy.ROLLOUT)
    plans = Model(scenario).solve_all(policies)
    title = (
        f"{item.sid}: {item.calendar}, work {item.work_s:g} s, g = {item.benefit_rate:g}, "
        f"tail {item.tail_s:g} s, {item.recovery} recovery, {item.initial_state}"
    )
    if args.json:
        emit_json(
            {
                "sid": item.sid,
                "calendar": item.calendar,
                "work_s": item.work_s,
                "benefit_rate": item.benefit_rate,
                "tail_s": item.tail_s,
                "recovery": item.recovery.value,
                "initial_state": item.initial_state,
                "scenario": scenario.to_json(),
                "policies": {name: plan.to_json() for name, plan in plans.items()},
            }
        )
    else:
        print(f"{title}\n{describe_scenario(scenario)}\n\n{format_plans(plans)}")
    if args.plot:
        from ..plotting import plot_plans

        plot_plans(plans, scenario, args.plot, title)
    return 0
