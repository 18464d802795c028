"""Run configuration (TOML with presets, ``--set`` overrides, validation) and the run directory."""

from arctic_swe.config._errors import RunConfigError, RunDirError
from arctic_swe.config._load import (
    PRESETS,
    apply_overrides,
    from_mapping,
    load_toml,
    preset,
    sections_to_toml,
    to_mapping,
    to_toml,
    validate,
)
from arctic_swe.config._run_end import (
    EndReason,
    RunEnd,
    clear_run_end,
    read_run_end,
    write_run_end,
)
from arctic_swe.config._rundir import RunDir, load_run_config, prepare_run_dir
from arctic_swe.config._schema import (
    PROCEDURAL_DECK,
    DeckSection,
    EngineSection,
    HarnessSection,
    MetricsSection,
    RunConfig,
    RunSection,
    SandboxSection,
    TrainerSection,
)

__all__ = [
    "PRESETS",
    "PROCEDURAL_DECK",
    "DeckSection",
    "EndReason",
    "EngineSection",
    "HarnessSection",
    "MetricsSection",
    "RunConfig",
    "RunConfigError",
    "RunDir",
    "RunDirError",
    "RunEnd",
    "RunSection",
    "SandboxSection",
    "TrainerSection",
    "apply_overrides",
    "clear_run_end",
    "from_mapping",
    "load_run_config",
    "load_toml",
    "prepare_run_dir",
    "preset",
    "read_run_end",
    "sections_to_toml",
    "to_mapping",
    "to_toml",
    "validate",
    "write_run_end",
]
