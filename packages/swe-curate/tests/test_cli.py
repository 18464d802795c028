"""The CLI end to end on a task file with loose, broken and malformed rows: records, resumption,
summary tables, and the installed ``swe-curate`` entry point."""

from __future__ import annotations

import contextlib
import io
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import attrs
import pytest
from curate_openai_server import Raw, serve
from curate_tasks import make_task
from hypothesis import given, settings
from hypothesis import strategies as st

from swe_curate._cli import main
from swe_curate._importers import task_to_row
from swe_curate._records import RecordStore
from swe_curate._scorer import SandboxScorer
from swe_curate._verdicts import Verdict
from swe_sandbox import BackendUnavailableError, NamespaceBackend


def _rows(tmp_path: Path) -> Path:
    good = make_task(tmp_path, "good")
    loose = make_task(tmp_path, "loose")
    broken = attrs.evolve(
        good,
        instance_id="geom-broken",
        gold_patch=good.gold_patch.replace("return hi", "return HI"),
    )
    path = tmp_path / "tasks.jsonl"
    lines = [json.dumps(task_to_row(t)) for t in (loose, broken)]
    lines.insert(1, "{this is not json")
    lines.append(json.dumps({"instance_id": "no-fields"}))
    path.write_text("\n".join(lines) + "\n")
    return path


def test_audit_judge_strengthen_resume_and_summarise(
    tmp_path: Path, scorer: SandboxScorer, capsys: pytest.CaptureFixture[str]
) -> None:
    tasks, records, deck = _rows(tmp_path), tmp_path / "records.jsonl", tmp_path / "deck.jsonl"
    assert main(["audit", str(tasks), "--records", str(records), "--reruns", "1"]) == 0
    audit = RecordStore(records).latest("audit")
    assert audit["geom-loose"].verdict is Verdict.ADMITTED
    assert audit["geom-broken"].verdict is Verdict.PATCH_DOES_NOT_APPLY
    assert audit["row-1"].verdict is Verdict.MALFORMED_ROW
    assert audit["no-fields"].verdict is Verdict.MALFORMED_ROW
    out = capsys.readouterr().out
    assert "admitted" in out
    assert "25.0%" in out  # 1 of 4 admitted

    assert main(["audit", str(tasks), "--records", str(records)]) == 0  # resumed: nothing to redo
    assert len(RecordStore(records).records("audit")) == 4
    assert "4 task(s) already judged, 0 to go" in capsys.readouterr().out

    assert main(["judge", str(tasks), "--records", str(records)]) == 0
    judged = RecordStore(records).latest("judge")
    assert set(judged) == {"geom-loose"}  # only what Pipeline 1 admitted
    assert judged["geom-loose"].verdict is Verdict.TOO_LOOSE

    assert main(["strengthen", str(tasks), "--records", str(records), "--deck", str(deck)]) == 0
    assert RecordStore(records).latest("strengthen")["geom-loose"].verdict is Verdict.STRENGTHENED
    (row,) = [json.loads(line) for line in deck.read_text().splitlines()]
    assert row["instance_id"] == "geom-loose"

    assert main(["summary", "--records", str(records)]) == 0
    out = capsys.readouterr().out
    for stage in ("audit", "judge", "strengthen"):
        assert f"{stage} —" in out


def test_entry_point_help_and_bad_input(tmp_path: Path) -> None:
    # the interpreter's own scripts folder first: a venv run without activation has no PATH
    beside = Path(sys.executable).parent / "swe-curate"
    exe = str(beside) if beside.is_file() else shutil.which("swe-curate")
    if exe is None:
        pytest.skip("swe-curate entry point not installed in this environment")
    done = subprocess.run([exe, "--help"], capture_output=True, text=True, check=False)
    assert done.returncode == 0
    for command in ("run", "audit", "judge", "strengthen", "inject", "summary"):
        assert command in done.stdout
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"instance_id": "a"}\n')
    broken = subprocess.run(
        [exe, "summary", "--records", str(bad)], capture_output=True, text=True, check=False
    )
    assert broken.returncode == 2  # the record file the user named is not one
    assert broken.stderr.startswith("swe-curate: error: not a task record")
    assert "Traceback" not in broken.stderr


