"""A pytest plugin for CI: writes every skipped test and module with its reason.

.ci/run copies it into the README step's virtual environment and loads it through
PYTEST_ADDOPTS, so the README's test command runs as a user types it. The file named by
LEARNSCHED_CI_SKIPLOG gets one line per skip, ``NODE_ID<TAB>REASON``: the extras step
reruns exactly the tests that skipped for want of an extra. It works with pytest-xdist's
``-n``, as CI runs the suite.
"""

from __future__ import annotations

import os

import pytest

_skipped: list[tuple[str, str]] = []


def _reason(report: pytest.CollectReport | pytest.TestReport) -> str:
    longrepr = report.longrepr
    text = longrepr[2] if isinstance(longrepr, tuple) else str(longrepr)
    return text.removeprefix("Skipped: ").replace("\n", " ").replace("\t", " ")


def pytest_collectreport(report: pytest.CollectReport) -> None:
    if report.skipped:  # a module-level importorskip
        _skipped.append((report.nodeid, _reason(report)))


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.skipped and not hasattr(report, "wasxfail"):
        _skipped.append((report.nodeid, _reason(report)))


def pytest_sessionfinish(session: pytest.Session) -> None:
    path = os.environ.get("LEARNSCHED_CI_SKIPLOG")
    # Under pytest-xdist the controller writes the log: the workers' reports (module
    # skips included) reach its hooks, and a worker holds only its own share.
    if path and not hasattr(session.config, "workerinput"):
        with open(path, "w", encoding="utf-8") as out:
            out.writelines(f"{node}\t{reason}\n" for node, reason in _skipped)
