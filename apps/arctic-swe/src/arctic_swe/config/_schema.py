"""The run configuration: one frozen attrs class per TOML section (ARCHITECTURE.md §4).

Defaults are the ``tiny`` preset (the embedded overfitting stress test on 2 CPU cores); the
``paper`` preset restores the paper's sizes (160 tasks, 32 groups x 5 rollouts, Arctic-SWE §3.1).
Every field is a plain ``int``/``float``/``bool``/``str`` so that TOML files and ``--set``
overrides map onto it one to one; cross-field constraints live in :func:`validate`.
"""

from __future__ import annotations

import attrs

from arctic_swe._issue_styles import LINE_STYLE

ROUTING_POLICIES = ("least_loaded", "session_hash")
ENGINE_KINDS = ("inprocess", "http")
REFRESH_MODES = ("inflight", "drain")
WEIGHT_TRANSFERS = ("reload", "nccl")  # the refresh paths of HTTP engines (vLLM 0.33)
RATIO_CONTROLS = ("mask", "ppo_clip")
AGGREGATIONS = ("token_mean", "rollout_mean")
TRAINER_KINDS = ("inprocess", "remote")
INVALID_REWARDS = (0.0, -1.0)  # trainer.invalid_reward: off, or the paper's final recipe
PROCEDURAL_DECK = "procedural"
# deck.retire_rule: how a task earns retirement as mastered (deck-evictor's mastery rules)
RETIRE_RULES = ("mastered", "first_all_correct")


@attrs.frozen
class RunSection:
    """The run as a whole: seed, length, checkpoints and the off-policy cap."""

    seed: int = 0
    updates: int = (
        36  # optimizer steps of the stress test (end-to-end time: results/stress-test.md)
    )
    # Groups older than this many versions are dropped (Arctic-SWE §3.3). Tiny: 1, below the
    # lag 2 the look-ahead produces: a warm-started 36-update run at cap 2 trained lag-2 groups
    # in 4 updates and never reached lag 3, so a cap of 2 never fired (results/stress-test.md, "What the
    # defenses do at this scale"); the paper preset keeps the paper's 4.
    max_off_policy: int = 1
    checkpoint_every: int = 1  # updates between atomic checkpoints
    keep_checkpoints: int = 2  # newest checkpoints kept on disk (the rest are pruned)
    max_group_retries: int = 2  # re-leases of a group whose engine failed
    # Batches generated while one trains (0 = synchronous baseline). Tiny: 2, so groups are
    # trained up to two versions after their first token (lag > 1 occurs, as in the paper's
    # runs: mean lag 2.0, Arctic-SWE §3.3); the paper preset keeps 1.
    lookahead_batches: int = 2
    # Measured pool success (README "Measured pool success"): every ``pool_eval_every``
    # updates (0 = off) and at the end, the weights just published sample every pool task
    # ``pool_eval_samples`` times with seeds fixed by (seed, task, sample, turn), on their own
    # engine in the background, ``pool_eval_workers`` sandboxes at once.
    pool_eval_every: int = 9  # measured cost: results/loop-costs.md
    pool_eval_samples: int = 2
    pool_eval_workers: int = 4
    # The deck's held-out split (tasks never trained on), sampled this many times per task at
    # every pool evaluation from streams of its own (0 = off; decks without one skip it), so
    # memorising the pool and learning the skill are told apart (RUN/evaluations.jsonl).
    heldout_eval_samples: int = 1
    # Stop once this many updates in a row had no gradient at all (0 = never). A run whose
    # remaining active tasks all score zero trains on zero-advantage groups until a replay
    # probe brings a forgotten task back, if ever (a bf16-state long run: 91 in a row, then SIGTERM);
    # off in every preset, so runs of one preset keep one budget.
    stop_after_zero_gradient: int = 0


