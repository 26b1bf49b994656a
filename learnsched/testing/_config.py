"""How a simulated engine behaves: :class:`EngineConfig`, one field per behaviour.

The defaults answer as the real engine of the dialect does where it answers and lives on
(vLLM queues requests while asleep and aborts, drains or freezes in-flight ones on
``/sleep``); where the real engine dies (SGLang) or numerics vary, the default is a
forgiving engine (a refused call answers 400 or 503 and the server lives on).
:meth:`EngineConfig.strict` turns on every behaviour of the real engine of its dialect
that can break a scheduler (``python -m learnsched.testing.engine --strict``). Each
behaviour has its own field and flag, so a test can ask for one, or turn one off to
inject the fault it stands for.
"""

from __future__ import annotations

from dataclasses import dataclass

from .._checks import integer, nonnegative

__all__ = ["DIALECTS", "DIALECT_DEFAULTS", "SGLANG_ONLY", "STRICT", "VLLM_ONLY", "EngineConfig"]

DIALECTS = ("vllm", "sglang")
NONNEGATIVE = (
    *("weights_mib", "kv_mib", "resident_mib", "token_s", "slow_health_s", "ready_delay_s"),
    *("release_s", "resume_s", "free_delay_s", "gauge_lag_s"),
)
# Behaviours only one engine has (a flag given to the other dialect is refused).
SGLANG_ONLY = (
    *("die_on_released_generation", "die_on_busy_release", "die_on_unreleased_resume"),
    "frozen_metrics",
)
VLLM_ONLY = ("queue_while_asleep", "sleep_modes")
# The vLLM behaviours on by default (``None``: the dialect's own; ``False`` injects a fault).
DIALECT_DEFAULTS = VLLM_ONLY
# What --strict sets, per dialect: every real failure mode of that engine.
STRICT: dict[str, dict[str, object]] = {
    "sglang": {
        **dict.fromkeys(SGLANG_ONLY, True),
        "batch_variant": True,
        "slow_health_s": 1.0,  # /health is a one-token generation polled with 1 s sleeps
    },
    "vllm": {
        **dict.fromkeys(VLLM_ONLY, True),
        "batch_variant": True,
        "force_include_usage": True,
    },
}


