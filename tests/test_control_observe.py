"""``learnsched run --metrics-port``: the loop's Prometheus metrics and /healthz."""

from __future__ import annotations

import http.client
import json
import re
import threading
import time
from pathlib import Path

import pytest
from test_side_servers import needs_ipv6

from learnsched.control.observe import LoopObserver
from learnsched.testing import EngineConfig, SimulatedEngine

from control_support import make_loop

pytest.importorskip("prometheus_client", reason="needs prometheus_client (learnsched[serve])")


def get(url: str, path: str) -> tuple[int, str]:
    host, port = url.removeprefix("http://").rsplit(":", 1)
    conn = http.client.HTTPConnection(host.strip("[]"), int(port), timeout=10)
    try:
        conn.request("GET", path)
        response = conn.getresponse()
        return response.status, response.read().decode()
    finally:
        conn.close()


def value(text: str, name: str) -> float:
    found = re.search(rf"^{re.escape(name)} (\S+)$", text, re.MULTILINE)
    assert found is not None, f"{name} not in\n{text}"
    return float(found.group(1))


def test_metrics_and_health_follow_the_loop(tmp_path: Path) -> None:
    with SimulatedEngine(EngineConfig("vllm", token_s=0.001)) as engine:
        loop = make_loop(
            engine.url, "vllm", [(0.2, 1.5), (2.0, 60.0)], tmp_path, until_s=2.6,
            trainer_options={"work_quanta": 1000, "quantum_s": 0.02},
        )  # fmt: skip
        observer = LoopObserver(loop).start()
        try:
            status, body = get(observer.url, "/healthz")
            assert status == 503  # not started yet
            assert json.loads(body)["status"] == "starting"
            seen: dict[str, object] = {}

            def watch() -> None:  # while the first window is lent
                while not loop.lent and loop.state != "stopped":
                    time.sleep(0.01)
                seen["lent"] = value(get(observer.url, "/metrics")[1], "learnsched_lent")
                seen["health"] = get(observer.url, "/healthz")

            watcher = threading.Thread(target=watch)
            watcher.start()
            totals = loop.run()
            watcher.join(10)
            text = get(observer.url, "/metrics")[1]
            status, body = get(observer.url, "/healthz")
        finally:
            observer.stop()
    assert seen["lent"] == 1.0
    assert seen["health"][0] == 200  # type: ignore[index]
    assert json.loads(seen["health"][1])["lent"] is True  # type: ignore[index]
    assert value(text, "learnsched_windows_lent_total") == totals.handoffs == 2
    assert value(text, "learnsched_windows_total") == totals.windows
    assert value(text, "learnsched_quanta_done_total") == totals.quanta_done
    assert value(text, "learnsched_durable_quanta") == totals.durable_quanta
    assert value(text, "learnsched_late_returns_total") == 0
    assert value(text, "learnsched_quarantined") == 0
    assert value(text, "learnsched_lent") == 0
    assert value(text, 'learnsched_added_latency_seconds_bucket{le="+Inf"}') == 0
    assert value(text, "learnsched_decision_seconds") > 0
    assert status == 503  # stopped
    assert json.loads(body)["status"] == "stopped"


def test_a_quarantined_run_is_unhealthy(tmp_path: Path) -> None:
    with SimulatedEngine(EngineConfig("vllm", weights_backup=False, token_s=0.001)) as engine:
        loop = make_loop(engine.url, "vllm", [(0.2, 1.5), (2.0, 60.0)], tmp_path, until_s=1.8)
        observer = LoopObserver(loop)
        with pytest.raises(Exception, match="weights not restored"):
            loop.run()
        status, body = observer.health()
        text = observer.metrics_text().decode()
        observer.stop()
    assert status == 503
    assert json.loads(json.dumps(body))["quarantined"] is True
    assert value(text, "learnsched_quarantined") == 1.0


@pytest.mark.parametrize(
    ("flag", "shown"),
    [("{port}", "127.0.0.1"), pytest.param("[::1]:{port}", "[::1]", marks=needs_ipv6)],
)
def test_run_serves_them_on_the_flag(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], flag: str, shown: str
) -> None:
    from learnsched.cli import main
    from learnsched.testing import free_port

    from control_support import COUNTING

    port = free_port()
    (tmp_path / "calendar.json").write_text(json.dumps({"windows": [[0.3, 60.0]]}))
    with SimulatedEngine(EngineConfig("vllm", token_s=0.001)) as engine:
        argv = [
            "run", "--engine", "vllm", "--url", engine.url, "--trainer", COUNTING,
            "--calendar", str(tmp_path / "calendar.json"), "--ledger",
            str(tmp_path / "ledger.jsonl"), "--state-dir", str(tmp_path / "state"),
            "--metrics-port", flag.format(port=port), "--seconds", "2.0",
        ]  # fmt: skip
        seen: list[tuple[int, str]] = []

        def poll() -> None:  # main() must run on the main thread (signal handlers)
            end = time.monotonic() + 30
            while time.monotonic() < end and not seen:
                try:
                    answer = get(f"http://{shown}:{port}", "/healthz")
                    if answer[0] == 200:
                        seen.append(answer)
                except OSError:
                    pass
                time.sleep(0.05)

        poller = threading.Thread(target=poll)
        poller.start()
        result = [main(argv)]
        poller.join(30)
    assert seen, "never healthy while running"
    body = seen[0][1]
    assert result == [0]
    assert json.loads(body)["status"] == "running"
    printed = capsys.readouterr()
    assert f"metrics http://{shown}:{port}/metrics" in printed.err
    # The run's summary in words, not Python's reprs.
    assert "published" in printed.out
    assert not set(printed.out.split()) & {"None", "True", "False"}
