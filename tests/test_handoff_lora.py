"""LoRA save/load on CPU, for real: shapes, bit-exact reload, a tiny PEFT model."""

from __future__ import annotations

from pathlib import Path

import pytest

from learnsched.handoff import (
    BASE_SHAPES,
    BaseShape,
    adapter_from_peft,
    apply_adapter,
    benchmark_lora,
    load_adapter,
    lora,
    read_adapter,
    save_adapter,
    synthesise_adapter,
)

torch = pytest.importorskip("torch", reason="the LoRA probe needs torch (learnsched[gpu])")
pytest.importorskip("safetensors", reason="the LoRA probe needs safetensors")


def test_synthesised_shapes_follow_the_base_model() -> None:
    shape = BASE_SHAPES["llama-3.2-3b"]
    tensors = synthesise_adapter(shape, rank=8)
    assert len(tensors) == shape.layers * 4 * 2
    prefix = "base_model.model.model.layers.0.self_attn"
    assert tensors[f"{prefix}.q_proj.lora_A.weight"].shape == (8, 3072)
    assert tensors[f"{prefix}.k_proj.lora_B.weight"].shape == (1024, 8)  # 8 kv heads x 128
    params = sum(t.numel() for t in tensors.values())
    assert params == 28 * 8 * (2 * (3072 + 3072) + 2 * (3072 + 1024))
    assert {t.dtype for t in tensors.values()} == {torch.float32}


def test_mlp_targets_and_dtype() -> None:
    tensors = synthesise_adapter(BASE_SHAPES["tiny"], 4, ["down_proj"], dtype="bfloat16")
    down = tensors["base_model.model.model.layers.1.mlp.down_proj.lora_A.weight"]
    assert down.shape == (4, 128)
    assert down.dtype == torch.bfloat16


def test_save_load_round_trip_is_bit_exact(tmp_path: Path) -> None:
    tensors = synthesise_adapter(BASE_SHAPES["tiny"], 8, dtype="bfloat16", seed=3)
    path = save_adapter(tensors, tmp_path, durable=True)
    assert path.name == "adapter_model.safetensors"
    assert not list(tmp_path.glob(".*.tmp"))  # the temporary file was renamed
    loaded = load_adapter(path, "cpu")
    assert loaded.keys() == tensors.keys()
    for name, tensor in tensors.items():
        assert torch.equal(loaded[name], tensor)
    assert read_adapter(tmp_path).keys() == tensors.keys()


# peft calls an attribute transformers 5 deprecates: their warning, not ours.
@pytest.mark.filterwarnings("ignore:.*is_gradient_checkpointing.*:FutureWarning")
def test_peft_model_round_trip(tmp_path: Path) -> None:
    peft = pytest.importorskip("peft", reason="needs peft")
    transformers = pytest.importorskip("transformers", reason="needs transformers (with peft)")
    config = transformers.LlamaConfig(
        vocab_size=64,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
    )

    def model(seed: int) -> object:
        torch.manual_seed(seed)
        lora = peft.LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"])
        wrapped = peft.get_peft_model(transformers.LlamaForCausalLM(config), lora)
        with torch.no_grad():  # PEFT starts lora_B at zero: make every value count
            for name, param in wrapped.named_parameters():
                if "lora_" in name:
                    param.normal_()
        return wrapped

    original = adapter_from_peft(model(0))
    assert len(original) == 2 * 2 * 2
    save_adapter(original, tmp_path, durable=True)
    fresh = model(1)
    assert not torch.equal(
        adapter_from_peft(fresh)[next(iter(original))], next(iter(original.values()))
    )
    apply_adapter(fresh, read_adapter(tmp_path))
    restored = adapter_from_peft(fresh)
    assert restored.keys() == original.keys()
    assert all(torch.equal(restored[k], original[k]) for k in original)


def test_benchmark_on_cpu(tmp_path: Path) -> None:
    tensors = synthesise_adapter(BASE_SHAPES["tiny"], 8)
    result = benchmark_lora(tensors, device="cpu", runs=3, folder=tmp_path)
    assert result.tensors == len(tensors)
    assert result.tensor_bytes == sum(t.numel() * 4 for t in tensors.values())
    assert result.adapter_bytes > result.tensor_bytes  # plus the safetensors header
    assert result.h2d_copy is None
    summary = result.summary()
    for key in ("save_ms", "save_durable_ms", "load_ms", "first_save_ms", "first_load_ms"):
        assert summary[key] > 0
    assert summary["runs"] == 3


def test_saves_are_timed_from_the_tensors_on_the_device(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A GPU checkpoint's device-to-host copy belongs to the save: no host copy is made
    # before the timed save, whose tensors sit on the load device.
    seen: list[set[str]] = []
    real_save = lora.save_adapter

    def spy(tensors: dict[str, object], folder: Path, *, durable: bool) -> Path:
        seen.append({str(t.device) for t in tensors.values()})  # type: ignore[attr-defined]
        return real_save(tensors, folder, durable=durable)

    monkeypatch.setattr(lora, "save_adapter", spy)
    benchmark_lora(
        synthesise_adapter(BASE_SHAPES["tiny"], 2), device="cpu", runs=2, folder=tmp_path
    )
    assert seen == [{"cpu"}] * 4  # 2 buffered + 2 durable saves


def test_buffered_save_is_atomic_too(tmp_path: Path) -> None:
    tensors = synthesise_adapter(BASE_SHAPES["tiny"], 2)
    path = save_adapter(tensors, tmp_path, durable=False)
    assert not list(tmp_path.glob(".*.tmp"))
    assert load_adapter(path).keys() == tensors.keys()


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"rank": 0}, "rank must be >= 1, got 0"),
        ({"rank": 8, "targets": ["lm_head"]}, "target module must be one of"),
        ({"rank": 8, "dtype": "int8"}, "dtype must be one of"),
        ({"rank": 8, "targets": []}, "targets must name at least one module"),
    ],
)
def test_bad_adapter_arguments(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        synthesise_adapter(BASE_SHAPES["tiny"], **kwargs)  # type: ignore[arg-type]


def test_bad_shape_and_runs(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="layers must be >= 1, got -2"):
        BaseShape("bad", -2, 64, 4, 2, 128)
    with pytest.raises(ValueError, match="not a multiple of heads"):
        BaseShape("bad", 2, 65, 4, 2, 128)
    with pytest.raises(ValueError, match="runs must be >= 2, got 1"):
        benchmark_lora(synthesise_adapter(BASE_SHAPES["tiny"], 2), runs=1, folder=tmp_path)
    with pytest.raises(FileNotFoundError, match="no such file"):
        read_adapter(tmp_path / "missing")


@pytest.mark.gpu
def test_benchmark_on_gpu_has_a_device_part(tmp_path: Path) -> None:
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")
    result = benchmark_lora(synthesise_adapter(BASE_SHAPES["tiny"], 8), device="cuda", runs=3)
    assert result.h2d_copy is not None
    assert result.h2d_copy.clock == "cuda-event"
    assert result.summary()["h2d_copy_ms"] is not None
