"""``swe-curate run|audit|judge|strengthen|inject|summary``: curation over files of task rows.

``run`` does every stage for a batch (audit, judge, strengthen) and writes the kept and dropped
rows; the single-stage commands append to one JSON-lines record file (``--records``). All skip
the tasks they have already finished, so an interrupted run resumes where it stopped. Bad rows,
missing repositories or test programs, patches that do not apply, judge and sandbox failures
become records with their own verdicts; the run carries on. Errors end the command with one
``swe-curate: error: ...`` line on stderr. Exit codes: 0 success; 2 a usage error (bad
arguments; a task-row, record or source file that is missing or unreadable; an unknown --force
id; a judge that is not configured); 1 a runtime failure (the sandbox infrastructure, the
disk, ...); 130 interrupted.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import NoReturn, TypeAlias

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from swe_curate._audit import AuditConfig, audit_task
from swe_curate._chat import ChatClient, ChatConfig
from swe_curate._errors import CurateError, TaskInputError
from swe_curate._importers import ImportedRow, RowFormat, import_rows
from swe_curate._inject import InjectConfig, inject, unpack_source
from swe_curate._judge import Judge, OfflineJudge
from swe_curate._judging import judge_task
from swe_curate._llm_judge import LLMJudge
from swe_curate._pooled import PoolRunner
from swe_curate._records import CurationRecord, RecordStore, summarize
from swe_curate._run import PipelineConfig, RunOutput, run_pipeline, stage_rates
from swe_curate._scorer import SandboxScorer
from swe_curate._strengthen import strengthen_task
from swe_curate._verdicts import Verdict
from swe_sandbox import (
    DEFAULT_BACKEND,
    Backend,
    Limits,
    SandboxError,
    TaskSpec,
    backend_names,
    create_backend,
)

USAGE_EXIT = 2
FAILURE_EXIT = 1


class UsageError(CurateError):
    """The command's input is unusable (a file the user named, an option's value): exit 2."""


@contextmanager
def _inputs() -> Iterator[None]:
    """Errors met while reading the inputs the user named are usage errors (exit 2); the same
    error types met later, while doing the work, are runtime failures (exit 1)."""
    try:
        yield
    except UsageError:
        raise
    except (CurateError, OSError, UnicodeError, ValueError) as exc:
        raise UsageError(str(exc) or type(exc).__name__) from exc


def summary_table(records: Sequence[CurationRecord], title: str) -> Table:
    """Admitted / each rejection class with counts and percentages."""
    table = Table(title=title)
    table.add_column("verdict")
    table.add_column("tasks", justify="right")
    table.add_column("share", justify="right")
    counts = summarize(list(records))
    total = sum(counts.values())
    ordered = sorted(counts.items(), key=lambda kv: (not kv[0].is_positive, -kv[1], kv[0].value))
    for verdict, count in ordered:
        style = "green" if verdict.is_positive else "red"
        table.add_row(
            f"[{style}]{verdict.value}[/{style}]", str(count), f"{100 * count / total:.1f}%"
        )
    table.add_row("[bold]total[/bold]", str(total), "100.0%" if total else "-")
    return table


def _backend(name: str) -> Backend:
    return create_backend(name)


def _limits(args: argparse.Namespace) -> Limits:
    # Mutants can loop forever (an inverted `while`): bound every graded run.
    return Limits(grade_timeout_s=args.grade_timeout, exec_timeout_s=args.grade_timeout)


def _scorer(args: argparse.Namespace) -> SandboxScorer:
    return SandboxScorer(_backend(args.backend), _limits(args))


def _progress(console: Console) -> Progress:
    return Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("{task.fields[last]}"),
        console=console,
    )


def _run_stage(
    console: Console,
    store: RecordStore,
    stage: str,
    rows: Iterable[ImportedRow],
    work: Callable[[TaskSpec], CurationRecord | None],
    wanted: Callable[[str], bool] = lambda instance_id: True,
) -> list[CurationRecord]:
    done = store.done(stage)
    pending = [row for row in rows if row.instance_id not in done and wanted(row.instance_id)]
    console.print(f"{stage}: {len(done)} task(s) already judged, {len(pending)} to go")
    with _progress(console) as progress:
        bar = progress.add_task(stage, total=len(pending), last="")
        for row in pending:
            if row.task is None:
                record: CurationRecord | None = CurationRecord(
                    row.instance_id, stage, row.verdict, row.error
                )
            else:
                try:
                    record = work(row.task)
                except TaskInputError as exc:
                    verdict = Verdict.for_input_error(exc)
                    record = CurationRecord(row.instance_id, stage, verdict, str(exc))
                except CurateError as exc:  # a stage never stops the run for one task
                    record = CurationRecord(row.instance_id, stage, Verdict.SANDBOX_ERROR, str(exc))
            if record is not None:
                store.append(record)
                progress.update(bar, last=f"{record.instance_id}: {record.verdict.value}")
            progress.advance(bar)
    records = store.records(stage)
    console.print(summary_table(records, f"{stage} — {store.path.name}"))
    return records


def _rows(args: argparse.Namespace) -> list[ImportedRow]:
    """Every row of the task file, read before any sandbox starts (a bad file: exit 2)."""
    with _inputs():
        return list(import_rows(args.tasks, RowFormat(args.format), repo_dir=args.repo_dir))


def _store(path: str) -> RecordStore:
    """The record file, read once up front: a corrupt one is the user's input, exit 2."""
    store = RecordStore(path)
    with _inputs():
        store.records()
    return store


