"""One episode of the agent loop (DESIGN.md §4 steps 4-5, Mini-SWE-Agent-Plus shape).

Per turn: the sampler generates from the token history; swe-formatcheck validates the raw text
(exactly the generated tokens, decoded, stop token excluded); the episode gate decides (invalid
format, duplicate call, submit, budgets — terminate at once with the gated reward); a valid call
runs in the sandbox and its observation is appended as tokens. The history is a growing list of
ids that is only ever appended to: nothing is decoded and re-encoded.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from transformers import PreTrainedTokenizerFast

from arctic_swe.chat import encode, observation_text, render_conversation
from arctic_swe.harness._ablations import feedback_text, lenient_verdict
from arctic_swe.harness._config import HarnessConfig
from arctic_swe.harness._sampler import TurnSampler
from arctic_swe.harness._trajectory import NOT_GENERATED, Trajectory, TurnRecord
from swe_formatcheck import TOOLSETS, EpisodeGate, ToolCall, check_turn
from swe_sandbox import AsyncSandbox, PathEscapeError, SandboxError, StrReplaceError, TaskSpec

TOOLS = TOOLSETS["mini_swe_agent_plus"]


def prompt_text(task: TaskSpec, config: HarnessConfig) -> str:
    """System prompt with the tool specs, the issue, and the generation prompt."""
    messages = [
        {"role": "system", "content": config.system_prompt},
        {"role": "user", "content": task.problem_statement.rstrip("\n")},
    ]
    return render_conversation(messages, TOOLS, add_generation_prompt=True)


def clip(text: str, limit: int) -> str:
    """``text`` cut to about ``limit`` characters, keeping head and tail."""
    if len(text) <= limit:
        return text
    half = limit // 2
    return f"{text[:half]}\n[... {len(text) - 2 * half} characters cut ...]\n{text[-half:]}"


@dataclass
class _History:
    """The growing token arrays (append-only)."""

    ids: list[int] = field(default_factory=list)
    mask: list[bool] = field(default_factory=list)
    logprobs: list[float] = field(default_factory=list)
    versions: list[int] = field(default_factory=list)

    def append_context(self, ids: list[int]) -> None:
        self.ids += ids
        self.mask += [False] * len(ids)
        self.logprobs += [0.0] * len(ids)
        self.versions += [NOT_GENERATED] * len(ids)

    def append_generated(
        self, ids: tuple[int, ...], lps: tuple[float, ...], vs: tuple[int, ...]
    ) -> None:
        self.ids += ids
        self.mask += [True] * len(ids)
        self.logprobs += lps
        self.versions += vs


async def run_tool(sandbox: AsyncSandbox, call: ToolCall, config: HarnessConfig) -> str:
    """Run a non-submit call; tool errors become the observation (the model sees them)."""
    try:
        if call.name == "execute_bash":
            result = await sandbox.execute_bash(call.arguments["command"], config.exec_timeout_s)
            text = result.output
            if result.timed_out:
                text += f"\n[timed out after {config.exec_timeout_s:g} s]"
            elif result.exit_code:
                text += f"\n[exit code {result.exit_code}]"
            return clip(text.rstrip("\n"), config.observation_chars)
        args = call.arguments
        message = await sandbox.edit_via_str_replace(args["path"], args["old_str"], args["new_str"])
        return clip(message, config.observation_chars)
    except (StrReplaceError, PathEscapeError) as exc:
        return clip(f"Error: {exc}", config.observation_chars)
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError) as exc:
        # A model naming a file that does not exist is a tool error the model should see, not a
        # broken sandbox (which raises SandboxError and drops the rollout).
        path = call.arguments.get("path", "")
        return clip(f"Error: {path}: {exc.strerror or exc}", config.observation_chars)


async def _grade(sandbox: AsyncSandbox) -> tuple[float, tuple[str, ...], float]:
    """The sandbox grade: ``(reward, reasons, seconds)``; a broken grader yields 0."""
    began = time.monotonic()
    try:
        result = await sandbox.submit()
        reward, reasons = float(result.reward), tuple(result.reasons)
    except SandboxError as exc:  # a broken grader never yields reward
        reward, reasons = 0.0, (f"grading failed: {exc}",)
    return reward, reasons, time.monotonic() - began


async def run_episode(
    task: TaskSpec,
    sampler: TurnSampler,
    sandbox: AsyncSandbox,
    tokenizer: PreTrainedTokenizerFast,
    config: HarnessConfig | None = None,
    *,
    grade: bool = True,
) -> Trajectory:
    """Run one rollout of ``task`` in ``sandbox`` (already loaded with the task).

    ``grade=False`` skips the sandbox grade on submit (``raw_reward`` stays ``None``; the
    warm start uses it to collect expert turns faster, the tests grade experts for real).
    """
    config = config or HarnessConfig()
    began = time.monotonic()
    gate = EpisodeGate(
        config.max_turns, config.max_tokens, config.invalid_reward, gated=config.gated_reward
    )
    history = _History()
    history.append_context(encode(tokenizer, prompt_text(task, config)))
    prompt_length = len(history.ids)
    pending = prompt_length  # tokens appended since the gate last counted
    turns: list[TurnRecord] = []
    termination = ""
    raw_reward: float | None = None
    reasons: tuple[str, ...] = ()
    gen_s = tool_s = grade_s = 0.0
    while True:
        room = min(config.max_new_tokens, config.max_tokens - len(history.ids))
        if room < 1:
            termination = "token_budget"
            break
        t0 = time.monotonic()
        sampled = await sampler.sample(history.ids, room)
        t_gen = time.monotonic() - t0
        gen_s += t_gen
        start = len(history.ids)
        history.append_generated(sampled.token_ids, sampled.logprobs, sampled.versions)
        stopped = sampled.finish_reason == "stop"
        body = sampled.token_ids[:-1] if stopped else sampled.token_ids
        raw = str(tokenizer.decode(list(body), skip_special_tokens=False))
        strict = check_turn(raw, tools=TOOLS, stopped=stopped)
        verdict = strict if config.strict_format else lenient_verdict(strict, raw, TOOLS)
        decision = gate.observe(verdict, n_tokens=pending + len(sampled.token_ids))
        pending = 0
        observation: str | None = None
        obs_start = len(history.ids)
        t_tool = 0.0
        call = verdict.call
        if call is not None and not decision.terminate:
            t1 = time.monotonic()
            observation = await run_tool(sandbox, call, config)
            t_tool = time.monotonic() - t1
            tool_s += t_tool
            obs_ids = encode(tokenizer, observation_text(observation))
            history.append_context(obs_ids)
            pending = len(obs_ids)
        elif call is None and not decision.terminate:  # ungated: show the error, go on
            observation = feedback_text(strict)
            obs_ids = encode(tokenizer, observation_text(observation))
            history.append_context(obs_ids)
            pending = len(obs_ids)
        turns.append(
            TurnRecord(
                index=len(turns),
                start=start,
                end=obs_start,
                raw=raw,
                codes=tuple(str(code) for code in strict.codes),
                tool=call.name if call is not None else None,
                arguments=dict(call.arguments) if call is not None else None,
                observation=observation,
                observation_start=obs_start,
                observation_end=len(history.ids),
                finish_reason=sampled.finish_reason,
                generate_seconds=t_gen,
                tool_seconds=t_tool,
            )
        )
        if decision.terminate:
            termination = str(decision.reason)
            if grade and (termination == "submitted" or not config.gated_reward):
                raw_reward, reasons, grade_s = await _grade(sandbox)
            break
    if termination == "token_budget" and not gate.done:
        reward = config.invalid_reward
        if not config.gated_reward and grade:  # ungated: the repository is graded regardless
            raw_reward, reasons, grade_s = await _grade(sandbox)
            reward = raw_reward
    elif raw_reward is None and not config.gated_reward:  # ungated but never graded
        reward = config.invalid_reward
    else:
        reward = gate.reward(raw_reward if raw_reward is not None else 0.0)
    return Trajectory(
        task_id=task.instance_id,
        prompt_length=prompt_length,
        token_ids=tuple(history.ids),
        loss_mask=tuple(history.mask),
        logprobs=tuple(history.logprobs),
        versions=tuple(history.versions),
        turns=tuple(turns),
        termination=termination,
        raw_reward=raw_reward,
        reward=float(reward),
        grade_reasons=reasons,
        seconds=time.monotonic() - began,
        generate_seconds=gen_s,
        tool_seconds=tool_s,
        grade_seconds=grade_s,
    )
