"""The arrival-aware AIMD background share."""

from __future__ import annotations

import math
import threading

import pytest

from learnsched import _capacity
from learnsched.capacity import AIMDConfig, AIMDController, next_share


def test_additive_increase_under_low_load_up_to_the_bound() -> None:
    config = AIMDConfig(step=0.25, max_share=0.6)
    controller = AIMDController(config)
    assert [controller.update(arrival_rate=4.0, backlog_s=0.0) for _ in range(4)] == [
        0.25,
        0.5,
        0.6,
        0.6,
    ]


def test_burst_or_pressure_decreases_multiplicatively_to_the_floor() -> None:
    config = AIMDConfig(factor=0.5, min_share=0.1, initial_share=0.8, burst_rate=10.0)
    assert next_share(config, 0.8, arrival_rate=40.0, backlog_s=0.0) == 0.4
    assert next_share(config, 0.8, arrival_rate=4.0, backlog_s=1.0) == 0.4
    assert next_share(config, 0.8, arrival_rate=4.0, backlog_s=math.inf) == 0.4
    assert next_share(config, 0.15, arrival_rate=40.0, backlog_s=0.0) == 0.1


def test_static_config_never_moves() -> None:
    config = AIMDConfig.static(0.25)
    for rate, backlog in [(0.0, 0.0), (100.0, 0.0), (0.0, 10.0)]:
        assert next_share(config, 0.25, rate, backlog) == 0.25


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"step": -0.1}, "step must be >= 0"),
        ({"factor": 1.5}, r"factor must be in \[0, 1\]"),
        ({"min_share": 0.5, "max_share": 0.4}, "min_share must be <= max_share"),
        ({"initial_share": 0.95}, "initial_share must be in"),
        ({"burst_rate": float("nan")}, "burst_rate must be finite"),
        ({"pressure_limit_s": -1.0}, "pressure_limit_s must be >= 0"),
    ],
)
def test_bad_config(kwargs: dict[str, float], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        AIMDConfig(**kwargs)


def test_bad_observations() -> None:
    controller = AIMDController()
    with pytest.raises(ValueError, match="arrival_rate must be >= 0"):
        controller.update(-1.0, 0.0)
    with pytest.raises(ValueError, match="backlog_s must be finite"):
        controller.update(1.0, float("nan"))


def test_concurrent_updates_are_serialised() -> None:
    controller = AIMDController(AIMDConfig(step=1e-6, max_share=1.0))

    def worker() -> None:
        for _ in range(10_000):
            controller.update(0.0, 0.0)

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert controller.share == pytest.approx(4 * 10_000 * 1e-6)


@pytest.mark.parametrize(
    ("args", "error", "message"),
    [
        ((0.5, math.nan, math.nan), ValueError, "arrival_rate must be finite"),
        ((0.5, 1.0, math.nan), ValueError, "backlog_s must be finite"),
        ((0.5, -1.0, 0.0), ValueError, "arrival_rate must be >= 0"),
        ((0.5, 1.0, -0.1), ValueError, "backlog_s must be >= 0"),
        ((0.5, math.inf, 0.0), ValueError, "arrival_rate must be finite"),
        ((1.5, 1.0, 0.0), ValueError, r"share must be in \[0, 1\]"),
        ((math.nan, 1.0, 0.0), ValueError, "share must be finite"),
        (("0.5", 1.0, 0.0), TypeError, "share must be a number"),
    ],
)
def test_next_share_validates_like_update(
    args: tuple[object, object, object], error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=message):
        next_share(AIMDConfig(), *args)  # type: ignore[arg-type]


def test_next_share_needs_a_config_and_accepts_infinite_pressure() -> None:
    with pytest.raises(TypeError, match="config must be an AIMDConfig"):
        next_share(None, 0.5, 1.0, 0.0)  # type: ignore[arg-type]
    assert next_share(AIMDConfig(factor=0.5), 0.5, 1.0, math.inf) == 0.25


# --- the private kernel -----------------------------------------------------------------------


def test_private_next_share_checks_its_config() -> None:
    """The private kernel checks its config's type itself, not by reading a field of it."""
    with pytest.raises(TypeError, match="config must be an AIMDConfig, got NoneType"):
        _capacity.next_share(0.5, 1.0, 0.0, None)
    assert 0.0 <= _capacity.next_share(0.5, 1.0, 0.0, AIMDConfig()) <= 1.0
