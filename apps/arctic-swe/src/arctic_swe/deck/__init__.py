"""The embedded deck: procedurally generated Python repositories with one injected bug each,
as swe-sandbox ``TaskSpec`` s, validated by swe-curate's Pipeline 1 (ARCHITECTURE.md §4); and
imported decks of real tasks (dataset rows checked one by one, :func:`import_deck`)."""

from arctic_swe.deck._deck import (
    SPLITS,
    DeckConfig,
    DeckTask,
    StoredDeck,
    generate_tasks,
    load_deck,
    write_deck,
)
from arctic_swe.deck._errors import DeckConfigError, DeckFormatError, StoredDeckError
from arctic_swe.deck._functions import FunctionSpec, evaluate, inject_bug, make_function
from arctic_swe.deck._import import (
    IMPORT_FILE,
    TASKS_FILE,
    VALIDATIONS,
    ImportedTask,
    ImportOptions,
    import_deck,
    load_task_rows,
)
from arctic_swe.deck._repo import GeneratedTask, generate_task
from arctic_swe.deck._validate import AUDIT_FILE, ValidationReport, validate_deck

__all__ = [
    "AUDIT_FILE",
    "IMPORT_FILE",
    "SPLITS",
    "TASKS_FILE",
    "VALIDATIONS",
    "DeckConfig",
    "DeckConfigError",
    "DeckFormatError",
    "DeckTask",
    "FunctionSpec",
    "GeneratedTask",
    "ImportOptions",
    "ImportedTask",
    "StoredDeck",
    "StoredDeckError",
    "ValidationReport",
    "evaluate",
    "generate_task",
    "generate_tasks",
    "import_deck",
    "inject_bug",
    "load_deck",
    "load_task_rows",
    "make_function",
    "validate_deck",
    "write_deck",
]
