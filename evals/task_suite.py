"""The bug-fix task suite: each task is a small buggy project, a failing test and its gold fix."""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import BaseModel, Field, ValidationError, field_validator

from deltaserve.errors import TaskError

TASKS_DIR = Path(__file__).parent / "tasks"


class TaskSpec(BaseModel):
    """Metadata of one task, read from `evals/tasks/<id>/task.json`."""

    id: str = Field(pattern=r"^[a-z0-9][a-z0-9_-]*$")
    description: str = Field(min_length=10, description="The bug as a user would report it.")
    test_command: str = "python -m pytest -q"
    failing_tests: list[str] = Field(min_length=1, description="pytest ids that fail before the gold fix.")
    gold_patch: str = "gold.diff"
    tags: list[str] = Field(default_factory=list, description="bug kind: off-by-one, wrong-operator, ...")

    model_config = {"extra": "forbid"}

    @field_validator("description")
    @classmethod
    def _strip(cls, value: str) -> str:
        return value.strip()


class Task(BaseModel):
    spec: TaskSpec
    root: Path

    @property
    def id(self) -> str:
        return self.spec.id

    @property
    def repo_dir(self) -> Path:
        return self.root / "repo"

    @property
    def gold_diff(self) -> str:
        return (self.root / self.spec.gold_patch).read_text()


def _validation_message(path: Path, exc: ValidationError) -> str:
    """Each bad field of task.json by name, with pydantic's reason."""
    problems = []
    for err in exc.errors():
        where = ".".join(str(part) for part in err["loc"]) or "(top level)"
        problems.append(f"field {where!r}: {err['msg']}")
    return f"{path}: " + "; ".join(problems)


def load_spec(path: Path) -> TaskSpec:
    """A task.json, validated; TaskError naming the file and each bad field."""
    try:
        data = json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise TaskError(f"{path}: not valid JSON ({exc})") from None
    try:
        return TaskSpec.model_validate(data)
    except ValidationError as exc:
        raise TaskError(_validation_message(path, exc)) from None


def load_task(task_dir: Path) -> Task:
    spec = load_spec(task_dir / "task.json")
    if spec.id != task_dir.name:
        raise TaskError(f"{task_dir / 'task.json'}: field 'id': {spec.id!r} does not match its directory "
                        f"name {task_dir.name!r}")
    if not (task_dir / "repo").is_dir():
        raise TaskError(f"{task_dir}: no repo/ folder (the buggy project the task runs in)")
    if not (task_dir / spec.gold_patch).is_file():
        raise TaskError(f"{task_dir / 'task.json'}: field 'gold_patch': {spec.gold_patch!r} is not a file "
                        f"in {task_dir}")
    return Task(spec=spec, root=task_dir)


def load_tasks(tasks_dir: Path | None = None, ids: list[str] | None = None) -> list[Task]:
    """All tasks in `tasks_dir` (default: evals/tasks), sorted by id; `ids` selects (and orders) a subset."""
    tasks_dir = tasks_dir or TASKS_DIR
    if not tasks_dir.is_dir():
        raise TaskError(f"{tasks_dir}: not a directory of tasks (each a folder with task.json)")
    tasks = {d.name: load_task(d) for d in sorted(tasks_dir.iterdir()) if (d / "task.json").is_file()}
    if ids is None:
        return list(tasks.values())
    missing = [i for i in ids if i not in tasks]
    if missing:
        raise TaskError(f"unknown task ids {missing}; known: {sorted(tasks)}")
    return [tasks[i] for i in ids]
