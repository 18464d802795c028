"""One episode of the agent loop (ARCHITECTURE.md §4 steps 4-5, Mini-SWE-Agent-Plus shape).

Per turn: the sampler generates from the token history; swe-formatcheck validates the raw text
(exactly the generated tokens, decoded, stop token excluded); the episode gate decides (invalid
format, duplicate call, submit, budgets — terminate at once with the gated reward); a valid call
runs in the sandbox and its observation is appended as tokens. The history is a growing list of
ids that is only ever appended to: nothing is decoded and re-encoded.

The first prompt and every observation are rendered by the tokenizer's *own* chat template
(``arctic_swe.chat.ChatFormat``: ``apply_chat_template`` with the tools declared; an observation
is the exact token delta the template adds after an assistant turn's end), and the raw check
uses the tool-call dialect and reasoning prefill of that template.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from transformers import PreTrainedTokenizerFast

from arctic_swe.chat import ChatFormat, chat_format, render_conversation
from arctic_swe.harness._ablations import feedback_text, lenient_verdict
from arctic_swe.harness._config import HarnessConfig
from arctic_swe.harness._durations import mask_durations
from arctic_swe.harness._sampler import TurnSampler
from arctic_swe.harness._trajectory import NOT_GENERATED, Trajectory, TurnRecord
from swe_formatcheck import TOOLSETS, EpisodeGate, ToolCall, TurnVerdict, check_turn
from swe_sandbox import AsyncSandbox, PathEscapeError, StrReplaceError, TaskSpec

TOOLS = TOOLSETS["mini_swe_agent_plus"]


def prompt_text(
    task: TaskSpec, config: HarnessConfig, tokenizer: PreTrainedTokenizerFast | None = None
) -> str:
    """System prompt with the tool specs, the issue, and the generation prompt: rendered by
    ``tokenizer``'s chat template, or by the app's own template when no tokenizer is given."""
    issue = task.problem_statement.rstrip("\n")
    if tokenizer is not None:
        return episode_format(tokenizer, config).prompt_text(config.system_prompt, issue)
    messages = [
        {"role": "system", "content": config.system_prompt},
        {"role": "user", "content": issue},
    ]
    return render_conversation(messages, TOOLS, add_generation_prompt=True)


def episode_format(tokenizer: PreTrainedTokenizerFast, config: HarnessConfig) -> ChatFormat:
    """The chat format an episode renders with: the tokenizer's template, the harness tools,
    ``config.tool_dialect`` (``"auto"``: detected from the template) and
    ``config.enable_thinking``."""
    return chat_format(
        tokenizer, TOOLS, config.tool_dialect, enable_thinking=config.enable_thinking
    )


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
            if config.mask_durations:
                text = mask_durations(text)
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
    """The sandbox grade: ``(reward, reasons, seconds)``.

    Whatever the agent did is a verdict (reward 0 with its reasons). A grading infrastructure
    failure (`swe_sandbox.GradingError`, e.g. no sandbox could start, or a task command the
    grader refuses) is not the agent's: it propagates, and the group drops the rollout and
    counts it lost instead of training on a reward of 0.
    """
    began = time.monotonic()
    result = await sandbox.submit()
    return float(result.reward), tuple(result.reasons), time.monotonic() - began


@dataclass
class _Timings:
    """Where an episode's wall time went (seconds)."""

    generate: float = 0.0
    tool: float = 0.0
    grade: float = 0.0


