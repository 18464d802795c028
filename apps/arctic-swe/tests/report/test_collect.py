"""Collecting the compact data of finished runs: only the small files, deterministic bytes,
no machine path, and nothing written for a source that is not a run or ablation."""

from __future__ import annotations

import gzip
import json
from datetime import date
from pathlib import Path

import pytest

from arctic_swe.ablate import MANIFEST, AblationPlan, open_plan, variant_configs
from arctic_swe.config import EndReason, RunConfig, apply_overrides
from arctic_swe.metrics import EVALUATIONS, EvaluationLog, MetricsLog
from arctic_swe.report import DATA, MACHINE, SOURCE_FILE, ReportError, collect

from .conftest import write_run

DAY = date(2025, 1, 2)


def _ablation(root: Path, variants: tuple[str, str] = ("full", "clip")) -> Path:
    """A finished two-variant ablation whose manifest names machine paths (the first variant
    finished with an end record, the second without)."""
    base = apply_overrides(RunConfig(), ["run.updates=6"])
    configs = variant_configs(base, variants)
    first, second = variants
    open_plan(AblationPlan(root, configs, root.parent / "deck", root.parent / "policy"))
    inputs = (root.parent / "deck", root.parent / "policy")
    write_run(root / first, [0.2, 0.4, 0.6, 0.6, 0.7, 0.7], [2, 4, 6, 6],
              config=configs[first], end=EndReason.UPDATES, inputs=inputs)  # fmt: skip
    write_run(root / second, [0.2, 0.3, 0.2, 0.1, 0.1, 0.1], [2, 3, 1, 1],
              config=configs[second], inputs=inputs)  # fmt: skip
    return root


def _files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def test_an_ablation_is_collected_small_without_checkpoints(tmp_path: Path) -> None:
    source = _ablation(tmp_path / "ab")
    done = collect([source], tmp_path / "res", command="arctic-swe ablate", today=DAY)
    files = _files(tmp_path / "res" / DATA)
    assert set(files) == {
        SOURCE_FILE, MANIFEST,
        "full/config.toml", "full/metrics.jsonl.gz", "full/evaluations.jsonl.gz",
        "full/finished.json", "full/inputs.json",
        "clip/config.toml", "clip/metrics.jsonl.gz", "clip/evaluations.jsonl.gz", "clip/inputs.json",
    }  # fmt: skip
    assert list(done.runs) == ["full", "clip"]  # the manifest's order
    assert done.total == sum(len(content) for content in files.values())
    assert max(done.runs.values()) < 64_000
    # the compressed logs hold what the run's own logs read back
    metrics = gzip.decompress(files["full/metrics.jsonl.gz"]).decode()
    assert metrics == "".join(
        r.to_json() + "\n" for r in MetricsLog(source / "full" / "metrics.jsonl").read()
    )
    evaluations = gzip.decompress(files["clip/evaluations.jsonl.gz"]).decode()
    assert evaluations == "".join(
        r.to_json() + "\n" for r in EvaluationLog(source / "clip" / EVALUATIONS).read()
    )
    assert (source / "full" / "config.toml").read_bytes() == files["full/config.toml"]
    record = json.loads(files[SOURCE_FILE])
    assert record["runs"] == ["full", "clip"]
    [collection] = record["collections"]
    assert (collection["collected"], collection["command"], collection["source"]) == (
        "2025-01-02",
        "arctic-swe ablate",
        "ablation",
    )
    assert (collection["runs"], collection["manifest"]) == (["full", "clip"], MANIFEST)


def test_no_collected_file_holds_a_machine_path(tmp_path: Path) -> None:
    source = _ablation(tmp_path / "ab")
    collect([source], tmp_path / "res", note=f"quiet machine, out in {tmp_path}/ab", today=DAY)
    files = _files(tmp_path / "res" / DATA)
    for name, content in files.items():
        text = gzip.decompress(content) if name.endswith(".gz") else content
        assert str(tmp_path).encode() not in text, name
    manifest = json.loads(files[MANIFEST])
    assert (manifest["deck"], manifest["policy"]) == (f"{MACHINE}/deck", f"{MACHINE}/policy")
    assert json.loads(files["full/inputs.json"])["deck_sha256"] == "a" * 64  # digests kept