@pytest.mark.slow  # 15 s; judge garbage is recorded in test_judging, the CLI path runs nightly
def test_llm_judge_garbage_through_the_cli(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tasks, records = _rows(tmp_path), tmp_path / "records.jsonl"
    with serve(lambda body: Raw(200, b"not json at all")) as srv:
        monkeypatch.setenv("SWE_CURATE_JUDGE_BASE_URL", srv.base_url)
        monkeypatch.setenv("SWE_CURATE_JUDGE_MODEL", "judge")
        assert (
            main(
                [
                    "judge",
                    str(tasks),
                    "--records",
                    str(records),
                    "--judge",
                    "llm",
                    "--judge-timeout",
                    "5",
                ]
            )
            == 0
        )
    judged = RecordStore(records).latest("judge")
    assert judged["geom-loose"].verdict is Verdict.JUDGE_GARBAGE
    assert judged["row-1"].verdict is Verdict.MALFORMED_ROW
    assert srv.requests  # the judge was really asked


def test_inject_from_an_sdist(
    inflection_sdist: Path, tmp_path: Path, scorer: SandboxScorer
) -> None:
    deck, records = tmp_path / "deck.jsonl", tmp_path / "inject.jsonl"
    argv = ["inject", str(inflection_sdist), "--records", str(records), "--deck", str(deck)]
    assert main([*argv, "--max-candidates", "4", "--max-tasks", "1", "--seed", "3"]) == 0
    injected = [r for r in RecordStore(records).records("inject") if r.verdict is Verdict.INJECTED]
    rows = [json.loads(line) for line in deck.read_text().splitlines()]
    assert len(rows) == len(injected) == 1
    assert rows[0]["instance_id"].startswith("inflection-0.5.1-")
    assert Path(rows[0]["repo"]["location"]).is_dir()


def _bad_inputs(tmp: Path) -> list[tuple[list[str], int, str]]:
    """(argv, exit code, text the one error line must hold)."""
    rows = tmp / "rows.jsonl"
    rows.write_text("")
    binary = tmp / "binary.jsonl"
    binary.write_bytes(b"\xff\xfe\x00not utf-8")
    records = ["--records", str(tmp / "r.jsonl")]
    missing = str(tmp / "missing.jsonl")
    return [
        (["audit", str(rows), *records, "--reruns", "0"], 2, "--reruns: must be > 0"),
        (["audit", str(rows), *records, "--reruns", "many"], 2, "expected a number"),
        (["audit", str(rows), *records, "--grade-timeout", "-5"], 2, "must be > 0, got -5"),
        (["judge", str(rows), *records, "--judge-retries", "-1"], 2, "must be >= 0"),
        (["run", str(rows), "--out", str(tmp / "o"), "--workers", "0"], 2, "must be > 0"),
        (["audit", missing, *records], 2, "cannot read task rows"),
        (["audit", str(tmp), *records], 2, "cannot read task rows"),
        (["audit", str(binary), *records], 2, "cannot read task rows"),
        (["run", missing, "--out", str(tmp / "o")], 2, "cannot read task rows"),
        (["run", str(rows), "--out", str(tmp / "o"), "--force", "ghost"], 2, "'ghost'"),
        (["summary", "--records", missing], 2, "no such record file"),
        (["summary", "--records", str(binary)], 2, "error"),
        (["run", str(rows), "--out", str(tmp / "o"), "--judge", "llm"], 2, "not configured"),
        (["audit", str(rows)], 2, "--records"),
        (["audit", str(rows), "--records", str(binary)], 2, "error"),
        (["inject", missing, *records, "--deck", str(tmp / "d.jsonl")], 2, "no such repository"),
        (["frobnicate"], 2, "invalid choice"),
    ]


def test_bad_inputs_end_in_one_error_line_without_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("SWE_CURATE_JUDGE_BASE_URL", "SWE_CURATE_JUDGE_MODEL", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    for argv, code, text in _bad_inputs(tmp_path):
        try:
            got = main(argv)
        except SystemExit as exc:  # argparse usage errors
            got = int(exc.code or 0)
        out, err = capsys.readouterr()
        assert got == code, (argv, got, err)
        assert len(err.strip().splitlines()) == 1, (argv, err)
        assert err.startswith("swe-curate"), (argv, err)
        assert text in err, (argv, err)
        assert "Traceback" not in out + err


def test_swebench_rows_on_local_checkouts_each_get_their_own_verdict(
    tmp_path: Path, namespace_backend: object, capsys: pytest.CaptureFixture[str]
) -> None:
    from curate_tasks import make_swebench_checkout

    checkouts, row = make_swebench_checkout(tmp_path)
    no_commit = {**row, "instance_id": "geomlab__geom-gone", "base_commit": "ab" * 20}
    no_repo = {**row, "instance_id": "geomlab__other-1", "repo": "geomlab/other"}
    tasks, records = tmp_path / "swebench.jsonl", tmp_path / "records.jsonl"
    tasks.write_text("".join(json.dumps(r) + "\n" for r in (no_commit, row, no_repo)))
    argv = ["audit", str(tasks), "--records", str(records), "--reruns", "1", "--no-binding"]
    assert main([*argv, "--format", "swebench", "--repo-dir", str(checkouts)]) == 0
    audit = RecordStore(records).latest("audit")
    assert audit["geomlab__geom-good"].verdict is Verdict.ADMITTED
    assert audit["geomlab__geom-gone"].verdict is Verdict.MALFORMED_ROW
    assert "base commit abab" in audit["geomlab__geom-gone"].reason
    assert audit["geomlab__other-1"].verdict is Verdict.MISSING_REPO
    assert "no git checkout of 'geomlab/other'" in audit["geomlab__other-1"].reason


def test_a_sandbox_infrastructure_failure_is_exit_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # The inputs are fine; the sandbox backend cannot start (no daemon, no namespaces).
    def unavailable(args: object) -> SandboxScorer:
        raise BackendUnavailableError("user namespaces are disabled on this host")

    monkeypatch.setattr("swe_curate._cli._scorer", unavailable)
    argv = ["audit", str(_rows(tmp_path)), "--records", str(tmp_path / "r.jsonl")]
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert err == "swe-curate: error: user namespaces are disabled on this host\n"


def test_the_backend_is_chosen_and_built_through_the_sandbox_registry(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import swe_sandbox._registry as registry

    class OtherBackend(NamespaceBackend):
        name = "other"

    # a name only the registry knows: accepted by --backend, built by create_backend
    monkeypatch.setattr(registry, "_factories", {**registry._factories, "other": OtherBackend})
    built: list[object] = []

    def scorer(backend: object, limits: object) -> SandboxScorer:
        built.append(backend)
        raise BackendUnavailableError("other backend reached")

    monkeypatch.setattr("swe_curate._cli.SandboxScorer", scorer)
    argv = ["audit", str(_rows(tmp_path)), "--records", str(tmp_path / "r.jsonl")]
    assert main([*argv, "--backend", "other"]) == 1
    assert [type(b) for b in built] == [OtherBackend]
    assert capsys.readouterr().err == "swe-curate: error: other backend reached\n"
    monkeypatch.setattr(registry, "_factories", {"namespace": NamespaceBackend})
    with pytest.raises(SystemExit) as exited:
        main([*argv, "--backend", "other"])
    assert exited.value.code == 2
    assert "invalid choice: 'other'" in capsys.readouterr().err


COMMAND_PATHS = [
    [], ["run", "t.jsonl", "--out", "o"], ["audit", "t.jsonl", "--records", "r"],
    ["judge", "t.jsonl", "--records", "r"], ["strengthen", "t.jsonl", "--records", "r"],
    ["inject", "src", "--records", "r", "--deck", "d"], ["summary", "--records", "r"],
]  # fmt: skip


@settings(max_examples=30, deadline=None)
@given(
    path=st.sampled_from(COMMAND_PATHS),
    flag=st.text(alphabet="abcxyz-_=0", min_size=1, max_size=8),
    where=st.integers(min_value=0, max_value=6),
)
def test_a_bad_argv_never_exits_0_nor_shows_a_traceback(
    path: list[str], flag: str, where: int
) -> None:
    argv = [*path]
    argv.insert(min(where, len(argv)), f"--zz{flag}")  # no option of any command starts --zz
    with pytest.raises(SystemExit) as exited, contextlib.redirect_stderr(io.StringIO()) as err:
        main(argv)
    assert exited.value.code == 2
    assert "Traceback" not in err.getvalue()
    assert re.match(r"swe-curate( [a-z]+)*: error: ", err.getvalue()), err.getvalue()
