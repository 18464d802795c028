"""Correct alternatives that vary what the issue leaves open (the offline judge's second probe).

A suite that rejects one of these grades something the issue never asked for: the exact text of
an error message the issue does not state, or the name of a private helper the issue does not
name (Arctic-SWE §4, ``over_restrictive``). Each alternative carries the requirement it would
reveal, so the verdict can name it.
"""

from __future__ import annotations

import ast
import copy
import io
import re
import tokenize
from collections.abc import Iterator, Mapping

from swe_curate._ast_safe import parse_source
from swe_curate._counterfactual import Counterfactual, Kind
from swe_curate._issue import named_functions
from swe_curate._source import ChangedFunction, PatchedTree, find_function, splice_function

_MIN_STATED = 3
"""Message fragments shorter than this are not evidence that the issue states the message."""


def _message_parts(message: ast.expr) -> list[str] | None:
    """The literal text of a message (``None`` when it is not a literal string or f-string)."""
    if isinstance(message, ast.Constant) and isinstance(message.value, str):
        return [message.value]
    if isinstance(message, ast.JoinedStr):
        return [
            v.value
            for v in message.values
            if isinstance(v, ast.Constant) and isinstance(v.value, str)
        ]
    return None


def _reworded(message: ast.expr) -> ast.expr:
    """Another wording: a fixed phrase plus the same interpolated values, in order."""
    values: list[ast.expr] = [ast.Constant("invalid input")]
    if isinstance(message, ast.JoinedStr):
        for part in message.values:
            if isinstance(part, ast.FormattedValue):
                values += [ast.Constant(" "), copy.deepcopy(part)]
    return ast.JoinedStr(values=values) if len(values) > 1 else values[0]


def _stated(parts: list[str], issue: str) -> bool:
    text = issue.replace("`", "")
    return any(len(p.strip()) >= _MIN_STATED and p.strip() in text for p in parts)


def _raises(func: ChangedFunction, issue: str) -> Iterator[tuple[ast.Raise, ast.expr]]:
    for node in ast.walk(func.node):
        if not (isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call)):
            continue
        if not node.exc.args or not func.on_changed_line(node):
            continue
        parts = _message_parts(node.exc.args[0])
        if parts is not None and not _stated(parts, issue):
            yield node, node.exc.args[0]


def vary_messages(tree: PatchedTree, issue: str) -> list[Counterfactual]:
    """Gold with every unstated error message of a changed function reworded (same types)."""
    out: list[Counterfactual] = []
    for func in tree.changed_functions():
        found = list(_raises(func, issue))
        if not found:
            continue
        clone = copy.deepcopy(func.node)
        texts = []
        for raise_node, message in found:
            texts.append(ast.unparse(message))
            twin = _twin(clone, raise_node)
            assert isinstance(twin, ast.Raise)
            assert isinstance(twin.exc, ast.Call)
            twin.exc.args[0] = _reworded(message)
        new_text = splice_function(tree.gold[func.path], func.node, clone)
        shown = ", ".join(texts)
        out.append(
            Counterfactual(
                Kind.CORRECT,
                "vary_message",
                f"{func.qualname}: reworded error message(s) {shown}",
                tree.patch_to({**tree.gold, func.path: new_text}),
                f"exact message {shown} not stated in the issue",
            )
        )
    return out


def _twin(clone: ast.AST, original: ast.AST) -> ast.AST:
    """The node of ``clone`` at the position ``original`` has in the original function."""
    key = (original.lineno, original.col_offset)  # type: ignore[attr-defined]
    for node in ast.walk(clone):
        if (
            type(node) is type(original)
            and (
                getattr(node, "lineno", None),
                getattr(node, "col_offset", None),
            )
            == key
        ):
            return node
    raise AssertionError("deepcopy keeps positions")  # pragma: no cover


def _private_helpers(tree: PatchedTree) -> dict[str, set[str]]:
    """Per gold file, the module-level private functions the gold patch wrote or its changed
    functions call."""
    changed = tree.changed_functions()
    out: dict[str, set[str]] = {}
    for path, text in tree.gold.items():
        if not path.endswith(".py"):
            continue
        module = parse_source(text)
        defined = {
            n.name
            for n in module.body
            if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)
            and n.name.startswith("_")
            and not n.name.startswith("__")
        }
        mine = [f for f in changed if f.path == path]
        used = {f.qualname for f in mine} | {
            n.id for f in mine for n in ast.walk(f.node) if isinstance(n, ast.Name)
        }
        if helpers := defined & used:
            out[path] = helpers
    return out


def _rename_tokens(source: str, old: str, new: str) -> str:
    tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    renamed = [
        tok._replace(string=new) if tok.type == tokenize.NAME and tok.string == old else tok
        for tok in tokens
    ]
    return tokenize.untokenize(renamed)


def rename_private_helpers(
    tree: PatchedTree, issue: str, others: Mapping[str, str]
) -> list[Counterfactual]:
    """Gold with each private helper the issue does not name renamed (every use in its file).

    ``others`` are the other visible source files: a helper they mention is left alone, since
    renaming it would break them (it is then a de-facto interface).
    """
    out: list[Counterfactual] = []
    for path, helpers in sorted(_private_helpers(tree).items()):
        for name in sorted(helpers - named_functions(issue, helpers)):
            pattern = re.compile(rf"\b{re.escape(name)}\b")
            if any(pattern.search(text) for p, text in others.items() if p != path):
                continue
            new_name = f"{name}_impl"
            new_text = _rename_tokens(tree.gold[path], name, new_name)
            if find_function(parse_source(new_text), new_name) is None:
                continue
            out.append(
                Counterfactual(
                    Kind.CORRECT,
                    "rename_private_helper",
                    f"{path}: private helper {name} renamed to {new_name}",
                    tree.patch_to({**tree.gold, path: new_text}),
                    f"imports private helper `{name}` not named in the issue",
                )
            )
    return out
