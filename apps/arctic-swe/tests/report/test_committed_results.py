"""Every results folder committed under ``apps/arctic-swe/results/`` with collected data is what
its data regenerates (``arctic-swe report RESULTS --check``): a hand-edited table, or data
committed without regenerating the page, fails here."""

from __future__ import annotations

from pathlib import Path

import pytest

from arctic_swe.report import check_report

RESULTS = Path(__file__).resolve().parents[2] / "results"
FOLDERS = sorted(path.parent.parent for path in RESULTS.glob("*/data/SOURCE.json"))


def test_the_results_tree_is_where_this_test_looks() -> None:
    assert (RESULTS / "README.md").is_file()


@pytest.mark.parametrize("folder", FOLDERS, ids=[folder.name for folder in FOLDERS])
def test_a_committed_results_page_is_what_its_data_regenerates(folder: Path) -> None:
    report = check_report(folder)
    assert report.text.count("<!-- BEGIN arctic-swe report") == 1
