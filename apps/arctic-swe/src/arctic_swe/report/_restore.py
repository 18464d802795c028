"""Finished runs back from a results folder, so an ablation measured across days resumes on a
machine that kept no run directories (``arctic-swe ablate --restore RESULTS``; Arctic-SWE §3.1:
the stress test's paired seeds).

A collected run (``RESULTS/data/<label>``, see ``_layout``) comes back as the run directory
``OUT/<label>`` only when the ablation would run exactly it: the same label, the config the
ablation gives that label, and the deck and warm start it trains from (their content digests).
It comes back with its config, metrics, evaluations, end record and inputs record as collected
— no checkpoint, so only a run that finished comes back — and ``ablate`` then skips it as
finished, its tables read the very records the results page was generated from.
"""

from __future__ import annotations

import gzip
import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path

from arctic_swe.ablate import AblateError, VariantState, variant_state
from arctic_swe.config import (
    RunConfig,
    RunConfigError,
    RunDir,
    RunDirError,
    RunInputs,
    load_run_config,
    read_run_inputs,
)
from arctic_swe.report._data import collected_labels
from arctic_swe.report._errors import ReportError
from arctic_swe.report._layout import DATA


def restore_runs(
    results: Path, out: Path, configs: Mapping[str, RunConfig], inputs: RunInputs
) -> list[str]:
    """Write each run of ``configs`` (label -> the config the ablation gives it) that
    ``out`` does not hold yet but ``results/data`` collected back as ``out/<label>``; return
    the labels restored, in ``configs`` order.

    Raises :class:`ReportError`, before writing anything, when a collected run of one of the
    labels has another config, another deck or warm start than ``inputs`` (or no record of
    them), or did not finish (a run restored without checkpoints could not resume).
    """
    collected = set(collected_labels(results))
    wanted = [label for label in configs if label in collected and not (out / label).exists()]
    if not wanted:
        return []
    # Each run is unpacked once, into a scratch directory beside ``out`` (same file system),
    # checked there, and only when every one passes renamed into place: nothing half-written.
    out.parent.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=".restore-", dir=out.parent))
    try:
        for label in wanted:
            staged = scratch / label
            _stage(results / DATA / label, staged, label, configs[label], inputs)
        for label in wanted:
            (out / label).parent.mkdir(parents=True, exist_ok=True)
            (scratch / label).rename(out / label)
    finally:
        shutil.rmtree(scratch)
    return wanted


def _stage(collected: Path, staged: Path, label: str, config: RunConfig, inputs: RunInputs) -> None:
    """Unpack one collected run into ``staged``; refuse it when this ablation would not have
    run it the same way."""
    where = f"collected run {label} ({collected})"
    staged.mkdir(parents=True, mode=0o755)
    run = RunDir(staged)
    try:
        _unpack(collected, staged)
        if load_run_config(run) != config:
            raise ReportError(
                f"{where} has another config than this ablation gives {label}: "
                "not restored (restore from the results of the same command)"
            )
        recorded = read_run_inputs(run)
        state = variant_state(run, config)
    except (OSError, RunConfigError, RunDirError, AblateError) as exc:
        raise ReportError(f"{where}: {exc}") from exc
    if recorded is None:
        raise ReportError(f"{where} records no deck or warm-start digests: not restored")
    if not recorded.same_content(inputs):
        raise ReportError(
            f"{where} started from {recorded.short()}; this ablation trains from "
            f"{inputs.short()}: not restored (rebuild the inputs it started from)"
        )
    if state is not VariantState.DONE:
        raise ReportError(
            f"{where} did not finish; it has no checkpoints to resume from: not restored"
        )


def _unpack(collected: Path, into: Path) -> None:
    """The collected files as a run directory holds them: the logs decompressed."""
    for path in sorted(collected.iterdir()):
        if path.suffix == ".gz":
            (into / path.stem).write_bytes(gzip.decompress(path.read_bytes()))
        elif path.is_file():
            shutil.copyfile(path, into / path.name)