def _judge_from(args: argparse.Namespace) -> Judge:
    if args.judge == "llm":
        config = ChatConfig.from_env(timeout_s=args.judge_timeout, max_retries=args.judge_retries)
        return LLMJudge(ChatClient(config))
    return OfflineJudge()


def cmd_audit(args: argparse.Namespace, console: Console) -> int:
    store, rows = _store(args.records), _rows(args)
    config = AuditConfig(reruns=args.reruns, binding=not args.no_binding)
    with _scorer(args) as scorer:
        _run_stage(console, store, "audit", rows, lambda t: audit_task(t, scorer, config))
    return 0


def cmd_judge(args: argparse.Namespace, console: Console) -> int:
    store, rows = _store(args.records), _rows(args)
    audits = store.latest("audit")
    with _inputs():
        judge = _judge_from(args)

    def work(task: TaskSpec) -> CurationRecord | None:
        return judge_task(task, scorer, judge, audits.get(task.instance_id))

    def wanted(instance_id: str) -> bool:
        # Pipeline 2 judges what Pipeline 1 admitted (or everything, when no audit was run).
        audit = audits.get(instance_id)
        return audit is None or audit.verdict is Verdict.ADMITTED

    with _scorer(args) as scorer:
        _run_stage(console, store, "judge", rows, work, wanted)
    return 0


def cmd_strengthen(args: argparse.Namespace, console: Console) -> int:
    store, rows = _store(args.records), _rows(args)
    judged, audits = store.latest("judge"), store.latest("audit")
    deck = Path(args.deck) if args.deck else None

    def work(task: TaskSpec) -> CurationRecord | None:
        verdict = judged.get(task.instance_id)
        if verdict is None or verdict.verdict is not Verdict.TOO_LOOSE:
            why = (
                "no judge record (run `swe-curate judge` first)"
                if verdict is None
                else f"judge verdict is {verdict.verdict.value}; only too_loose suites are strengthened"
            )
            return CurationRecord(task.instance_id, "strengthen", Verdict.SKIPPED, why)
        record = strengthen_task(task, scorer, verdict, audits.get(task.instance_id))
        if deck is not None and record.verdict is Verdict.STRENGTHENED:
            _append_row(deck, record.measurements["task"])
        return record

    with _scorer(args) as scorer:
        _run_stage(console, store, "strengthen", rows, work)
    return 0


def cmd_inject(args: argparse.Namespace, console: Console) -> int:
    store = _store(args.records)
    source = Path(args.source)
    if not source.exists():
        raise UsageError(f"{source}: no such repository directory or sdist")
    trees = Path(args.trees) if args.trees else Path(args.deck).with_suffix(".trees")
    name = args.name
    if source.is_file():
        name = name or re.sub(r"(\.tar)?\.(gz|tgz|bz2|xz|tar)$", "", source.name)
        with _inputs():  # not an archive we can unpack: the user's input
            source = unpack_source(source, trees / "_source")
    config = InjectConfig(
        max_candidates=args.max_candidates,
        max_tasks=args.max_tasks,
        seed=args.seed,
        environment=args.environment,
    )
    with _scorer(args) as scorer, _progress(console) as progress:
        bar = progress.add_task("inject", total=config.max_candidates, last="")
        for record in inject(source, trees, scorer, config, name=name):
            store.append(record)
            if record.verdict is Verdict.INJECTED:
                _append_row(Path(args.deck), record.measurements["task"])
            progress.update(bar, last=f"{record.instance_id}: {record.verdict.value}")
            progress.advance(bar)
    console.print(summary_table(store.records("inject"), f"inject — {store.path.name}"))
    return 0


