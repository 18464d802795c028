"""Execution audits, counterfactual judging, test strengthening and deck building for SWE RL tasks.

Arctic-SWE §4 (data curation): Pipeline 1 (``audit_task``), Pipeline 2 (``judge_task`` with an
``OfflineJudge`` or an ``LLMJudge``), test strengthening (``strengthen_task``), the whole batch
pipeline (``run_pipeline``, ``swe-curate run``), importers for SWE-bench / SWE-rebench / R2E-Gym
rows and deck building by bug injection (``inject``). Tasks are ``swe_sandbox.TaskSpec``; the
scorer is swe-sandbox's grader, exactly as training uses it.
"""

from swe_curate._audit import STAGE as AUDIT_STAGE
from swe_curate._audit import AuditConfig, audit_task, binding_assertions
from swe_curate._chat import ChatClient, ChatConfig, ChatReply, ChatToolCall, TokenUsage
from swe_curate._correct import CORRECT_MUTATORS, correct_counterfactuals
from swe_curate._counterfactual import Counterfactual, Kind
from swe_curate._diff import apply_patch, make_patch, parse_patch, render_patch
from swe_curate._differential import ProbeCase, ProbeResult, candidate_cases, distinguishing
from swe_curate._errors import (
    CurateError,
    CuratePatchApplyError,
    JudgeError,
    JudgeGarbageError,
    JudgeTimeoutError,
    MalformedRowError,
    MissingRepoError,
    MissingTestCommandError,
    MutationError,
    PatchFormatError,
    ScorerError,
    TaskInputError,
)
from swe_curate._importers import (
    ImportedRow,
    RowFormat,
    import_rows,
    parse_row,
    read_rows,
    task_from_native_row,
    task_to_row,
)
from swe_curate._inject import InjectConfig, inject, unpack_source
from swe_curate._issue import IssueExample, issue_examples, named_functions
from swe_curate._judge import Finding, Judge, JudgeContext, OfflineJudge
from swe_curate._judging import JudgeConfig, judge_context, judge_task, task_after_audit
from swe_curate._leeway import rename_private_helpers, vary_messages
from swe_curate._llm_judge import LLMJudge
from swe_curate._pooled import PooledScorer, PoolRunner
from swe_curate._records import CurationRecord, RecordStore, summarize
from swe_curate._run import PipelineConfig, RunOutput, run_pipeline, stage_rates
from swe_curate._scorer import SandboxScorer, Scorer, TaskTree
from swe_curate._source import PatchedTree
from swe_curate._special_case import special_case_issue_examples
from swe_curate._strengthen import StrengthenConfig, strengthen_task
from swe_curate._verdicts import Verdict
from swe_curate._version import __version__
from swe_curate._wrong import WRONG_MUTATORS, wrong_counterfactuals

__all__ = [
    "AUDIT_STAGE",
    "CORRECT_MUTATORS",
    "WRONG_MUTATORS",
    "AuditConfig",
    "ChatClient",
    "ChatConfig",
    "ChatReply",
    "ChatToolCall",
    "Counterfactual",
    "CurateError",
    "CuratePatchApplyError",
    "CurationRecord",
    "Finding",
    "ImportedRow",
    "InjectConfig",
    "IssueExample",
    "Judge",
    "JudgeConfig",
    "JudgeContext",
    "JudgeError",
    "JudgeGarbageError",
    "JudgeTimeoutError",
    "Kind",
    "LLMJudge",
    "MalformedRowError",
    "MissingRepoError",
    "MissingTestCommandError",
    "MutationError",
    "OfflineJudge",
    "PatchFormatError",
    "PatchedTree",
    "PipelineConfig",
    "PoolRunner",
    "PooledScorer",
    "ProbeCase",
    "ProbeResult",
    "RecordStore",
    "RowFormat",
    "RunOutput",
    "SandboxScorer",
    "Scorer",
    "ScorerError",
    "StrengthenConfig",
    "TaskInputError",
    "TaskTree",
    "TokenUsage",
    "Verdict",
    "__version__",
    "apply_patch",
    "audit_task",
    "binding_assertions",
    "candidate_cases",
    "correct_counterfactuals",
    "distinguishing",
    "import_rows",
    "inject",
    "issue_examples",
    "judge_context",
    "judge_task",
    "make_patch",
    "named_functions",
    "parse_patch",
    "parse_row",
    "read_rows",
    "rename_private_helpers",
    "render_patch",
    "run_pipeline",
    "special_case_issue_examples",
    "stage_rates",
    "strengthen_task",
    "summarize",
    "task_after_audit",
    "task_from_native_row",
    "task_to_row",
    "unpack_source",
    "vary_messages",
    "wrong_counterfactuals",
]
