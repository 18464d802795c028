"""Tests for ``swe_curate._ast_safe``: every parse runs under the process-wide lock (CPython
3.11 keeps the AST conversion's recursion counter per interpreter, so concurrent parses on the
curation workers raced)."""

from __future__ import annotations

import ast
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from swe_curate import _ast_safe


def test_parse_and_literal_eval_hold_the_lock(monkeypatch: pytest.MonkeyPatch) -> None:
    held: list[bool] = []
    real_parse, real_eval = ast.parse, ast.literal_eval

    def parse(*args: Any, **kwargs: Any) -> Any:
        held.append(_ast_safe._PARSE_LOCK.locked())
        return real_parse(*args, **kwargs)

    def literal_eval(*args: Any, **kwargs: Any) -> Any:
        held.append(_ast_safe._PARSE_LOCK.locked())
        return real_eval(*args, **kwargs)

    monkeypatch.setattr(ast, "parse", parse)
    monkeypatch.setattr(ast, "literal_eval", literal_eval)
    assert isinstance(_ast_safe.parse_source("def f():\n    return 1\n"), ast.Module)
    assert isinstance(_ast_safe.parse_source("1 + 2", mode="eval"), ast.Expression)
    assert _ast_safe.literal_eval("(1, [2, 'x'])") == (1, [2, "x"])
    assert len(held) >= 3  # literal_eval parses through ast.parse too
    assert all(held)
    assert not _ast_safe._PARSE_LOCK.locked()


def test_concurrent_parses_give_the_serial_results() -> None:
    sources = [f"def f{i}(x):\n    return [x + j for j in range({i})]\n" for i in range(64)]
    serial = [ast.dump(ast.parse(s)) for s in sources]
    with ThreadPoolExecutor(8) as pool:
        threaded = list(pool.map(lambda s: ast.dump(_ast_safe.parse_source(s)), sources))
    assert threaded == serial


def test_errors_pass_through_and_release_the_lock() -> None:
    with pytest.raises(SyntaxError):
        _ast_safe.parse_source("def (:")
    with pytest.raises(ValueError, match="malformed"):
        _ast_safe.literal_eval("f(1)")
    assert not _ast_safe._PARSE_LOCK.locked()
