"""SWE-bench-format instances (JSONL) turned into task folders `deltaserve eval` runs: task.json, repo/ and
the gold patch, from local git clones (nothing is downloaded).

For each instance: find its clone under the repos dir (`<owner>__<name>` or `<name>`), check out
`base_commit` into a temporary git worktree, apply `test_patch` there with `git apply` (the tests that
fail before the fix), check that `patch` applies on top, and copy into the task's repo/:

  * the top-level entry (package dir or file) of every path `patch` or `test_patch` touches, so the code
    under test and the tests come with everything they import from their own package;
  * the pytest configuration at the root: conftest.py, pytest.ini, pyproject.toml, setup.cfg, tox.ini,
    setup.py (whichever exist).

The task's test command is pytest on the FAIL_TO_PASS + PASS_TO_PASS ids, its failing tests FAIL_TO_PASS
(pytest ids, as SWE-bench records them for pytest projects; accepted as JSON-encoded strings, as in the
published dataset, or as lists). A bad instance is reported and skipped; the others are still imported:
one that reaches outside (a repo that is not owner/name, a patch path outside the repository, a symbolic
link it adds to a path outside, evals/instance_checks.py), whose test command is too long to start, or
whose task id another instance of the file already has ('a/b' and 'a-b' are both 'a-b').
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import BaseModel, ValidationError, field_validator
from unidiff.errors import UnidiffParseError

from deltaserve.errors import InstanceImportError
from deltaserve.evals.gold_diff import touched_paths
from deltaserve.evals.instance_checks import check_command, check_links, check_paths, check_repo
from deltaserve.evals.progress import progress_bar
from deltaserve.evals.task_suite import TaskSpec
from deltaserve.tools.host_git import run_git

ROOT_CONFIG_FILES = ("conftest.py", "pytest.ini", "pyproject.toml", "setup.cfg", "tox.ini", "setup.py")
COPY_IGNORE = shutil.ignore_patterns(".git", "__pycache__", ".pytest_cache", "*.pyc")


class Instance(BaseModel):
    """The SWE-bench fields the import reads (others, e.g. created_at or version, are ignored)."""

    instance_id: str
    repo: str  # owner/name
    base_commit: str
    patch: str
    test_patch: str
    FAIL_TO_PASS: list[str]
    PASS_TO_PASS: list[str] = []
    problem_statement: str = ""

    @field_validator("FAIL_TO_PASS", "PASS_TO_PASS", mode="before")
    @classmethod
    def _json_list(cls, value):
        return json.loads(value) if isinstance(value, str) else value


@dataclass
class ImportResult:
    imported: list[str] = field(default_factory=list)  # task ids written
    problems: dict[str, str] = field(default_factory=dict)  # instance id (or line) -> why it was skipped


def task_id_for(instance_id: str) -> str:
    """A task id (lowercase letters, digits, '-', '_') for an instance id such as 'psf__requests-2317'."""
    return re.sub(r"[^a-z0-9_-]+", "-", instance_id.lower()).strip("-_") or "instance"


def find_clone(repos_dir: Path, repo: str) -> Path:
    owner, name = check_repo(repo)
    for candidate in (repos_dir / f"{owner}__{name}", repos_dir / name):
        if (candidate / ".git").exists():
            return candidate
    raise InstanceImportError(f"no git clone of {repo} under {repos_dir} (looked for {owner}__{name}/ and "
                              f"{name}/)")


def _git(cwd: Path, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    return run_git(cwd, *args, input=stdin)  # nothing the clone's config names runs (hooks, filters, ...)


def _apply(worktree: Path, diff: str, what: str, check_only: bool = False) -> None:
    args = ["apply", "--check"] if check_only else ["apply"]
    done = _git(worktree, *args, "-", stdin=diff)
    if done.returncode != 0:
        raise InstanceImportError(f"{what} does not apply at the base commit: {done.stderr.strip()}")


def files_to_copy(worktree: Path, diffs: list[str]) -> list[str]:
    """Top-level entries of every touched path that exist at the base commit, plus the root's pytest
    configuration files (see the module docstring)."""
    tops = []
    try:
        paths = [path for diff in diffs for path in touched_paths(diff)]
    except UnidiffParseError as exc:
        raise InstanceImportError(f"a patch is not a unified diff unidiff can read: {exc}") from None
    check_paths(paths)
    for path in paths:
        top = path.split("/", 1)[0]
        if top not in tops and os.path.lexists(worktree / top):
            tops.append(top)
    return tops + [f for f in ROOT_CONFIG_FILES if f not in tops and (worktree / f).is_file()]


def copy_entries(worktree: Path, entries: list[str], repo_out: Path) -> None:
    """Each entry into `repo_out`, links as links (never what they point at)."""
    repo_out.mkdir(parents=True)
    for entry in entries:
        source = worktree / entry
        if source.is_symlink():
            os.symlink(os.readlink(source), repo_out / entry)
        elif source.is_dir():
            shutil.copytree(source, repo_out / entry, ignore=COPY_IGNORE, symlinks=True)
        else:
            shutil.copy2(source, repo_out / entry)


def spec_for(instance: Instance, task_id: str) -> TaskSpec:
    ids = list(dict.fromkeys(instance.FAIL_TO_PASS + instance.PASS_TO_PASS))
    command = "python -m pytest -q " + " ".join(shlex.quote(i) for i in ids)
    check_command(command, len(ids))
    description = instance.problem_statement.strip() or f"SWE-bench instance {instance.instance_id}"
    try:
        return TaskSpec(id=task_id, description=description, test_command=command,
                        failing_tests=instance.FAIL_TO_PASS, tags=["swebench", instance.repo])
    except ValidationError as exc:
        fields = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        raise InstanceImportError(f"not a task ({fields})") from None


def import_instance(instance: Instance, repos_dir: Path, out_dir: Path) -> str:
    """Write one task folder under `out_dir` (replacing one of the same id); its task id."""
    if not instance.FAIL_TO_PASS:
        raise InstanceImportError("FAIL_TO_PASS is empty: no test shows the bug")
    task_id = task_id_for(instance.instance_id)
    spec = spec_for(instance, task_id)  # first: its checks need no clone
    check_links(instance.test_patch, "test_patch")
    check_links(instance.patch, "patch")
    clone = find_clone(repos_dir, instance.repo)
    if _git(clone, "rev-parse", "--verify", "--quiet", f"{instance.base_commit}^{{commit}}").returncode:
        raise InstanceImportError(f"commit {instance.base_commit} is not in the clone {clone}")
    with tempfile.TemporaryDirectory(prefix=f"swebench-{task_id}-") as tmp:
        worktree = Path(tmp) / "worktree"
        added = _git(clone, "worktree", "add", "--detach", str(worktree), instance.base_commit)
        if added.returncode:
            raise InstanceImportError(f"git worktree add failed in {clone}: {added.stderr.strip()}")
        try:
            _apply(worktree, instance.test_patch, "test_patch")
            _apply(worktree, instance.patch, "patch (after test_patch)", check_only=True)
            staged = Path(tmp) / task_id
            entries = files_to_copy(worktree, [instance.patch, instance.test_patch])
            try:
                copy_entries(worktree, entries, staged / "repo")
            except (OSError, shutil.Error) as exc:
                raise InstanceImportError(f"its files could not be copied: {exc}") from None
        finally:
            _git(clone, "worktree", "remove", "--force", str(worktree))
        (staged / spec.gold_patch).write_text(instance.patch)
        (staged / "task.json").write_text(spec.model_dump_json(indent=2) + "\n")
        target = out_dir / task_id
        if target.exists():
            shutil.rmtree(target)
        out_dir.mkdir(parents=True, exist_ok=True)
        shutil.move(str(staged), target)
    return task_id


def read_instances(path: Path) -> tuple[list[Instance], dict[str, str]]:
    """Instances of a JSONL file, and a problem per line that is not one (the line number as its key)."""
    instances, problems = [], {}
    for number, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip():
            continue
        try:
            instances.append(Instance.model_validate_json(line))
        except ValidationError as exc:
            fields = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'line'}: {e['msg']}" for e in exc.errors())
            problems[f"{path.name}:{number}"] = f"not a SWE-bench instance ({fields})"
    return instances, problems


def import_swebench(jsonl: Path, repos_dir: Path, out_dir: Path, progress: bool = True) -> ImportResult:
    instances, problems = read_instances(jsonl)
    result = ImportResult(problems=problems)
    owners: dict[str, str] = {}  # task id -> the instance that has it
    with progress_bar(progress) as bar:
        job = bar.add_task("import", total=len(instances))
        for instance in instances:
            bar.update(job, description=instance.instance_id)
            try:
                _claim(owners, instance.instance_id)
                result.imported.append(import_instance(instance, repos_dir, out_dir))
            except InstanceImportError as exc:
                result.problems[instance.instance_id] = exc.message
            bar.advance(job)
    return result


def _claim(owners: dict[str, str], instance_id: str) -> None:
    """Take the task id of `instance_id`, unless an earlier instance of the file has it (ids such as 'a/b'
    and 'a-b' map to one task id: the second would silently replace the first)."""
    task_id = task_id_for(instance_id)
    if task_id in owners:
        raise InstanceImportError(f"its task id {task_id!r} is that of instance {owners[task_id]!r} already")
    owners[task_id] = instance_id
