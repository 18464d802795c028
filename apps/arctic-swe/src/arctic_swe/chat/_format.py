"""The checkpoint's own chat template as the harness's renderer (Arctic-SWE §3.2, tokens in/out).

A :class:`ChatFormat` wraps a tokenizer's ``chat_template``: it renders the first prompt
(system + tools + issue + generation prompt) with ``apply_chat_template`` and computes, for each
tool result, the **observation delta**: the exact text the template writes between the end of an
assistant turn (its ``<|im_end|>``, which the model generated as its stop token) and the next
generation prompt. The harness appends those tokens to the history; it never re-renders or
re-tokenises what came before.

How the delta is found, robustly to templates that rewrite history (the Qwen3 family drops the
``<think>`` reasoning of turns before the last user query, re-normalises reasoning whitespace
and renders ``tool_calls`` from structured messages): the template renders a *probe*
conversation ``system, user, assistant(PROBE), tool(observation)`` with the generation prompt;
the delta is everything after the first ``<|im_end|>`` that follows the probe's sentinel text.
Only what comes *after* an assistant turn's end is read, so however the template renders the
assistant turn itself (reasoning kept, dropped or reshaped) the delta is the same. At
construction a two-turn probe checks that the delta does not depend on the turn's position
(a :class:`TemplateError` otherwise).

The tool-call dialect (``qwen3_coder`` XML or ``hermes`` JSON, as swe-formatcheck checks them)
is detected from the template's behaviour: a structured tool call is rendered and the markup it
produces decides; a template that does not render ``tool_calls`` is read for the call format it
instructs in the system block. Whether the generation prompt pre-fills ``<think>\\n`` (Qwen3.5's
thinking mode) or an empty reasoning block (thinking off) is read from the generation prompt.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal
from weakref import WeakKeyDictionary

from jinja2 import TemplateError as JinjaTemplateError
from transformers import PreTrainedTokenizerFast

from arctic_swe.chat._errors import TemplateError
from arctic_swe.chat._template import IM_END, tool_schemas
from swe_formatcheck import ToolSpec, dialect_names

Reasoning = Literal["required", "optional", "forbidden"]

_PROBE = "arctic-swe-probe-7d1c"  # sentinel content; no template markup in it
_PROBE_SYSTEM, _PROBE_USER = "probe system", "probe issue"
_PROBE_FN, _PROBE_ARG, _PROBE_VALUE = "arctic_probe_fn", "probe_arg", "probe-value-5e2a"
_OPEN_THINK, _CLOSE_THINK = "<think>", "</think>"


@dataclass(frozen=True)
class ChatFormat:
    """A tokenizer's chat template as the harness uses it.

    Attributes:
        tokenizer: the checkpoint's tokenizer.
        template: the Jinja source every render uses (the tokenizer's ``chat_template``, or of
            a dict of named templates the one ``transformers`` picks for a call with tools).
        tools: the tools declared to the model (passed to the template as ``tools``).
        dialect: the tool-call format the model is asked to write (swe-formatcheck dialect).
        think_prefilled: the generation prompt ends with ``<think>\\n``, so a turn starts inside
            its reasoning.
        reasoning: swe-formatcheck's reasoning mode for a turn (``"forbidden"`` when the
            generation prompt already closed an empty reasoning block).
        end_token: the text that ends an assistant turn (the stop token).
        options: extra template variables every render passes (``enable_thinking``).
    """

    tokenizer: PreTrainedTokenizerFast = field(repr=False, compare=False)
    template: str = field(repr=False)
    tools: tuple[ToolSpec, ...]
    dialect: str
    think_prefilled: bool
    reasoning: Reasoning
    end_token: str = IM_END
    options: tuple[tuple[str, Any], ...] = ()

    def render(self, messages: Sequence[Mapping[str, Any]], *, add_generation_prompt: bool) -> str:
        """``apply_chat_template`` as text, with :attr:`tools` declared."""
        return render_template(
            self.tokenizer,
            messages,
            self.tools,
            add_generation_prompt=add_generation_prompt,
            template=self.template,
            options=dict(self.options),
        )

    def encode(self, text: str) -> list[int]:
        """Token ids of rendered text (special tokens recognised, nothing added)."""
        ids: list[int] = self.tokenizer.encode(text, add_special_tokens=False)
        return ids

    def prompt_text(self, system: str, issue: str) -> str:
        """The first prompt: system (with the tools), the issue, the generation prompt."""
        messages = [{"role": "system", "content": system}, {"role": "user", "content": issue}]
        return self.render(messages, add_generation_prompt=True)

    def prompt_ids(self, system: str, issue: str) -> list[int]:
        """Token ids of :meth:`prompt_text`."""
        return self.encode(self.prompt_text(system, issue))

    def observation_text(self, observation: str) -> str:
        """What the template writes after an assistant turn's end token up to (and including)
        the next generation prompt, for a tool result ``observation``."""
        probe = _PROBE
        while probe in observation:  # the sentinel must occur once: pick one the text lacks
            probe += "x"
        turn = _probe_turn(0, probe)
        messages = [*_probe_head(), turn, {"role": "tool", "content": observation}]
        text = self.render(messages, add_generation_prompt=True)
        return _after_probe(text, self.end_token, 0, probe)

    def observation_ids(self, observation: str) -> list[int]:
        """Token ids of :meth:`observation_text` (appended to the history as they are)."""
        return self.encode(self.observation_text(observation))


def render_template(
    tokenizer: PreTrainedTokenizerFast,
    messages: Sequence[Mapping[str, Any]],
    tools: Sequence[ToolSpec] = (),
    *,
    add_generation_prompt: bool,
    template: str | None = None,
    options: Mapping[str, Any] | None = None,
) -> str:
    """``tokenizer.apply_chat_template`` as text (with ``template`` when given, and ``options``
    as extra template variables); any template failure is a :class:`TemplateError` naming the
    tokenizer."""
    if not getattr(tokenizer, "chat_template", None):
        raise TemplateError(f"tokenizer {_name(tokenizer)} has no chat template")
    apply: Any = tokenizer.apply_chat_template  # typed for str-only messages; ours are richer
    try:
        text = apply(
            [dict(message) for message in messages],
            tools=tool_schemas(tools) or None,
            add_generation_prompt=add_generation_prompt,
            tokenize=False,
            chat_template=template,
            **dict(options or {}),
        )
    except (JinjaTemplateError, TypeError, ValueError, KeyError, AttributeError) as exc:
        raise TemplateError(f"the chat template of {_name(tokenizer)} failed: {exc}") from exc
    if not isinstance(text, str):
        raise TemplateError(f"the chat template of {_name(tokenizer)} did not render text")
    return text


def resolve_template(tokenizer: PreTrainedTokenizerFast, tools: Sequence[ToolSpec]) -> str:
    """The one template string used for every render of a conversation with ``tools``: the
    tokenizer's ``chat_template``, or from a dict of named templates the one ``transformers``
    picks when tools are given (``tool_use``, else ``default``)."""
    if not getattr(tokenizer, "chat_template", None):
        raise TemplateError(f"tokenizer {_name(tokenizer)} has no chat template")
    try:
        template = tokenizer.get_chat_template(tools=tool_schemas(tools) or None)
    except ValueError as exc:
        raise TemplateError(f"tokenizer {_name(tokenizer)}: {exc}") from exc
    return str(template)


_CACHE: WeakKeyDictionary[PreTrainedTokenizerFast, dict[tuple[object, ...], ChatFormat]] = (
    WeakKeyDictionary()
)


def chat_format(
    tokenizer: PreTrainedTokenizerFast,
    tools: Sequence[ToolSpec],
    dialect: str = "auto",
    *,
    enable_thinking: bool | None = None,
) -> ChatFormat:
    """The :class:`ChatFormat` of ``tokenizer`` (cached per tokenizer, template, tools, dialect
    and thinking mode). ``dialect="auto"`` detects it from the template; ``enable_thinking``
    (``None``: the template's default) is passed to templates that switch reasoning on and off,
    as Qwen3.5's does. :class:`TemplateError` when the template is missing, fails, or has a
    shape the harness cannot append to."""
    template = tokenizer.chat_template  # a str, or a dict of named templates (unhashable)
    options = () if enable_thinking is None else (("enable_thinking", enable_thinking),)
    key = (repr(template), tuple(tools), dialect, options)
    per_tokenizer = _CACHE.setdefault(tokenizer, {})
    if key not in per_tokenizer:
        per_tokenizer[key] = _build(tokenizer, tuple(tools), dialect, options)
    return per_tokenizer[key]


def _build(
    tokenizer: PreTrainedTokenizerFast,
    tools: tuple[ToolSpec, ...],
    dialect: str,
    options: tuple[tuple[str, Any], ...],
) -> ChatFormat:
    # "auto" or a name of swe-formatcheck's registry (its built-ins, or a registered dialect)
    if dialect != "auto" and dialect not in dialect_names():
        choices = ["auto", *dialect_names()]
        raise TemplateError(f"tool dialect must be one of {choices}, got {dialect!r}")
    if IM_END not in tokenizer.get_vocab():
        raise TemplateError(f"tokenizer {_name(tokenizer)} has no {IM_END} token")
    template = resolve_template(tokenizer, tools)
    if dialect == "auto":
        chosen = detect_dialect(tokenizer, tools, template=template, options=dict(options))
    else:
        chosen = dialect
    prefill = _generation_prompt(tokenizer, template, dict(options))
    think_prefilled = prefill.endswith(_OPEN_THINK + "\n")
    closed = prefill.rstrip().endswith(_CLOSE_THINK)
    reasoning: Reasoning = "forbidden" if closed else "required"
    fmt = ChatFormat(
        tokenizer, template, tools, chosen, think_prefilled, reasoning, IM_END, options
    )
    _check_position_independent(fmt)
    return fmt


def detect_dialect(
    tokenizer: PreTrainedTokenizerFast,
    tools: Sequence[ToolSpec] = (),
    *,
    template: str | None = None,
    options: Mapping[str, Any] | None = None,
) -> str:
    """The tool-call format ``tokenizer``'s template (or ``template``) uses: from how it renders
    a structured call, else from the call format its system block instructs;
    :class:`TemplateError` if neither."""
    template = template if template is not None else resolve_template(tokenizer, tools)
    rendered = _render_structured_call(tokenizer, template, options)
    if rendered is not None:
        found = _dialect_in(rendered, f"<function={_PROBE_FN}>", f'"name": "{_PROBE_FN}"')
        if found is not None:
            return found
    probe_tools = tuple(tools) or (ToolSpec(_PROBE_FN, required=(_PROBE_ARG,)),)
    system = render_template(
        tokenizer, [{"role": "system", "content": _PROBE_SYSTEM}], probe_tools,
        add_generation_prompt=False, template=template, options=options,
    )  # fmt: skip
    found = _dialect_in(system, "<function=", '<tool_call>\n{"name"')
    if found is None:
        raise TemplateError(
            f"cannot tell the tool-call format of the chat template of {_name(tokenizer)}: it "
            "neither renders nor instructs qwen3_coder (<function=NAME>) or hermes "
            '(<tool_call>{"name": …}) calls; set the tool dialect explicitly'
        )
    return found


def _dialect_in(text: str, xml_marker: str, json_marker: str) -> str | None:
    if "<tool_call>" not in text:
        return None
    if xml_marker in text:
        return "qwen3_coder"
    if json_marker in text:
        return "hermes"
    return None


def _render_structured_call(
    tokenizer: PreTrainedTokenizerFast, template: str, options: Mapping[str, Any] | None
) -> str | None:
    call: dict[str, Any] = {
        "type": "function",
        "function": {"name": _PROBE_FN, "arguments": {_PROBE_ARG: _PROBE_VALUE}},
    }
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": _PROBE_USER},
        {"role": "assistant", "content": "", "tool_calls": [call]},
    ]
    try:
        return render_template(
            tokenizer, messages, add_generation_prompt=False, template=template, options=options
        )
    except TemplateError:
        return None  # a template that only takes string content: read its instructions instead


def _generation_prompt(
    tokenizer: PreTrainedTokenizerFast, template: str, options: Mapping[str, Any] | None = None
) -> str:
    messages = [{"role": "user", "content": _PROBE_USER}]
    without = render_template(
        tokenizer, messages, add_generation_prompt=False, template=template, options=options
    )
    with_prompt = render_template(
        tokenizer, messages, add_generation_prompt=True, template=template, options=options
    )
    if not with_prompt.startswith(without) or with_prompt == without:
        raise TemplateError(
            f"the chat template of {_name(tokenizer)} does not append a generation prompt"
        )
    return with_prompt[len(without) :]


def _probe_head() -> list[dict[str, str]]:
    return [{"role": "system", "content": _PROBE_SYSTEM}, {"role": "user", "content": _PROBE_USER}]


def _probe_turn(index: int = 0, probe: str = _PROBE) -> dict[str, str]:
    return {"role": "assistant", "content": f"{probe}-{index}"}


def _after_probe(text: str, end_token: str, index: int = 0, probe: str = _PROBE) -> str:
    """The text after the end token that follows probe turn ``index``."""
    sentinel = f"{probe}-{index}"
    at = text.find(sentinel)
    if at < 0 or text.count(sentinel) != 1:
        raise TemplateError("the chat template does not render assistant content verbatim once")
    end = text.find(end_token, at + len(sentinel))
    if end < 0:
        raise TemplateError(f"the chat template does not end an assistant turn with {end_token}")
    return text[end + len(end_token) :]


def _check_position_independent(fmt: ChatFormat) -> None:
    """The delta after turn 1 of a two-turn probe equals the delta after a single turn; and
    the delta ends with the generation prompt the harness generates after."""
    observation = "probe output"
    single = fmt.observation_text(observation)
    tool = {"role": "tool", "content": observation}
    two = [*_probe_head(), _probe_turn(0), tool, _probe_turn(1), tool]
    text = fmt.render(two, add_generation_prompt=True)
    first = _after_probe(text, fmt.end_token, 0)
    second = _after_probe(text, fmt.end_token, 1)
    generation = _generation_prompt(fmt.tokenizer, fmt.template, dict(fmt.options))
    if not single.endswith(generation) or second != single:
        raise TemplateError(
            f"the observation frame of the chat template of {_name(fmt.tokenizer)} depends on "
            "the turn's position; the harness cannot append observations as tokens"
        )
    between = single[: len(single) - len(generation)]
    if not first.startswith(between):
        raise TemplateError(
            f"the chat template of {_name(fmt.tokenizer)} renders a tool result differently "
            "when a later turn follows; the harness cannot append observations as tokens"
        )


def _name(tokenizer: PreTrainedTokenizerFast) -> str:
    return str(getattr(tokenizer, "name_or_path", "") or type(tokenizer).__name__)
