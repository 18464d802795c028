"""``arctic-swe report`` on the command line: collect, regenerate, ``--check``; bad input is a
usage error (exit 2) with nothing written, a stale page a failure (exit 1)."""

from __future__ import annotations

from pathlib import Path

import pytest

from arctic_swe._cli import main
from arctic_swe.report import DATA, FIGURES, README

from ..report.conftest import write_run


@pytest.fixture
def runs(tmp_path: Path) -> list[Path]:
    return [
        write_run(tmp_path / "full", [0.2, 0.5, 0.7, 0.7], [2, 5, 6]),
        write_run(tmp_path / "clip", [0.2, 0.3, 0.1, 0.1], [2, 3, 1]),
    ]


def _collect_argv(results: Path, runs: list[Path]) -> list[str]:
    argv = ["report", str(results)]
    for run in runs:
        argv += ["--collect", str(run)]
    return [*argv, "--command", f"arctic-swe overfit --run-dir {runs[0]}", "--note", "quiet"]


def test_collect_then_check_then_a_stale_page_fails(
    tmp_path: Path, runs: list[Path], capsys: pytest.CaptureFixture[str]
) -> None:
    results = tmp_path / "results"
    assert main(_collect_argv(results, runs)) == 0
    err = capsys.readouterr().err
    assert "collected full: " in err
    assert "bytes" in err
    assert (results / FIGURES / "compare_reward.png").stat().st_size > 0
    assert str(tmp_path) not in (results / DATA / "SOURCE.json").read_text()
    assert main(["report", str(results), "--check"]) == 0
    assert "up to date" in capsys.readouterr().err
    page = results / README
    page.write_text(page.read_text().replace("| full | 4 |", "| full | 5 |"))
    assert main(["report", str(results), "--check"]) == 1
    assert "differs from what" in capsys.readouterr().err
    assert main(["report", str(results)]) == 0  # regenerated from the data
    assert main(["report", str(results), "--check"]) == 0


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--check", "--collect", "x"], "cannot be combined with --collect"),
        (["--note", "quiet"], "only apply with --collect"),
        (["--add"], "only apply with --collect"),
        (["--collect", "nowhere"], "source nowhere does not exist"),
        ([], "holds no collected data"),
    ],
)
def test_bad_input_is_a_usage_error_and_writes_nothing(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    extra: list[str],
    message: str,
) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["report", "results", *extra]) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "results").exists()
