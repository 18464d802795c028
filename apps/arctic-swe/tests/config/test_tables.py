"""The one loading mechanism of the app's config files: typed coercion, unknown sections and
keys, and errors that name the file, the key and (for a loader's own class) the type."""

from __future__ import annotations

from pathlib import Path

import attrs
import pytest

from arctic_swe.config import (
    RunConfigError,
    check_sections,
    coerce,
    config_errors,
    load_toml,
    read_toml,
    split_known,
    update_record,
)


@attrs.frozen
class Record:
    count: int = 1
    rate: float = 0.5
    on: bool = False
    name: str = ""
    devices: tuple[int, ...] = ()


class OwnError(RunConfigError):
    """A loader's own error class."""


@pytest.mark.parametrize(
    ("kind", "value", "message"),
    [
        (int, 1.5, "must be int, got 1.5"),
        (int, True, "must be int, got True"),
        (int, "1", "must be int, got '1'"),
        (bool, 1, "must be bool, got 1"),
        (float, "0.5", "must be float, got '0.5'"),
        (tuple[int, ...], [1, False], "must be a list of integers, got [1, False]"),
        (tuple[str, ...], "http://a", "must be a list of strings, got 'http://a'"),
    ],
)
def test_coercion_refuses_every_silent_conversion(
    kind: object, value: object, message: str
) -> None:
    with pytest.raises(RunConfigError) as caught:
        coerce("s.k", kind, value)
    assert (caught.value.key, caught.value.detail) == ("s.k", message)


def test_coercion_widens_ints_to_floats_and_lists_to_tuples() -> None:
    widened = coerce("k", float, 2)
    assert widened == 2.0
    assert isinstance(widened, float)
    assert coerce("k", tuple[int, ...], [0, 1]) == (0, 1)


def test_update_record_applies_coerced_values_and_lists_the_fields_of_an_unknown_key() -> None:
    assert update_record("s", Record(), {"rate": 1, "devices": [3]}) == Record(
        rate=1.0, devices=(3,)
    )
    with pytest.raises(RunConfigError) as caught:
        update_record("s", Record(), {"cuont": 2})
    assert caught.value.key == "s.cuont"
    assert (
        caught.value.detail
        == "unknown key; expected one of ['count', 'devices', 'name', 'on', 'rate']"
    )


def test_split_known_keeps_the_rest_for_another_record() -> None:
    assert split_known(Record, {"count": 2, "lr": 0.1}) == ({"count": 2}, {"lr": 0.1})


def test_sections_must_be_known_tables() -> None:
    check_sections({"a": {}}, ["a", "b"])
    with pytest.raises(RunConfigError, match=r"^c: unknown section; expected one of \['a', 'b'\]"):
        check_sections({"c": {}}, ["a", "b"])
    with pytest.raises(RunConfigError, match=r"^a: must be a table, got int"):
        check_sections({"a": 3}, ["a"])
    with pytest.raises(RunConfigError, match=r"^config: must be a table, got list"):
        check_sections([], ["a"])


def test_config_errors_adds_the_file_and_the_loaders_class_once() -> None:
    def load() -> None:
        with (
            config_errors(OwnError, source="outer.toml"),
            config_errors(OwnError, source="inner.toml"),
        ):
            update_record("s", Record(), {"count": "x"})

    with pytest.raises(OwnError) as caught:
        load()
    assert caught.value.source == "inner.toml"  # the innermost file is where the key is
    assert str(caught.value) == "inner.toml: s.count: must be int, got 'x'"
    assert isinstance(caught.value.__cause__, RunConfigError)


def test_unreadable_files_name_themselves_once(tmp_path: Path) -> None:
    missing = tmp_path / "missing.toml"

    def load() -> None:
        with config_errors(OwnError, source=missing):
            read_toml(missing)

    with pytest.raises(OwnError) as caught:
        load()
    assert caught.value.key == "config"
    assert str(caught.value) == f"config: cannot read {missing}: No such file or directory"


def test_run_config_file_errors_name_the_file_and_the_key(tmp_path: Path) -> None:
    path = tmp_path / "run.toml"
    path.write_text("[run]\nupdatse = 3\n")
    with pytest.raises(RunConfigError) as caught:
        load_toml(path)
    assert (caught.value.key, caught.value.source) == ("run.updatse", str(path))
    assert str(caught.value).startswith(f"{path}: run.updatse: unknown key; expected one of [")
    path.write_text("preset = 3\n")
    with pytest.raises(RunConfigError, match=rf"^{path}: preset: must be a string, got 3$"):
        load_toml(path)
