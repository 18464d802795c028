"""A results page regenerated from collected data: the same tables ``ablate`` writes, the
same bytes from the same data, and ``--check`` catching a page the data no longer gives."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import pytest

from arctic_swe.ablate import AblationPlan, open_plan, seeded_configs, variant_configs
from arctic_swe.config import EndReason, RunConfig, apply_overrides
from arctic_swe.metrics import (
    EVALUATIONS,
    EvaluationLog,
    MetricsLog,
    comparison_row,
    read_verdict_rule,
)
from arctic_swe.report import (
    BEGIN,
    END,
    FIGURES,
    README,
    ReportError,
    ReportOutOfDateError,
    check_report,
    collect,
    read_results,
    result_sections,
    splice,
    write_report,
)

from .conftest import update, write_run

DAY = date(2025, 1, 2)
CURVES = {
    "full": ([0.2, 0.4, 0.6, 0.6, 0.7, 0.7], [2, 4, 6, 6]),
    "clip": ([0.2, 0.3, 0.2, 0.1, 0.1, 0.1], [2, 3, 1, 1]),
}


def _ablation(root: Path, seeds: tuple[int, ...] = ()) -> Path:
    base = apply_overrides(RunConfig(), ["run.updates=6"])
    configs = seeded_configs(variant_configs(base, tuple(CURVES)), seeds)
    open_plan(AblationPlan(root, configs, root.parent / "deck", root.parent / "policy"))
    for index, (key, config) in enumerate(configs.items()):
        rewards, solved = CURVES[key.split("/")[0]]
        end = EndReason.DECK_EXHAUSTED if key == "clip" else None
        write_run(root / key, rewards, [max(0, s - index % 2) for s in solved],
                  config=config, end=end)  # fmt: skip
    return root


@pytest.fixture
def stub_plots(monkeypatch: pytest.MonkeyPatch) -> None:
    """Empty PNG files for the tests about the page (drawing takes seconds; the first test
    draws for real)."""
    from arctic_swe.report import _build

    def plot(runs: object, out: Path) -> list[Path]:
        out.mkdir(parents=True, exist_ok=True)
        names = ("compare_curves.png", "compare_reward.png", "compare_numerics.png")
        for name in names:
            (out / name).write_bytes(b"png")
        return [out / name for name in names]

    monkeypatch.setattr(_build, "plot_compare", plot)


def _collected(tmp_path: Path, seeds: tuple[int, ...] = ()) -> Path:
    results = tmp_path / "results" / "stress"
    collect([_ablation(tmp_path / "ab", seeds)], results, today=DAY)
    return results


def test_the_page_holds_the_tables_ablate_writes_and_the_figures(tmp_path: Path) -> None:
    results = _collected(tmp_path)
    report = write_report(results)
    text = (results / README).read_text()
    assert text == report.text
    assert text.startswith(f"# stress\n\n{BEGIN}\n")
    assert text.endswith(f"{END}\n")
    # the same sections, from the source run directories as `ablate` reads them
    rows = [
        comparison_row(
            label,
            MetricsLog(tmp_path / "ab" / label / "metrics.jsonl").read(),
            EvaluationLog(tmp_path / "ab" / label / EVALUATIONS).read(),
            read_verdict_rule(tmp_path / "ab" / label),
        )
        for label in CURVES
    ]
    for section in result_sections(rows):
        assert f"### {section.title}\n\n{section.markdown}" in text
    assert "stopped at update 6 of 10: every pool task retired" in text
    assert "inputs: not recorded for full, clip" in text
    names = sorted(path.name for path in report.figures)
    assert names == ["compare_curves.png", "compare_numerics.png", "compare_reward.png"]
    for path in report.figures:
        assert path.parent == results / FIGURES
        assert path.stat().st_size > 0
        assert f"]({FIGURES}/{path.name})" in text
    check_report(results)  # what was just written is what the data gives


@pytest.mark.usefixtures("stub_plots")
def test_the_same_data_gives_the_same_page(tmp_path: Path) -> None:
    results = _collected(tmp_path)
    first = write_report(results).text
    assert write_report(results).text == first
    other = tmp_path / "elsewhere" / "stress"
    collect([tmp_path / "ab"], other, today=DAY)
    assert write_report(other).text == first


@pytest.mark.usefixtures("stub_plots")
def test_seeded_runs_get_the_paired_table(tmp_path: Path) -> None:
    results = _collected(tmp_path, seeds=(0, 1))
    text = write_report(results).text
    assert "### paired with full, seed by seed" in text
    assert [run.label for run in read_results(results)] == [
        "full/seed-0", "clip/seed-0", "full/seed-1", "clip/seed-1"]  # fmt: skip


@pytest.mark.usefixtures("stub_plots")
def test_check_catches_an_edited_table(tmp_path: Path) -> None:
    results = _collected(tmp_path)
    text = write_report(results).text
    edited = text.replace("| full | 6 |", "| full | 7 |")
    assert edited != text
    (results / README).write_text(edited)
    with pytest.raises(ReportOutOfDateError, match=r"differs from what .* regenerates \(line \d+"):
        check_report(results)
    assert (results / README).read_text() == edited  # --check writes nothing


@pytest.mark.usefixtures("stub_plots")
def test_check_catches_new_data_and_a_missing_figure(tmp_path: Path) -> None:
    results = _collected(tmp_path)
    write_report(results)
    (results / FIGURES / "compare_reward.png").unlink()
    with pytest.raises(ReportOutOfDateError, match=r"compare_reward\.png is missing"):
        check_report(results)
    write_report(results)
    MetricsLog(tmp_path / "ab" / "full" / "metrics.jsonl").append(update(7, 0.9))
    collect([tmp_path / "ab"], results, today=DAY)
    with pytest.raises(ReportOutOfDateError, match="differs"):
        check_report(results)
    (results / README).unlink()
    with pytest.raises(ReportOutOfDateError, match="does not exist"):
        check_report(results)


@pytest.mark.usefixtures("stub_plots")
def test_the_authors_text_around_the_markers_is_kept(tmp_path: Path) -> None:
    results = _collected(tmp_path)
    (results / README).write_text("# Stress test\n\nWhat we ran and why.\n")
    text = write_report(results).text
    assert text.startswith("# Stress test\n\nWhat we ran and why.\n\n" + BEGIN)
    page = text.replace(END, END + "\n\nWhat it means.")
    (results / README).write_text(page)
    assert write_report(results).text == page
    check_report(results)


@pytest.mark.parametrize(
    "page",
    [f"{BEGIN}\nno end\n", f"{END}\n{BEGIN}\n", f"{BEGIN}\n{END}\n{BEGIN}\n{END}\n"],
)
def test_markers_that_do_not_pair_up_are_refused(page: str) -> None:
    with pytest.raises(ReportError, match="markers do not pair up"):
        splice(page, f"{BEGIN}\nnew\n{END}", "t")


def test_splice_replaces_only_the_generated_part() -> None:
    block = f"{BEGIN}\nnew\n{END}"
    assert splice(None, block, "t") == f"# t\n\n{block}\n"
    assert splice(f"a\n{BEGIN}\nold\n{END}\nb\n", block, "t") == f"a\n{block}\nb\n"


def test_a_folder_without_collected_data_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ReportError, match="holds no collected data"):
        write_report(tmp_path)
    assert not (tmp_path / README).exists()
