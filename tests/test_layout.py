"""The distribution's shape: one top-level name, every package folder installed, one error hierarchy."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import tomllib

from deltaserve.errors import DeltaserveError

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
PARTS = ["deltaserve.engine", "deltaserve.harness", "deltaserve.tools", "deltaserve.evals", "deltaserve.cli",
         "deltaserve.errors", "deltaserve.testing"]


def _package_dirs() -> dict[str, Path]:
    """Every package the source tree holds, by its installed name."""
    mapping = PYPROJECT["tool"]["setuptools"]["package-dir"]
    roots = {name: ROOT / folder for name, folder in mapping.items()}
    roots.update({name: ROOT / name.replace(".", "/") for name in PARTS if name not in roots})
    found = {}
    for name, folder in roots.items():
        for init in folder.rglob("__init__.py"):
            if "tasks" in init.relative_to(folder).parts:  # the eval tasks' own repos are data
                continue
            rel = init.parent.relative_to(folder).parts
            found[".".join((name, *rel))] = init.parent
    return found


def test_every_package_folder_is_listed_for_install():
    assert sorted(_package_dirs()) == sorted(PYPROJECT["tool"]["setuptools"]["packages"])


def _all_modules():
    for part in PARTS:
        package = importlib.import_module(part)
        yield package
        for info in pkgutil.walk_packages(package.__path__, prefix=part + "."):
            yield importlib.import_module(info.name)


def test_every_exception_class_derives_from_the_one_base():
    defined = {}
    for module in _all_modules():
        for name, obj in vars(module).items():
            if inspect.isclass(obj) and issubclass(obj, BaseException) and obj.__module__ == module.__name__:
                defined[f"{module.__name__}.{name}"] = obj
    assert defined, "no exception classes found at all"
    strays = [name for name, cls in defined.items() if not issubclass(cls, DeltaserveError)]
    assert not strays, f"exceptions outside the DeltaserveError hierarchy: {strays}"
    assert {cls.__module__ for cls in defined.values()} == {"deltaserve.errors"}, "errors live in one module"


@pytest.mark.skipif(importlib.util.find_spec("setuptools") is None, reason="setuptools is not installed")
def test_the_wheel_installs_exactly_one_top_level_package(tmp_path):
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w",
                    str(tmp_path), str(ROOT)], check=True, capture_output=True)
    (wheel,) = tmp_path.glob("deltaserve-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    tops = {name.split("/")[0] for name in names if not name.split("/")[0].endswith((".dist-info", ".data"))}
    assert tops == {"deltaserve"}
    assert "deltaserve/evals/tasks/a-median/task.json" in names  # the bundled suite travels with it
