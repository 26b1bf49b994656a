"""The engine's memory read for the ledger: found by the port it listens on, read at the
park and the return, and recorded by the control loop (the simulated engine on cpu holds
its weights and KV cache in real host pages)."""

from __future__ import annotations

from pathlib import Path

from learnsched.handoff.engine_memory import EngineMemory, listening_pid
from learnsched.serving.ledger import read_ledger
from learnsched.testing import free_port

from control_support import make_loop
from engine_support import engine

MIB = 2**20


def test_the_engine_is_the_process_listening_on_its_port() -> None:
    with engine("vllm") as sim:
        port = int(sim.url.rsplit(":", 1)[1])
        assert listening_pid(port) == sim.pid
        _, host = EngineMemory(sim.url).read()
    assert host is not None
    assert host.pids[0] == sim.pid
    assert host.pss > 16 * MIB  # its 8 MiB of weights and 8 MiB of KV cache, and Python
    assert listening_pid(free_port()) is None


def test_an_engine_on_another_host_is_not_read() -> None:
    for url in ("http://192.0.2.1:8000", "http://engine.example:8000"):
        memory = EngineMemory(url)
        assert memory.read() == (None, None)
        memory.mark("awake")
        assert memory.fields("awake", "never marked") == {
            "device_before": None, "host_before": None, "device_after": None, "host_after": None,
        }  # fmt: skip


def test_the_loop_records_the_memory_around_each_park_and_return(tmp_path: Path) -> None:
    with engine("vllm", weights_mib=16, kv_mib=64) as sim:
        loop = make_loop(
            sim.url, "vllm", [(0.3, 1.5)], tmp_path,
            trainer_options={"work_quanta": 10, "quantum_s": 0.05},
        )  # fmt: skip
        assert loop.run().handoffs == 1
    records = read_ledger(tmp_path / "ledger.jsonl")
    (park,) = [r for r in records if r.kind == "park"]
    (back,) = [r for r in records if r.kind == "return"]
    awake, parked, returned = park.host_before, back.host_before, back.host_after
    assert awake is not None
    assert parked is not None
    assert returned is not None
    assert awake.pids[0] == parked.pids[0] == returned.pids[0] == sim.pid
    # A level-1 park frees the KV cache's 64 MiB (the weights stay in host memory) ...
    assert awake.pss - parked.pss >= 48 * MIB
    # ... and the return takes it again.
    assert returned.pss - parked.pss >= 48 * MIB
