"""SWE-bench-format rows over real git checkouts, made from the small procedural deck: each
task's tree without its graded test file is the base commit, the test file arrives through
``test_patch`` and the fix is the gold ``patch``, exactly as SWE-bench publishes a row."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from transformers import PreTrainedTokenizerFast

from arctic_swe.deck import StoredDeck
from swe_curate import make_patch


def _git(cwd: Path, *args: str) -> str:
    ident = ["-c", "user.name=arctic", "-c", "user.email=arctic@example.org"]
    done = subprocess.run(
        ["git", *ident, *args], cwd=cwd, check=True, capture_output=True, text=True
    )
    return done.stdout.strip()


def swebench_rows(deck: StoredDeck, root: Path, count: int) -> tuple[Path, list[dict[str, object]]]:
    """A folder of checkouts (``arctic__pool-NNNN``) and one SWE-bench row per pool task."""
    rows: list[dict[str, object]] = []
    for task in deck.split("pool")[:count]:
        name = f"arctic__{task.instance_id}"
        checkout = root / name
        shutil.copytree(deck.root / "repos" / task.instance_id, checkout)
        (graded,) = task.spec.graded_files
        test_text = (checkout / graded).read_text()
        (checkout / graded).unlink()
        _git(checkout, "init", "-q")
        _git(checkout, "add", "-A")
        _git(checkout, "commit", "-q", "-m", "base")
        head = _git(checkout, "rev-parse", "HEAD")
        rows.append(
            {
                "repo": f"arctic/{task.instance_id}",
                "instance_id": name,
                "base_commit": head,
                "patch": task.spec.gold_patch,
                "test_patch": make_patch({}, {graded: test_text}),
                "problem_statement": task.spec.problem_statement,
                "hints_text": "",
                "created_at": "2024-01-01T00:00:00Z",
                "version": "0.1",
                "environment_setup_commit": head,
                "FAIL_TO_PASS": json.dumps(list(task.spec.fail_to_pass)),
                "PASS_TO_PASS": list(task.spec.pass_to_pass),  # the list form, too
            }
        )
    return root, rows


@pytest.fixture
def swebench_checkouts(
    small_deck: StoredDeck, tmp_path: Path
) -> tuple[Path, list[dict[str, object]]]:
    return swebench_rows(small_deck, tmp_path / "checkouts", 2)


@pytest.fixture(scope="session")
def random_policy(
    deck_tokenizer: PreTrainedTokenizerFast, tmp_path_factory: pytest.TempPathFactory
) -> Path:
    """A random-initialised tiny policy with the deck's tokenizer (a checkpoint directory)."""
    from arctic_swe.chat import save_tokenizer
    from arctic_swe.model import build_policy, policy_config, save_policy

    model = build_policy(policy_config(len(deck_tokenizer)), 0)
    target = save_policy(model, tmp_path_factory.mktemp("policy") / "policy")
    save_tokenizer(deck_tokenizer, target)
    return target
