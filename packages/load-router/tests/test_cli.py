"""``python -m load_router simulate``: table, JSON and help text."""

from __future__ import annotations

import contextlib
import io
import json
import re
import subprocess
import sys

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from load_router import SimConfig
from load_router._cli import OPTION_HELP, main

FAST = [
    "--updates",
    "6",
    "--warmup-updates",
    "1",
    "--engines",
    "2",
    "--max-outstanding-groups",
    "12",
]


def test_table_names_all_four_figures(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", *FAST]) == 0
    out = capsys.readouterr().out
    for label in ("stale drops / update", "mean policy lag", "update time", "tokens/s"):
        assert label in out
    assert "session-hash (no cap)" in out
    assert "least-loaded (cap 40)" in out
    assert "figures:" in out


def test_json_output_and_options_reach_the_config(capsys: pytest.CaptureFixture[str]) -> None:
    main(
        ["simulate", *FAST, "--policy", "round-robin", "--max-resident-per-engine", "16", "--json"]
    )
    payload = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert payload["baseline"]["policy"] == "session-hash"
    assert payload["baseline"]["max_resident_per_engine"] is None
    assert payload["candidate"]["policy"] == "round-robin"
    assert payload["candidate"]["max_resident_per_engine"] == 16
    assert payload["candidate"]["measured_updates"] == 5
    assert set(payload["candidate_wins"]) == {
        "stale_drops_per_update",
        "mean_lag",
        "update_s",
        "tokens_per_s",
    }


def test_help_explains_every_option() -> None:
    assert set(OPTION_HELP) == {f.name for f in attrs.fields(SimConfig)}
    completed = subprocess.run(
        [sys.executable, "-m", "load_router", "simulate", "--help"],
        capture_output=True,
        text=True,
        check=True,
    )
    for name in OPTION_HELP:
        assert "--" + name.replace("_", "-") in completed.stdout
    assert "--no-invalidate-caches" in completed.stdout


def test_bad_option_is_a_clear_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as caught:
        main(["simulate", "--policy", "random"])
    assert caught.value.code == 2
    assert "invalid choice" in capsys.readouterr().err


def test_bad_config_value_exits_2_with_message(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", "--engines", "0"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("python -m load_router simulate: error: ")
    assert "engines must be > 0" in err
    assert len(err.splitlines()) == 1


def test_a_failed_simulation_is_a_runtime_failure_exit_1(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # The options were valid; the simulation itself failed (what a deadlock raises).
    def deadlocked(config: SimConfig) -> None:
        raise RuntimeError("simulation deadlocked: nothing is running or scheduled")

    monkeypatch.setattr("load_router._cli.simulate", deadlocked)
    assert main(["simulate", *FAST]) == 1
    err = capsys.readouterr().err
    assert err == (
        "python -m load_router simulate: error: "
        "simulation deadlocked: nothing is running or scheduled\n"
    )


@settings(max_examples=30, deadline=None)
@given(
    flag=st.text(alphabet="abcxyz-_=0", min_size=1, max_size=8),
    where=st.integers(min_value=0, max_value=3),
    value=st.sampled_from(["", "x", "nan", "-1", "1e999"]),
)
def test_a_bad_argv_never_exits_0_nor_shows_a_traceback(flag: str, where: int, value: str) -> None:
    argv = ["simulate", "--engines", "2"]
    bad = [f"--zz{flag}", *([value] if value else [])]  # no option starts --zz
    argv[min(where, len(argv)) : min(where, len(argv))] = bad
    with pytest.raises(SystemExit) as exited, contextlib.redirect_stderr(io.StringIO()) as err:
        main(argv)
    assert exited.value.code == 2
    assert "Traceback" not in err.getvalue()
    assert re.match(r"python -m load_router( simulate)?: error: ", err.getvalue()), err.getvalue()


@pytest.mark.parametrize(
    ("flag", "value"),
    [
        ("--knee", "nan"),
        ("--knee", "inf"),
        ("--thrash-exponent", "nan"),
        ("--tool-median-s", "1e309"),
    ],
)
def test_non_finite_numbers_are_usage_errors(
    capsys: pytest.CaptureFixture[str], flag: str, value: str
) -> None:
    # nan/inf parse as floats; before the finite check they ended in an IndexError or a
    # "simulation deadlocked" traceback instead of a usage error.
    with pytest.raises(SystemExit) as caught:
        main(["simulate", *FAST, flag, value])
    assert caught.value.code == 2
    err = capsys.readouterr().err
    assert "must be a finite number" in err
    assert "Traceback" not in err