def cmd_run(args: argparse.Namespace, console: Console) -> int:
    rows = _rows(args)
    unknown = sorted(set(args.force or ()) - {row.instance_id for row in rows})
    if unknown:
        raise UsageError(f"--force: no row of {args.tasks} has the id(s) {unknown}")
    with _inputs():  # a misconfigured judge fails here, before any sandbox starts
        _judge_from(args)
    config = PipelineConfig(
        workers=args.workers,
        force=frozenset(args.force or ()),
        audit=AuditConfig(reruns=args.reruns, binding=not args.no_binding),
    )
    output = RunOutput(Path(args.out))
    began = time.monotonic()
    with (
        PoolRunner(_backend(args.backend), _limits(args), args.workers) as runner,
        _progress(console) as progress,
    ):
        bar = progress.add_task("run", total=None, last="")

        def on_start(pending: int, skipped: int) -> None:
            progress.update(bar, total=pending)
            console.print(f"run: {skipped} task(s) already finished, {pending} to go")

        def on_done(record: CurationRecord) -> None:
            progress.update(bar, advance=1, last=f"{record.instance_id}: {record.verdict.value}")

        finals = run_pipeline(
            rows, output, runner.scorer, lambda: _judge_from(args), config, on_done, on_start
        )
    kept = sum(bool(r.measurements.get("kept")) for r in finals)
    console.print(summary_table(finals, f"run — {kept} kept, {len(finals) - kept} dropped"))
    ids = {r.instance_id for r in finals}
    rates = stage_rates(r for r in RecordStore(output.records) if r.instance_id in ids)
    for stage, rate in rates.items():
        console.print(
            f"{stage}: {rate['tasks']} task(s), {rate['tasks_per_hour']} tasks/hour per worker"
        )
    console.print(
        f"wall time {time.monotonic() - began:.1f} s with {args.workers} worker(s); "
        f"rows in {output.kept} and {output.dropped}"
    )
    return 0


def cmd_summary(args: argparse.Namespace, console: Console) -> int:
    if not Path(args.records).is_file():
        raise UsageError(f"{args.records}: no such record file")
    store = _store(args.records)
    stages = [args.stage] if args.stage else sorted({r.stage for r in store})
    for stage in stages:
        console.print(summary_table(store.records(stage), f"{stage} — {store.path.name}"))
    return 0