def test_collecting_the_same_data_again_gives_the_same_bytes(tmp_path: Path) -> None:
    source = _ablation(tmp_path / "ab")
    collect([source], tmp_path / "res", today=DAY)
    first = _files(tmp_path / "res" / DATA)
    collect([source], tmp_path / "res", today=DAY)  # replaces the data in place
    assert _files(tmp_path / "res" / DATA) == first
    collect([source], tmp_path / "other", today=DAY)
    assert _files(tmp_path / "other" / DATA) == first


def test_run_directories_are_labelled_by_path_suffix_or_label(tmp_path: Path) -> None:
    for name in ("a", "b"):
        write_run(tmp_path / name / "overfit", [0.2, 0.4], [2, 3])
    runs = [tmp_path / "a" / "overfit", tmp_path / "b" / "overfit"]
    assert list(collect(runs, tmp_path / "res").runs) == ["a/overfit", "b/overfit"]
    assert (tmp_path / "res" / DATA / "a" / "overfit" / "metrics.jsonl.gz").is_file()
    assert list(collect(runs, tmp_path / "res", labels=["x"]).runs) == ["x", "b/overfit"]
    assert not (tmp_path / "res" / DATA / "a").exists()  # the earlier collection is replaced


def _refused(tmp_path: Path, sources: list[Path], message: str, **kwargs: object) -> None:
    with pytest.raises(ReportError, match=message):
        collect(sources, tmp_path / "res", **kwargs)  # type: ignore[arg-type]
    assert not (tmp_path / "res").exists()