@attrs.frozen
class DeckSection:
    """The task pool and eviction (deck-evictor; Arctic-SWE §3.3)."""

    pool_size: int = 16
    # n = 8 rollouts per group, the paper's training setup (Arctic-SWE §5): at 4, all-correct
    # groups (eviction) and all-zero ones (no gradient) come by luck too often on a 16-task
    # pool (results/stress-test.md); 2 x 8 keeps 16 rollouts per update.
    groups_per_update: int = 2
    rollouts_per_group: int = 8
    # Eviction as the final recipe has it (Arctic-SWE §5, "retire only mastered tasks"; §3.3):
    # false = never retire a task (the no-eviction ablation; the keys below then do nothing).
    eviction: bool = True
    # "mastered": retire a task once its last ``mastered_groups`` groups were all all-correct;
    # "first_all_correct": at its first all-correct group (the eviction experiment's easy rule,
    # = "mastered" with 1 group). At 8 rollouts a task solving 80 % of them still gets an 8/8
    # group 17 % of the time; two in a row 2.8 %.
    retire_rule: str = "mastered"
    mastered_groups: int = 2
    hard_consecutive_zero: int = 0  # 0 = never retire hard tasks (the final recipe)
    replay_every: int = 5  # updates between replay probes of retired tasks
    replay_size: int = 2  # retired tasks probed per replay (0: no replay probes)
    # Replay feedback: a retired task whose probe (``rollouts_per_group`` rollouts) solves a
    # share strictly below this is forgotten and returns to the pool, its streak restarted
    # (0 = probes only measure). At 8 rollouts, 0.75 brings back a task probed at 5/8 or less.
    reactivate_below: float = 0.75
    # Where the RL pool comes from: "procedural" (the embedded deck in --deck, generated if
    # absent) or the path of a JSON-lines file of task rows: the tasks.jsonl that ``arctic-swe
    # deck import`` writes, swe-curate's kept.jsonl, or SWE-bench / SWE-rebench / R2E-Gym rows.
    source: str = "procedural"
    # How a procedural deck built on first use writes its issues: "line" quotes the wrong and
    # the right line (the fix is a copy); "behaviour" gives inputs, actual vs expected output
    # and the failing test, never the line (memorising the pool vs the skill). A deck already
    # in --deck is used as it is: its own manifest says its style.
    issue_style: str = LINE_STYLE


@attrs.frozen
class EngineSection:
    """Inference engines and routing (load-router; Arctic-SWE §3.3)."""

    # Two engines, so that routing has a choice to make (least-loaded vs the session-hash
    # ablation) even on 2 CPU cores; their cost there is measured in results/stress-test.md.
    engines: int = 2
    capacity: int = 16  # cache slots per engine
    max_resident: int = 16  # router cap on resident rollouts per engine
    routing: str = "least_loaded"
    invalidate_caches: bool = True  # ablation "cache invalidation off" sets False
    max_new_tokens: int = 160  # per turn
    # "inflight": refresh engines under running turns (pause in place, reload, re-prefill,
    # resume; Arctic-SWE §3.3); "drain": wait for running turns first (the comparison).
    refresh_mode: str = "inflight"
    # How HTTP engines get new weights (vLLM 0.33's two paths): "reload" — the published
    # weights directory through /collective_rpc reload_weights; "nccl" — vLLM's weight-transfer
    # routes, the trainer broadcasting (gloo on CPU) while the engine receives.
    weight_transfer: str = "reload"
    # "inprocess": torch engines in this process (``engines`` of them); "http": engine servers
    # speaking the vLLM-compatible protocol, either already running at ``urls`` or ``launch``
    # ``arctic-swe serve`` processes the run starts on 127.0.0.1 and stops at exit.
    kind: str = "inprocess"
    urls: tuple[str, ...] = ()
    launch: int = 0
    serve_threads: int = 1  # torch threads of each launched server
    # An HTTP engine that does not answer a request or a refresh within this many seconds is
    # marked down and its rollouts re-leased.
    timeout_s: float = 120.0
    # Bound on a server's start-up (a launched one printing its URL, any one answering /health);
    # importing torch in two fresh processes on a busy 2-core machine took 70 s.
    startup_timeout_s: float = 300.0

    @property
    def engine_count(self) -> int:
        """How many engines the run drives (``engines``, ``len(urls)`` or ``launch``)."""
        if self.kind == "http":
            return len(self.urls) or self.launch
        return self.engines


@attrs.frozen
class HarnessSection:
    """The agent episode (swe-formatcheck gate, budgets)."""

    gated_reward: bool = True  # ablation "gated reward off": invalid episodes keep their grade
    strict_format: bool = True  # ablation "raw format check off": lenient parse
    max_turns: int = 8
    max_tokens: int = 3072  # whole-episode token budget (prompt, turns, observations)
    observation_chars: int = 1200  # tool output cut to about this many characters
    exec_timeout_s: float = 30.0  # wall-clock limit of one execute_bash
    # pytest's "7 passed in 0.02s" -> "7 passed" in tool output, so one seed gives one warm start
    # (the durations made warm starts from one deck and seed differ; results/warmstart-and-tasks.md, "Reproducibility")
    mask_durations: bool = True
    sandboxes: int = 8  # sandboxes running at once (the pool's concurrency)


@attrs.frozen
class SandboxSection:
    """Where rollouts and grades run (swe-sandbox; Arctic-SWE §5, sandbox isolation)."""

    # "namespace": daemon-less Linux namespaces (root, no engine); "docker": a local Docker
    # engine, each task in its own environment image when it names one.
    backend: str = "namespace"