class _Episode:
    """One rollout in progress: the token history, the gate, the turns recorded so far.

    Its steps follow the agent loop of Arctic-SWE §3.2: generate a turn from the token history,
    check the raw text, let the gate decide, run the tool and append the observation, and on
    submit grade the patch.
    """

    def __init__(
        self,
        task: TaskSpec,
        sampler: TurnSampler,
        sandbox: AsyncSandbox,
        tokenizer: PreTrainedTokenizerFast,
        config: HarnessConfig,
        grade: bool,
    ) -> None:
        self.task, self.sampler, self.sandbox = task, sampler, sandbox
        self.tokenizer, self.config, self.grade = tokenizer, config, grade
        self.began = time.monotonic()
        self.gate = EpisodeGate(
            config.max_turns, config.max_tokens, config.invalid_reward, gated=config.gated_reward
        )
        self.chat = episode_format(tokenizer, config)
        self.history = _History()
        issue = task.problem_statement.rstrip("\n")
        self.history.append_context(self.chat.prompt_ids(config.system_prompt, issue))
        self.prompt_length = len(self.history.ids)
        #: Tokens appended since the gate last counted (the gate budgets prompt + observations).
        self.pending = self.prompt_length
        self.turns: list[TurnRecord] = []
        self.termination = ""
        self.raw_reward: float | None = None
        self.reasons: tuple[str, ...] = ()
        self.timings = _Timings()

    async def run(self) -> Trajectory:
        while not await self._turn():
            pass
        return self._trajectory(await self._final_reward())

    async def _turn(self) -> bool:
        """One turn; ``True`` once the episode has ended."""
        room = min(self.config.max_new_tokens, self.config.max_tokens - len(self.history.ids))
        if room < 1:
            self.termination = "token_budget"
            return True
        t0 = time.monotonic()
        sampled = await self.sampler.sample(self.history.ids, room)
        t_gen = time.monotonic() - t0
        self.timings.generate += t_gen
        start = len(self.history.ids)
        self.history.append_generated(sampled.token_ids, sampled.logprobs, sampled.versions)
        raw, strict, verdict = self._check_format(sampled.token_ids, sampled.finish_reason)
        decision = self.gate.observe(verdict, n_tokens=self.pending + len(sampled.token_ids))
        self.pending = 0
        obs_start = len(self.history.ids)
        call = verdict.call
        observation, t_tool = (None, 0.0) if decision.terminate else await self._act(call, strict)
        self.turns.append(
            TurnRecord(
                index=len(self.turns),
                start=start,
                end=obs_start,
                raw=raw,
                codes=tuple(str(code) for code in strict.codes),
                tool=call.name if call is not None else None,
                arguments=dict(call.arguments) if call is not None else None,
                observation=observation,
                observation_start=obs_start,
                observation_end=len(self.history.ids),
                finish_reason=sampled.finish_reason,
                generate_seconds=t_gen,
                tool_seconds=t_tool,
            )
        )
        if not decision.terminate:
            return False
        self.termination = str(decision.reason)
        if self.grade and (self.termination == "submitted" or not self.config.gated_reward):
            await self._grade()
        return True

    def _check_format(
        self, token_ids: tuple[int, ...], finish_reason: str
    ) -> tuple[str, TurnVerdict, TurnVerdict]:
        """The raw text (exactly the generated tokens, stop token excluded), its strict verdict,
        and the verdict the gate sees (the strict one, or the lenient ablation's)."""
        stopped = finish_reason == "stop"
        body = token_ids[:-1] if stopped else token_ids
        raw = str(self.tokenizer.decode(list(body), skip_special_tokens=False))
        chat = self.chat
        strict = check_turn(
            raw,
            tools=TOOLS,
            dialect=chat.dialect,
            reasoning=chat.reasoning,
            stopped=stopped,
            think_prefilled=chat.think_prefilled,
        )
        verdict = (
            strict
            if self.config.strict_format
            else lenient_verdict(strict, raw, TOOLS, chat.dialect)
        )
        return raw, strict, verdict

    async def _act(self, call: ToolCall | None, strict: TurnVerdict) -> tuple[str, float]:
        """Run a valid call (or, ungated, show the format error) and append the observation."""
        t_tool = 0.0
        if call is None:  # only reached ungated: the model sees the error and goes on
            observation = feedback_text(strict)
        else:
            t1 = time.monotonic()
            observation = await run_tool(self.sandbox, call, self.config)
            t_tool = time.monotonic() - t1
            self.timings.tool += t_tool
        obs_ids = self.chat.observation_ids(observation)
        self.history.append_context(obs_ids)
        self.pending = len(obs_ids)
        return observation, t_tool

    async def _grade(self) -> None:
        self.raw_reward, self.reasons, self.timings.grade = await _grade(self.sandbox)

    async def _final_reward(self) -> float:
        """The gated reward: 0 (or the invalid reward) unless the gate saw an explicit submit of
        valid turns; the ungated ablation scores the repository whatever happened."""
        config = self.config
        if self.termination == "token_budget" and not self.gate.done:
            if not config.gated_reward and self.grade:  # ungated: graded regardless
                await self._grade()
                return float(self.raw_reward or 0.0)
            return float(config.invalid_reward)
        if self.raw_reward is None and not config.gated_reward:  # ungated but never graded
            return float(config.invalid_reward)
        return float(self.gate.reward(self.raw_reward if self.raw_reward is not None else 0.0))

    def _trajectory(self, reward: float) -> Trajectory:
        history = self.history
        return Trajectory(
            task_id=self.task.instance_id,
            prompt_length=self.prompt_length,
            token_ids=tuple(history.ids),
            loss_mask=tuple(history.mask),
            logprobs=tuple(history.logprobs),
            versions=tuple(history.versions),
            turns=tuple(self.turns),
            termination=self.termination,
            raw_reward=self.raw_reward,
            reward=reward,
            grade_reasons=self.reasons,
            seconds=time.monotonic() - self.began,
            generate_seconds=self.timings.generate,
            tool_seconds=self.timings.tool,
            grade_seconds=self.timings.grade,
        )


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
    episode = _Episode(task, sampler, sandbox, tokenizer, config or HarnessConfig(), grade)
    return await episode.run()