def test_a_source_that_is_not_a_run_or_ablation_is_refused(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    (tmp_path / "file").write_text("x")
    _refused(tmp_path, [tmp_path / "empty"], "neither an ablation directory")
    _refused(tmp_path, [tmp_path / "file"], "is not a directory")
    _refused(tmp_path, [tmp_path / "missing"], "does not exist")
    _refused(tmp_path, [], "nothing to collect")
    write_run(tmp_path / "fresh", [], [])  # a run directory before its first update
    (tmp_path / "fresh" / "metrics.jsonl").unlink(missing_ok=True)
    _refused(tmp_path, [tmp_path / "fresh"], "no metrics.jsonl: it has no updates")
    (tmp_path / "fresh" / "metrics.jsonl").touch()
    _refused(tmp_path, [tmp_path / "fresh"], "has no updates yet")


def test_an_ablation_is_collected_alone_and_whole(tmp_path: Path) -> None:
    source = _ablation(tmp_path / "ab")
    write_run(tmp_path / "run", [0.2], [2])
    _refused(tmp_path, [source, tmp_path / "run"], "collect it alone")
    _refused(tmp_path, [source], "collect it alone", labels=["x"])
    for name in ("metrics.jsonl", EVALUATIONS):
        (source / "clip" / name).rename(source / "clip" / f"{name}.bak")
    _refused(tmp_path, [source], "variant clip has not run")
    (source / MANIFEST).write_text("{}")
    _refused(tmp_path, [source], "not an ablation manifest")


def test_a_corrupt_log_is_refused_and_the_old_data_kept(tmp_path: Path) -> None:
    run = write_run(tmp_path / "run", [0.2, 0.3], [2, 3])
    collect([run], tmp_path / "res", today=DAY)
    before = _files(tmp_path / "res" / DATA)
    with (run / "metrics.jsonl").open("a") as handle:
        handle.write("{not json\n")
    with pytest.raises(ReportError, match="run run"):
        collect([run], tmp_path / "res", today=DAY)
    assert _files(tmp_path / "res" / DATA) == before
    assert [p.name for p in (tmp_path / "res").iterdir()] == [DATA]  # no scratch left behind


def test_a_data_directory_that_was_not_collected_is_never_replaced(tmp_path: Path) -> None:
    run = write_run(tmp_path / "run", [0.2], [2])
    (tmp_path / "res" / DATA).mkdir(parents=True)
    (tmp_path / "res" / DATA / "notes.txt").write_text("mine")
    with pytest.raises(ReportError, match="not collected data"):
        collect([run], tmp_path / "res")
    assert (tmp_path / "res" / DATA / "notes.txt").read_text() == "mine"


def test_runs_are_added_after_the_collected_ones_and_kept_byte_for_byte(tmp_path: Path) -> None:
    first, second = (write_run(tmp_path / name, [0.2, 0.4], [2, 3]) for name in ("a", "b"))
    collect([first], tmp_path / "res", labels=["full/seed-0"], command="sitting 1", today=DAY)
    before = _files(tmp_path / "res" / DATA)
    later = date(2025, 1, 3)
    done = collect([second], tmp_path / "res", labels=["full/seed-1"], command="sitting 2",
                   note="quiet", today=later, add=True)  # fmt: skip
    assert list(done.runs) == ["full/seed-1"]
    after = _files(tmp_path / "res" / DATA)
    assert {k: v for k, v in after.items() if k != SOURCE_FILE} == {
        **{k: v for k, v in before.items() if k != SOURCE_FILE},
        **{k.replace("seed-0", "seed-1"): v for k, v in before.items() if k != SOURCE_FILE},
    }  # the same data under a new label, the first run untouched
    record = json.loads(after[SOURCE_FILE])
    assert record["runs"] == ["full/seed-0", "full/seed-1"]
    assert [(c["collected"], c["command"], c["runs"]) for c in record["collections"]] == [
        ("2025-01-02", "sitting 1", ["full/seed-0"]),
        ("2025-01-03", "sitting 2", ["full/seed-1"]),
    ]
    assert done.total == sum(len(content) for content in after.values())


def test_adding_a_run_collected_already_is_refused_and_nothing_changes(tmp_path: Path) -> None:
    run = write_run(tmp_path / "run", [0.2, 0.4], [2, 3])
    collect([run], tmp_path / "res", labels=["full"], today=DAY)
    before = _files(tmp_path / "res" / DATA)
    with pytest.raises(ReportError, match=r"run full is in .* already"):
        collect([run], tmp_path / "res", labels=["full"], today=DAY, add=True)
    assert _files(tmp_path / "res" / DATA) == before


def test_each_ablation_added_keeps_its_own_manifest(tmp_path: Path) -> None:
    run = write_run(tmp_path / "run", [0.2, 0.4], [2, 3])
    collect([run], tmp_path / "res", labels=["extra"], today=DAY)
    collect([_ablation(tmp_path / "ab")], tmp_path / "res", today=DAY, add=True)
    second = _ablation(tmp_path / "ab2", ("no-eviction", "ungated"))
    collect([second], tmp_path / "res", today=DAY, add=True)
    files = _files(tmp_path / "res" / DATA)
    record = json.loads(files[SOURCE_FILE])
    assert record["runs"] == ["extra", "full", "clip", "no-eviction", "ungated"]
    assert [c.get("manifest") for c in record["collections"]] == [
        None, MANIFEST, "ablation-3.json"]  # fmt: skip
    assert json.loads(files["ablation-3.json"])["variants"] == ["no-eviction", "ungated"]
    assert json.loads(files[MANIFEST])["variants"] == ["full", "clip"]


def test_data_collected_before_collections_were_listed_is_added_to(tmp_path: Path) -> None:
    first, second = (write_run(tmp_path / name, [0.2, 0.4], [2, 3]) for name in ("a", "b"))
    collect([first], tmp_path / "res", labels=["a"], today=DAY)
    flat = {"collected": "2024-12-31", "command": "old", "note": "", "source": "runs",
            "from": ["<machine>/a"], "runs": ["a"]}  # fmt: skip
    (tmp_path / "res" / DATA / SOURCE_FILE).write_text(json.dumps(flat))
    collect([second], tmp_path / "res", labels=["b"], today=DAY, add=True)
    record = json.loads((tmp_path / "res" / DATA / SOURCE_FILE).read_text())
    assert record["runs"] == ["a", "b"]
    assert record["collections"][0] == flat


def test_adding_to_a_folder_with_no_data_is_a_first_collection(tmp_path: Path) -> None:
    run = write_run(tmp_path / "run", [0.2, 0.4], [2, 3])
    collect([run], tmp_path / "fresh", labels=["a"], today=DAY, add=True)
    collect([run], tmp_path / "plain", labels=["a"], today=DAY)
    assert _files(tmp_path / "fresh" / DATA) == _files(tmp_path / "plain" / DATA)
