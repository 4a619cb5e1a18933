"""Every task, by key, and the choice "auto" makes from the data."""

from __future__ import annotations

from dataclasses import fields
from typing import Any

from backend.errors import ConfigError, DataError
from backend.tasks.base import Role, Task
from backend.tasks.classification import Classification
from backend.tasks.multi_label import MultiLabel
from backend.tasks.regression import MANY_VALUES, Regression
from backend.tasks.token_classification import TokenClassification

AUTO = "auto"
__all__ = [
    "AUTO", "DEFAULT", "MANY_VALUES", "all_roles", "all_tasks", "framed", "get", "implied_by", "keys",
    "names_for", "of_manifest", "reader", "register", "resolve", "resolve_key",
]  # fmt: skip
# "auto" tries these in the order they are registered; the last one takes any column
_TASKS: list[Task] = []
DEFAULT = Classification.key


def register(task: Task) -> None:
    """Add a task; a key taken already, or "auto", fails here, at import, not at a user's run."""
    if task.key == AUTO:
        raise RuntimeError(f"a task cannot be named '{AUTO}': it means the choice from the data")
    if any(t.key == task.key for t in _TASKS):
        raise RuntimeError(f"task '{task.key}' registered twice")
    _TASKS.append(task)


for _task in (TokenClassification(), MultiLabel(), Regression(), Classification()):
    register(_task)


def keys() -> tuple[str, ...]:
    """The task keys in the order people meet them (the default first)."""
    return tuple(sorted((t.key for t in _TASKS), key=lambda k: k != DEFAULT))


def get(key: str | None) -> Task:
    """The task ``key`` names (None: the default, which every run before tasks existed had)."""
    for task in _TASKS:
        if task.key == (key or DEFAULT):
            return task
    raise ConfigError(f"unknown task '{key}'; choose one of: {AUTO}, {', '.join(keys())}")


def reader(text_cells: list[Any], label_cells: list[Any], named: Task | None = None) -> Task:
    """The task that reads a file whose text and label cells (a sample) are these: ``named`` (the
    run's task, at its settings) when it reads them (``Task.reads``), else the first whose kind of
    cells they are (``Task.holds``), at its defaults."""
    if named is not None and named.reads(text_cells, label_cells):
        return named
    return next(t for t in _TASKS if t.holds(text_cells, label_cells))


def resolve(key: str | None, names: list[str], numeric: bool, cells: str, source: str = "the data") -> Task:
    """The task ``key`` names, or for "auto" the first whose data the label column looks like.

    ``cells``: the kind of cells the file holds (``Task.cells`` of its reader). A task named for
    another kind is a DataError that says which kind the file holds.
    """
    if key in (AUTO, None, ""):
        return next(t for t in _TASKS if t.cells == cells and t.fits(names, numeric))
    task = get(key)
    if task.cells != cells:
        kinds = [t for t in _TASKS if t.cells == cells]
        raise DataError(
            f"{source} holds {cells}, which the task '{task.key}' cannot train on; choose "
            f"{' or '.join(repr(t.key) for t in kinds)} (or '{AUTO}')."
        )
    return task


def framed(df: Any, source: str, task: Task | None = None) -> Any:
    """A table as the tasks read it: ``task``'s ``frame`` at its settings, or every task's at its
    defaults (the data's task not known yet)."""
    for each in [task] if task is not None else all_tasks():
        df = each.frame(df, source)
    return df


def of_manifest(manifest: dict[str, Any]) -> Task:
    """A saved run's task with the settings it trained with (runs before task settings: none)."""
    return get(manifest.get("task")).configured(manifest.get("task_config"))


def all_tasks() -> tuple[Task, ...]:
    return tuple(get(k) for k in keys())


def all_roles() -> tuple[Role, ...]:
    """Every task's column roles, each key once, in the order people meet the tasks."""
    found: dict[str, Role] = {}
    for task in all_tasks():
        for role in task.roles:
            found.setdefault(role.key, role)
    return tuple(found.values())


def names_for(slot: str) -> tuple[str, ...]:
    """The column names that find a slot's column ("text", "text_pair", "label"), across the
    tasks' roles, in order of preference."""
    return tuple(dict.fromkeys(n for r in all_roles() if r.slot == slot for n in r.names))


def implied_by(options: list[str], settings: list[str] | None = None) -> str | None:
    """The task a run's chosen columns or task settings imply (a score column: regression): the
    one task that has the role of a given option, or a given setting, when only one has it;
    None when they say nothing."""
    for name in [*options, *(settings or [])]:
        owners = [
            t.key
            for t in all_tasks()
            if any(r.option == name for r in t.roles) or name in {f.name for f in fields(t.settings_cls)}
        ]
        if len(owners) == 1 and len(all_tasks()) > 1 and owners != [DEFAULT]:
            return owners[0]
    return None


def resolve_key(key: str | None, options: list[str], settings: list[str] | None = None) -> str:
    """The task a run's settings ask for: a column option or a task setting only one task has
    (``--score-column``, ``--tag-scheme``) means that task unless a task is named."""
    implied = implied_by(options, settings) if key in (AUTO, None, "") else None
    return implied or key or AUTO