def _append_row(path: Path, row: dict[str, object]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as handle:
        handle.write(json.dumps(row, sort_keys=True) + "\n")


def _positive(kind: type[int] | type[float]) -> Callable[[str], float]:
    def parse(text: str) -> float:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
        if value <= 0:
            raise argparse.ArgumentTypeError(f"must be > 0, got {text}")
        return value

    parse.__name__ = f"positive {kind.__name__}"
    return parse


class _CurateParser(argparse.ArgumentParser):
    """Usage errors in one line (``swe-curate <cmd>: error: ...``), exit 2."""

    def error(self, message: str) -> NoReturn:
        sys.stderr.write(f"{self.prog}: error: {message} (see --help)\n")
        raise SystemExit(2)


_Sub: TypeAlias = "argparse._SubParsersAction[_CurateParser]"  # what add_subparsers returns


def build_parser() -> argparse.ArgumentParser:
    """The ``swe-curate`` parser: one sub-command per stage, ``run`` for all of them."""
    parser = _CurateParser(
        prog="swe-curate", description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    sub = parser.add_subparsers(dest="command", required=True)
    _add_run(sub)
    _add_stages(sub)
    _add_inject(sub)
    _add_summary(sub)
    return parser


def _common(p: argparse.ArgumentParser, tasks: bool = True) -> None:
    """The task rows (unless ``tasks`` is false), the sandbox backend and the grade timeout."""
    if tasks:
        p.add_argument("tasks", help="task rows: .jsonl, .json or .parquet")
        p.add_argument(
            "--format",
            default="auto",
            choices=[f.value for f in RowFormat],
            help="row schema (default: guessed per row)",
        )
        p.add_argument(
            "--repo-dir",
            default=None,
            metavar="DIR",
            help="take dataset rows' repositories from local git checkouts: DIR is one\n"
            "checkout, or a folder of them named owner__name, owner/name or name\n"
            "(default: the image each row names)",
        )
    p.add_argument(
        "--backend",
        default=DEFAULT_BACKEND,
        choices=backend_names(),
        help=f"sandbox backend: one of swe-sandbox's (default: {DEFAULT_BACKEND})",
    )
    p.add_argument(
        "--grade-timeout",
        type=_positive(float),
        default=120.0,
        help="seconds per graded run or probe (default: 120)",
    )


def _records(p: argparse.ArgumentParser) -> None:
    """``--records``: the resumable record file a stage reads and appends to."""
    p.add_argument("--records", required=True, help="JSON-lines record file (resumable)")


def _audit_flags(p: argparse.ArgumentParser) -> None:
    """Pipeline 1's options: reruns per tree and the assertion recorder."""
    p.add_argument("--reruns", type=_positive(int), default=5, help="runs per tree (default: 5)")
    p.add_argument("--no-binding", action="store_true", help="skip the assertion recorder")


def _judge_flags(p: argparse.ArgumentParser) -> None:
    """Pipeline 2's options: which judge, its timeout and retries."""
    p.add_argument(
        "--judge",
        default="offline",
        choices=["offline", "llm"],
        help="offline: no model; llm: SWE_CURATE_JUDGE_BASE_URL / _MODEL / _API_KEY",
    )
    p.add_argument(
        "--judge-timeout",
        type=_positive(float),
        default=120.0,
        help="seconds per judge request (default: 120)",
    )
    p.add_argument(
        "--judge-retries",
        type=_non_negative_int,
        default=3,
        help="extra attempts per judge request (default: 3)",
    )


def _add_run(sub: _Sub) -> None:
    run = sub.add_parser("run", help="every stage for a batch: audit, judge, strengthen")
    _common(run)
    run.add_argument(
        "--out", required=True, help="directory for records.jsonl, kept.jsonl, dropped.jsonl"
    )
    run.add_argument(
        "--workers",
        type=_positive(int),
        default=1,
        help="tasks in parallel, one pooled sandbox each (default: 1)",
    )
    run.add_argument(
        "--force",
        nargs="+",
        action="extend",
        metavar="ID",
        help="re-process these instance ids from scratch (others already finished are skipped)",
    )
    _audit_flags(run)
    _judge_flags(run)
    run.set_defaults(func=cmd_run)


def _add_stages(sub: _Sub) -> None:
    audit = sub.add_parser("audit", help="Pipeline 1: execution-only audit")
    _common(audit)
    _records(audit)
    _audit_flags(audit)
    audit.set_defaults(func=cmd_audit)

    judge = sub.add_parser("judge", help="Pipeline 2: counterfactual judge")
    _common(judge)
    _records(judge)
    _judge_flags(judge)
    judge.set_defaults(func=cmd_judge)

    strengthen = sub.add_parser("strengthen", help="repair too_loose suites")
    _common(strengthen)
    _records(strengthen)
    strengthen.add_argument("--deck", help="append strengthened task rows here")
    strengthen.set_defaults(func=cmd_strengthen)


def _add_inject(sub: _Sub) -> None:
    inj = sub.add_parser("inject", help="build a deck by bug injection")
    inj.add_argument("source", help="a repository directory or an sdist tarball")
    _common(inj, tasks=False)
    _records(inj)
    inj.add_argument("--deck", required=True, help="append injected task rows here")
    inj.add_argument("--trees", help="where mutated trees go (default: <deck>.trees)")
    inj.add_argument("--name", help="instance id prefix (default: the folder name)")
    inj.add_argument("--max-candidates", type=_positive(int), default=30, help="mutants graded")
    inj.add_argument("--max-tasks", type=_positive(int), default=10, help="injected tasks kept")
    inj.add_argument("--seed", type=int, default=0, help="sampling seed (default: 0)")
    inj.add_argument(
        "--environment",
        metavar="IMAGE",
        default=None,
        help="Docker image the tests run in (e.g. from `swe-sandbox image build-env`);\n"
        "every injected task carries it (default: the swe-sandbox base)",
    )
    inj.set_defaults(func=cmd_inject)


def _add_summary(sub: _Sub) -> None:
    summary = sub.add_parser("summary", help="verdict table of a record file")
    summary.add_argument("--records", required=True, help="JSON-lines record file")
    summary.add_argument("--stage", help="only this stage (default: every stage)")
    summary.set_defaults(func=cmd_summary)


def _non_negative_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {text}")
    return value


def _error(exc: BaseException, code: int) -> int:
    message = " ".join(str(exc).split()) or type(exc).__name__
    sys.stderr.write(f"swe-curate: error: {message}\n")
    return code


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``swe-curate`` command: exit 0 success, 2 a usage error (bad
    arguments, an unusable input file), 1 a runtime failure, 130 Ctrl-C."""
    args = build_parser().parse_args(argv)
    console = Console(stderr=False)
    try:
        code: int = args.func(args, console)
    except UsageError as exc:
        return _error(exc, USAGE_EXIT)
    except (CurateError, SandboxError, OSError, UnicodeError, ValueError) as exc:
        return _error(exc, FAILURE_EXIT)
    except KeyboardInterrupt:
        sys.stderr.write("swe-curate: interrupted; finished records are kept, rerun to resume\n")
        return 130
    return code


if __name__ == "__main__":
    sys.exit(main())
