"""The one Job type: what the scenario, the portfolio, the study and the queue plan."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

import learnsched as ls
from learnsched.calendar.study import StudyCandidate
from learnsched.job import JOB_FIELDS
from learnsched.portfolio import PortfolioCandidate


def test_a_job_builds_the_scenario_it_is_read_back_from() -> None:
    job = ls.Job(6, 5.0, 0.25, 1020.0, save_s=0.068075, load_s=0.047748)
    scenario = job.scenario([(0, 80), (100, 180)], ls.PAPER_WARM)
    assert scenario.costs == ls.PAPER_WARM
    assert ls.Job.of(scenario) == job
    assert job.costs(0.487, 0.06383) == ls.PAPER_WARM


def test_a_job_is_read_from_the_fields_an_object_carries() -> None:
    job = ls.Job(6, 5.0, 0.25, 1020.0, 0.1, 0.2, ls.InitialState(2, 1, True))
    assert ls.Job.of_fields(job) == job
    queued = SimpleNamespace(**{name: getattr(job, name) for name in JOB_FIELDS[:-1]})
    assert ls.Job.of_fields(queued) == ls.Job(6, 5.0, 0.25, 1020.0, 0.1, 0.2)  # no progress


def test_the_candidates_hold_their_job_and_write_the_same_json() -> None:
    initial = ls.InitialState(2, 1, True)
    job = ls.Job(12, 5.0, [[0.0, 0.5], [600.0, 0.25]], 1020.0, 0.1, 0.2, initial)
    candidate = PortfolioCandidate.from_job("lora", job, half_life_s=60.0)
    assert candidate.job == job
    assert candidate.to_json() == {"name": "lora", **job.to_json(), "half_life_s": 60.0}
    assert PortfolioCandidate.from_json(candidate.to_json()) == candidate
    study = StudyCandidate(12, 5.0, 0.25, 480.0, ls.PAPER_COLD)
    assert study.job == ls.Job(12, 5.0, 0.25, 480.0, ls.PAPER_COLD.save_s, ls.PAPER_COLD.load_s)


@pytest.mark.parametrize(
    ("module", "old", "new"),
    [
        ("learnsched.portfolio", "Candidate", "PortfolioCandidate"),
        ("learnsched.portfolio.model", "Candidate", "PortfolioCandidate"),
        ("learnsched.calendar.study", "Candidate", "StudyCandidate"),
    ],
)
def test_the_old_candidate_names_warn_for_one_release(module: str, old: str, new: str) -> None:
    import importlib

    namespace = importlib.import_module(module)
    with pytest.warns(DeprecationWarning, match=f"{module}.{old}"):
        assert getattr(namespace, old) is getattr(namespace, new)
    with pytest.raises(AttributeError):
        namespace.__getattr__("NoSuchName")


def test_a_decider_plans_a_job_as_its_fields() -> None:
    from learnsched.control.deciders import ModelDecider
    from learnsched.control.windows import Window

    job = ls.Job(10, 1.0, 0.5, 400.0, save_s=0.25, load_s=0.5)
    fields = ModelDecider(10, 1.0, job.costs(2.0), 0.5, 400.0)
    built = ModelDecider.from_job(job, ls.HandoffCosts(recovery_s=2.0))
    windows = [Window(0.0, 30.0), Window(60.0, 90.0)]
    assert built.scenario(windows, 2, 2, False) == fields.scenario(windows, 2, 2, False)
    assert built.decide(windows, 2, 2, False) == fields.decide(windows, 2, 2, False)
