"""``swe-curate audit|judge|strengthen|inject|summary``: the pipelines over files of task rows.

Every stage appends to one JSON-lines record file (``--records``) and skips the tasks it has
already judged there, so an interrupted run resumes where it stopped. Bad rows, patches that do
not apply, judge and sandbox failures become rejection records; the run carries on.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from swe_curate._audit import AuditConfig, audit_task
from swe_curate._chat import ChatClient, ChatConfig
from swe_curate._errors import CurateError
from swe_curate._importers import ImportedRow, RowFormat, import_rows
from swe_curate._inject import InjectConfig, inject, unpack_source
from swe_curate._judge import Judge, OfflineJudge
from swe_curate._judging import judge_task
from swe_curate._llm_judge import LLMJudge
from swe_curate._records import RecordStore, TaskRecord, summarize
from swe_curate._scorer import SandboxScorer
from swe_curate._strengthen import strengthen_task
from swe_curate._verdicts import Verdict
from swe_sandbox import Backend, DockerBackend, Limits, NamespaceBackend, SandboxError, TaskSpec


def summary_table(records: Sequence[TaskRecord], title: str) -> Table:
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
    return DockerBackend() if name == "docker" else NamespaceBackend()


def _scorer(args: argparse.Namespace) -> SandboxScorer:
    # Mutants can loop forever (an inverted `while`): bound every graded run.
    limits = Limits(grade_timeout_s=args.grade_timeout, exec_timeout_s=args.grade_timeout)
    return SandboxScorer(_backend(args.backend), limits)


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
    work: Callable[[TaskSpec], TaskRecord | None],
    wanted: Callable[[str], bool] = lambda instance_id: True,
) -> list[TaskRecord]:
    done = store.done(stage)
    pending = [row for row in rows if row.instance_id not in done and wanted(row.instance_id)]
    console.print(f"{stage}: {len(done)} task(s) already judged, {len(pending)} to go")
    with _progress(console) as progress:
        bar = progress.add_task(stage, total=len(pending), last="")
        for row in pending:
            if row.task is None:
                record: TaskRecord | None = TaskRecord(
                    row.instance_id, stage, Verdict.MALFORMED_ROW, row.error
                )
            else:
                try:
                    record = work(row.task)
                except CurateError as exc:  # a stage never stops the run for one task
                    record = TaskRecord(row.instance_id, stage, Verdict.SANDBOX_ERROR, str(exc))
            if record is not None:
                store.append(record)
                progress.update(bar, last=f"{record.instance_id}: {record.verdict.value}")
            progress.advance(bar)
    records = store.records(stage)
    console.print(summary_table(records, f"{stage} — {store.path.name}"))
    return records


def _judge_from(args: argparse.Namespace) -> Judge:
    if args.judge == "llm":
        config = ChatConfig.from_env(timeout_s=args.judge_timeout, max_retries=args.judge_retries)
        return LLMJudge(ChatClient(config))
    return OfflineJudge()


def cmd_audit(args: argparse.Namespace, console: Console) -> int:
    store = RecordStore(args.records)
    config = AuditConfig(reruns=args.reruns, binding=not args.no_binding)
    with _scorer(args) as scorer:
        _run_stage(
            console,
            store,
            "audit",
            import_rows(args.tasks, RowFormat(args.format)),
            lambda t: audit_task(t, scorer, config),
        )
    return 0


def cmd_judge(args: argparse.Namespace, console: Console) -> int:
    store = RecordStore(args.records)
    audits = store.latest("audit")
    judge = _judge_from(args)

    def work(task: TaskSpec) -> TaskRecord | None:
        return judge_task(task, scorer, judge, audits.get(task.instance_id))

    def wanted(instance_id: str) -> bool:
        # Pipeline 2 judges what Pipeline 1 admitted (or everything, when no audit was run).
        audit = audits.get(instance_id)
        return audit is None or audit.verdict is Verdict.ADMITTED

    rows = import_rows(args.tasks, RowFormat(args.format))
    with _scorer(args) as scorer:
        _run_stage(console, store, "judge", rows, work, wanted)
    return 0


def cmd_strengthen(args: argparse.Namespace, console: Console) -> int:
    store = RecordStore(args.records)
    judged, audits = store.latest("judge"), store.latest("audit")
    deck = Path(args.deck) if args.deck else None

    def work(task: TaskSpec) -> TaskRecord | None:
        verdict = judged.get(task.instance_id)
        if verdict is None or verdict.verdict is not Verdict.TOO_LOOSE:
            return None
        record = strengthen_task(task, scorer, verdict, audits.get(task.instance_id))
        if deck is not None and record.verdict is Verdict.STRENGTHENED:
            _append_row(deck, record.measurements["task"])
        return record

    with _scorer(args) as scorer:
        _run_stage(
            console, store, "strengthen", import_rows(args.tasks, RowFormat(args.format)), work
        )
    return 0


def cmd_inject(args: argparse.Namespace, console: Console) -> int:
    store = RecordStore(args.records)
    source = Path(args.source)
    trees = Path(args.trees) if args.trees else Path(args.deck).with_suffix(".trees")
    name = args.name
    if source.is_file():
        name = name or re.sub(r"(\.tar)?\.(gz|tgz|bz2|xz|tar)$", "", source.name)
        source = unpack_source(source, trees / "_source")
    config = InjectConfig(
        max_candidates=args.max_candidates, max_tasks=args.max_tasks, seed=args.seed
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


def cmd_summary(args: argparse.Namespace, console: Console) -> int:
    store = RecordStore(args.records)
    stages = [args.stage] if args.stage else sorted({r.stage for r in store})
    for stage in stages:
        console.print(summary_table(store.records(stage), f"{stage} — {store.path.name}"))
    return 0


def _append_row(path: Path, row: dict[str, object]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as handle:
        handle.write(json.dumps(row, sort_keys=True) + "\n")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="swe-curate", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    def common(p: argparse.ArgumentParser, tasks: bool = True) -> None:
        if tasks:
            p.add_argument("tasks", help="task rows: .jsonl, .json or .parquet")
            p.add_argument("--format", default="auto", choices=[f.value for f in RowFormat])
        p.add_argument("--records", required=True, help="JSON-lines record file (resumable)")
        p.add_argument("--backend", default="namespace", choices=["namespace", "docker"])
        p.add_argument(
            "--grade-timeout", type=float, default=120.0, help="seconds per graded run or probe"
        )

    audit = sub.add_parser("audit", help="Pipeline 1: execution-only audit")
    common(audit)
    audit.add_argument("--reruns", type=int, default=5)
    audit.add_argument("--no-binding", action="store_true", help="skip the assertion recorder")
    audit.set_defaults(func=cmd_audit)

    judge = sub.add_parser("judge", help="Pipeline 2: counterfactual judge")
    common(judge)
    judge.add_argument("--judge", default="offline", choices=["offline", "llm"])
    judge.add_argument("--judge-timeout", type=float, default=120.0, help="seconds per request")
    judge.add_argument("--judge-retries", type=int, default=3, help="extra attempts per request")
    judge.set_defaults(func=cmd_judge)

    strengthen = sub.add_parser("strengthen", help="repair too_loose suites")
    common(strengthen)
    strengthen.add_argument("--deck", help="append strengthened task rows here")
    strengthen.set_defaults(func=cmd_strengthen)

    inj = sub.add_parser("inject", help="build a deck by bug injection")
    inj.add_argument("source", help="a repository directory or an sdist tarball")
    common(inj, tasks=False)
    inj.add_argument("--deck", required=True, help="append injected task rows here")
    inj.add_argument("--trees", help="where mutated trees go (default: <deck>.trees)")
    inj.add_argument("--name", help="instance id prefix (default: the folder name)")
    inj.add_argument("--max-candidates", type=int, default=30)
    inj.add_argument("--max-tasks", type=int, default=10)
    inj.add_argument("--seed", type=int, default=0)
    inj.set_defaults(func=cmd_inject)

    summary = sub.add_parser("summary", help="verdict table of a record file")
    summary.add_argument("--records", required=True)
    summary.add_argument("--stage")
    summary.set_defaults(func=cmd_summary)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``swe-curate`` command."""
    args = build_parser().parse_args(argv)
    console = Console(stderr=False)
    try:
        code: int = args.func(args, console)
    except (CurateError, SandboxError, OSError) as exc:
        console.print(f"[red]error:[/red] {exc}")
        return 2
    return code


if __name__ == "__main__":
    sys.exit(main())