@attrs.frozen
class TrainerSection:
    """The optimizer and the objective (cispo-loss; Arctic-SWE §5)."""

    lr: float = 1e-4  # constant learning rate
    beta1: float = 0.9
    beta2: float = 0.98
    weight_decay: float = 0.0
    grad_clip: float = 1.0
    ratio_control: str = "mask"  # ablation "mask -> clip" sets "ppo_clip"
    # IcePop band [0, mask_high] (Arctic-SWE §5). Tiny: 1.3, the paper's 2.0 scaled to the tiny
    # policy's ratio spread (mismatch KL ~3e-5 against the paper's ~1.6e-4): at 2.0 a
    # warm-started 36-update run masked nothing (largest ω 1.73; above 1.3 in 9 updates);
    # the paper preset keeps 2.0.
    mask_high: float = 1.3
    aggregation: str = "token_mean"  # ablation "per-rollout mean" sets "rollout_mean"
    fp32_numerics: bool = True  # ablation "FP32 numerics off": bf16 engine compute and state
    micro_batch_rollouts: int = 8  # rollouts per forward (gradient accumulation)
    # A batch whose every group is all-0 or all-1 has zero advantages, hence zero gradient; an
    # AdamW step on it would only replay momentum. True: skip that optimizer step.
    skip_empty_steps: bool = False
    # "inprocess": the trainer is an object in the orchestrator's process (a worker thread);
    # "remote": the FSDP2 trainer process (`torchrun -m arctic_swe.distributed`) at ``url``,
    # which needs engine.kind = "http" (engines load the weight files it writes).
    kind: str = "inprocess"
    url: str = ""
    # A remote step, checkpoint or health check not answered within this many seconds stops
    # the run with a clear error instead of hanging.
    timeout_s: float = 900.0
    # The training reward of an episode the format gate ended (invalid turn or duplicate call):
    # 0.0 or -1.0 (the paper's final recipe, Arctic-SWE §5). Applied before the group-centred
    # advantages; budget endings and failed submits keep 0. Inert under harness.gated_reward =
    # false, where the gate never ends an episode on a format violation (README).
    invalid_reward: float = 0.0


@attrs.frozen
class MetricsSection:
    """What the run writes besides ``metrics.jsonl``."""

    plots: bool = True
    live: bool = True  # rich live display on a terminal
    tensorboard: bool = False  # only if tensorboard is already installed
    # Mismatch KL by layer type (Gated DeltaNet vs softmax attention, hybrid-numerics'
    # mismatch_audit) on one trained rollout: the kl_by_layer_tokens tokens after its prompt,
    # at updates 1, 1 + every, … (0 = never; in-process trainer only). Its decode loops are
    # the cost: a 64-token audit took about one trainer step of the tiny batch (results/loop-costs.md).
    kl_by_layer_every: int = 4
    kl_by_layer_tokens: int = 64


@attrs.frozen
class VerdictSection:
    """The stress test's verdict, declared before the run (Arctic-SWE §3.1: climbs and holds).

    Windows are fractions of the run's updates, ``(start, end]``: the verdict compares the
    final window ``(final_start, 1]`` with update 0 (climb) and with the reference window
    (hold), each paired per task with a two-sided t interval over tasks at ``confidence``; a
    change must clear ``margin`` (absolute pool success) beyond its interval to count
    (arctic_swe.metrics.run_verdict; error rates: results/stress-test.md).
    """

    reference_start: float = 1 / 3
    reference_end: float = 2 / 3
    final_start: float = 2 / 3
    confidence: float = 0.95
    # About one rollout of the 32 in a tiny evaluation (16 tasks x 2 samples): the t interval
    # over tasks is too narrow when only a handful of tasks vary and all the same way (4 of 16
    # clear it with the rest unchanged), which a flat policy does by luck; with 0, a flat
    # policy got a climb or a fall in 5-8 % of simulated runs, with 0.03 in 1-2 %
    # (results/stress-test.md, "The verdict rule and its error rates").
    margin: float = 0.03


@attrs.frozen
class RunConfig:
    """The complete configuration of an ``arctic-swe overfit`` run."""

    run: RunSection = attrs.field(factory=RunSection)
    deck: DeckSection = attrs.field(factory=DeckSection)
    engine: EngineSection = attrs.field(factory=EngineSection)
    harness: HarnessSection = attrs.field(factory=HarnessSection)
    sandbox: SandboxSection = attrs.field(factory=SandboxSection)
    trainer: TrainerSection = attrs.field(factory=TrainerSection)
    metrics: MetricsSection = attrs.field(factory=MetricsSection)
    verdict: VerdictSection = attrs.field(factory=VerdictSection)


#: Section name -> section class, in TOML order.
SECTIONS: dict[str, type] = {f.name: f.default.factory for f in attrs.fields(RunConfig)}  # type: ignore[union-attr]