@dataclass(frozen=True)
class EngineConfig:
    """How the simulated engine behaves (every field has a command-line flag).

    Parameters
    ----------
    dialect
        ``"vllm"`` or ``"sglang"``: which HTTP routes and which park semantics.
    model
        The served model's name (``/v1/models``).
    seed
        Draws the weights' bytes, hence the text (same seed: same answers).
    weights_mib, kv_mib
        Memory held for the weights and the KV cache while awake, MiB.
    resident_mib
        Memory held even while parked, MiB (a sleeping engine keeps its CUDA context
        and some buffers: the paper saw 3.74 GiB of ~70 stay).
    device
        ``cpu`` (host memory) or ``cuda[:N]`` (device memory through torch).
    token_s
        Decode time per generated token, seconds.
    max_model_len
        The context length, tokens (vLLM ``--max-model-len``): vLLM refuses (400) a
        prompt longer than this, or ``max_tokens`` above it, and clamps ``max_tokens`` to
        what the prompt leaves; SGLang refuses ``max_new_tokens`` above it. The simulated
        tokenizer counts one token per whitespace-separated word.
    max_running
        Requests decoded at once; later ones wait (``num_requests_waiting``).
    weights_backup
        Keep a host copy of the weights while parked (vLLM level 1; SGLang
        ``--enable-weights-cpu-backup``). ``False``: a resume returns fresh memory.
    memory_saver
        Release frees memory (vLLM ``--enable-sleep-mode``, SGLang
        ``--enable-memory-saver``). ``False``: a release is accepted, nothing freed.
    refuse_busy
        Refuse a release while requests run or wait (400; SGLang asserts idleness).
    slow_health_s
        ``/health`` answers after this long (SGLang's is a generation: >= 1 s).
    ready_delay_s
        ``/health`` and generation answer 503 for this long after start.
    release_s, resume_s
        Time the release and resume calls take before answering, seconds.
    free_delay_s
        Memory goes this long *after* the release was acknowledged, seconds.
    resume_status, generate_status
        Answer resumes / generation requests with this status instead (200: normal).
    resume_failures
        With ``resume_status``: only the first this many resumes fail (0: every one),
        as a transient server error.
    stream
        ``"ok"``, or a broken generation stream: ``"error"`` event or ``"garbage"``.
    die_on_released_generation
        SGLang: a generation (``/health`` included) that reaches the scheduler while
        memory is released without ``/pause_generation`` runs on unmapped memory and
        the server process dies (an illegal-address fault).
    die_on_busy_release
        SGLang: ``/release_memory_occupation`` on a busy engine fails the scheduler's
        ``assert self.is_fully_idle()`` and the server process dies.
    die_on_unreleased_resume
        SGLang: ``/resume_memory_occupation`` of a tag never released raises
        ``KeyError`` in the scheduler and the server process dies.
    queue_while_asleep
        vLLM (on by default, as vLLM does): a generation sent while asleep is accepted
        and waits, uncounted by the gauges, until the engine wakes. ``False``: it is
        refused with 503 (a fault no vLLM shows).
    sleep_modes
        vLLM (on by default, as vLLM does): ``/sleep`` pauses the scheduler first, with
        ``mode=abort`` (the default) aborting in-flight requests (their streams end with
        ``finish_reason: "abort"``, then ``[DONE]``), ``mode=wait`` draining them,
        ``mode=keep`` freezing them until the wake-up; level 0 pauses only. ``False``: a
        busy sleep follows ``refuse_busy`` and level 0 is refused (faults no vLLM shows).
    frozen_metrics
        SGLang: ``/metrics`` gauges keep the values they had when the engine paused or
        released until it is back (its stats are logged only after a batch). vLLM's
        pause emits its own stats (after an abort the gauges read 0), so its gauges
        are never frozen.
    gauge_lag_s
        ``/metrics`` shows the load as it was this long ago, seconds (an engine's stats
        reach its front end after its next step; vLLM's CPU build showed a new request
        31-524 ms late and a finished one 7-57 ms late). 0, the default: the gauges are
        exact (no one lag fits every machine, and a lag makes every gauge read a race).
    batch_variant
        Greedy text depends on the batch a request runs in: a token decoded beside
        other requests may differ from the one decoded alone (batch-size-dependent
        numerics). ``False``: the engines' batch-invariance switches
        (``VLLM_BATCH_INVARIANT=1``, SGLang ``--enable-deterministic-inference``).
    force_include_usage
        The last event of an OpenAI stream is the usage-only ``{"choices": [],
        "usage": ...}`` (vLLM ``--enable-force-include-usage``; a request's
        ``stream_options.include_usage`` asks for it too).
    metrics
        ``False``: no load gauges (SGLang without ``--enable-metrics``: ``/metrics``
        is 404; vLLM with ``--disable-log-stats``: the gauges are absent).
    api_key
        Require ``Authorization: Bearer KEY`` (the engines' ``--api-key``): vLLM on its
        ``/v1`` routes, SGLang on every route but ``/health*`` and ``/metrics``; 401
        otherwise.
    ssl_certfile, ssl_keyfile
        Serve ``https://`` with this certificate and key (PEM files; the engines'
        ``--ssl-certfile``/``--ssl-keyfile``).
    """

    dialect: str
    model: str = "sim-model"
    seed: int = 0
    weights_mib: float = 8.0
    kv_mib: float = 8.0
    resident_mib: float = 2.0
    device: str = "cpu"
    token_s: float = 0.002
    max_model_len: int = 4096
    max_running: int = 8
    weights_backup: bool = True
    memory_saver: bool = True
    refuse_busy: bool = True
    slow_health_s: float = 0.0
    ready_delay_s: float = 0.0
    release_s: float = 0.0
    resume_s: float = 0.0
    free_delay_s: float = 0.0
    resume_status: int = 200
    resume_failures: int = 0
    generate_status: int = 200
    stream: str = "ok"
    die_on_released_generation: bool = False
    die_on_busy_release: bool = False
    die_on_unreleased_resume: bool = False
    queue_while_asleep: bool | None = None
    sleep_modes: bool | None = None
    frozen_metrics: bool = False
    gauge_lag_s: float = 0.0
    batch_variant: bool = False
    force_include_usage: bool = False
    metrics: bool = True
    api_key: str | None = None
    ssl_certfile: str | None = None
    ssl_keyfile: str | None = None

    def __post_init__(self) -> None:
        from ._memory import check_device

        if self.dialect not in DIALECTS:
            raise ValueError(f"dialect must be one of {', '.join(DIALECTS)}, got {self.dialect!r}")
        if not self.model:
            raise ValueError("model must be a non-empty name")
        check_device(self.device)
        integer("seed", self.seed, low=None)
        integer("max_running", self.max_running, low=1)
        integer("max_model_len", self.max_model_len, low=1)
        for name in NONNEGATIVE:
            nonnegative(name, getattr(self, name))
        integer("resume_status", self.resume_status, low=100, high=599)
        integer("generate_status", self.generate_status, low=100, high=599)
        integer("resume_failures", self.resume_failures, low=0)
        if self.stream not in ("ok", "error", "garbage"):
            raise ValueError(f"stream must be ok, error or garbage, got {self.stream!r}")
        if (self.ssl_certfile is None) != (self.ssl_keyfile is None):
            raise ValueError("ssl_certfile and ssl_keyfile go together (https needs both)")
        if self.api_key is not None and not self.api_key:
            raise ValueError("api_key must be a non-empty string (or None)")
        other = SGLANG_ONLY if self.vllm else VLLM_ONLY
        for name in other:
            if getattr(self, name):
                raise ValueError(f"{name} is a behaviour of the other engine, not {self.dialect}")
        for name in DIALECT_DEFAULTS:
            if getattr(self, name) is None:  # frozen: set as the constructor would
                object.__setattr__(self, name, self.vllm)

    @classmethod
    def strict(cls, dialect: str, **overrides: object) -> EngineConfig:
        """An engine failing as the real one of ``dialect`` does (:data:`STRICT`), with
        ``overrides`` (any field) on top."""
        if dialect not in STRICT:
            raise ValueError(f"dialect must be one of {', '.join(DIALECTS)}, got {dialect!r}")
        return cls(dialect, **{**STRICT[dialect], **overrides})  # type: ignore[arg-type]

    @property
    def scheme(self) -> str:
        """``https`` with a certificate, else ``http``."""
        return "http" if self.ssl_certfile is None else "https"

    @property
    def vllm(self) -> bool:
        """Whether this engine speaks vLLM's dialect."""
        return self.dialect == "vllm"
