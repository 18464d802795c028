"""Tests for ``arctic_swe.deck._validate``: Pipeline 1 through the real namespace sandbox."""

import os
import shutil
from pathlib import Path

import pytest

from arctic_swe.deck import AUDIT_FILE, DeckConfig, validate_deck, write_deck
from swe_sandbox import NamespaceBackend

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("unshare") is None,
    reason="the namespace sandbox needs root and unshare",
)


def test_generated_tasks_are_admitted_and_a_broken_one_is_dropped(tmp_path: Path) -> None:
    deck = write_deck(
        tmp_path / "d", DeckConfig(seed=1, pool_size=2, heldout_size=1, warmstart_size=0)
    )
    broken = deck.split("pool")[1]
    # Ship the fix in the buggy tree: the F2P test now passes before the gold patch.
    module = Path(broken.spec.repo.location, broken.bug_path)
    module.write_text(module.read_text().replace(broken.old_line, broken.new_line))
    seen: list[str] = []
    reloaded, report = validate_deck(
        deck, NamespaceBackend(), reruns=2, workers=2, on_task=lambda r: seen.append(r.instance_id)
    )
    assert sorted(seen) == ["heldout-0000", "pool-0000", "pool-0001"]
    assert report.admitted == ("heldout-0000", "pool-0000")
    assert set(report.rejected) == {"pool-0001"}
    assert not report.ok
    assert [t.instance_id for t in reloaded.split("pool")] == ["pool-0000"]
    assert len((deck.root / AUDIT_FILE).read_text().splitlines()) == 3
    # Resumable: a second run reuses every record and grades nothing.
    _, again = validate_deck(reloaded, NamespaceBackend(), reruns=2)
    assert again.skipped == 2
    assert again.admitted == ("heldout-0000", "pool-0000")
