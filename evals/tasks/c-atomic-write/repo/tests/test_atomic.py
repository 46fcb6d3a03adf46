import json
import os

import pytest

from safefile import atomic_write_text, atomic_writer, read_json, update_json
from safefile.atomic import leftover_temp_files, lock_path


class Boom(Exception):
    pass


def test_write_and_replace(tmp_path):
    target = tmp_path / "notes.txt"
    atomic_write_text(target, "one")
    atomic_write_text(target, "two")
    assert target.read_text() == "two"
    assert leftover_temp_files(tmp_path) == []


def test_file_mode_is_kept(tmp_path):
    target = tmp_path / "script.sh"
    target.write_text("old")
    os.chmod(target, 0o750)
    atomic_write_text(target, "new")
    assert target.stat().st_mode & 0o777 == 0o750


def test_failed_write_leaves_the_target_and_no_temp_file(tmp_path):
    target = tmp_path / "notes.txt"
    target.write_text("original")
    with pytest.raises(Boom):
        with atomic_writer(target) as handle:
            handle.write("half of the new con")
            raise Boom()
    assert target.read_text() == "original"
    assert leftover_temp_files(tmp_path) == []


def test_binary_mode_and_bad_mode(tmp_path):
    with atomic_writer(tmp_path / "b.bin", "wb") as handle:
        handle.write(b"\x00\x01")
    assert (tmp_path / "b.bin").read_bytes() == b"\x00\x01"
    with pytest.raises(ValueError):
        with atomic_writer(tmp_path / "c", "a"):
            pass


def test_read_json_default_and_corrupt(tmp_path):
    assert read_json(tmp_path / "missing.json", {"n": 0}) == {"n": 0}
    (tmp_path / "bad.json").write_text("{")
    with pytest.raises(json.JSONDecodeError):
        read_json(tmp_path / "bad.json")


def test_update_json_read_modify_write(tmp_path):
    target = tmp_path / "counter.json"
    for _ in range(3):
        update_json(target, lambda d: {"n": d["n"] + 1}, default={"n": 0})
    assert read_json(target) == {"n": 3}
    assert not lock_path(target).exists()


def test_update_json_that_fails_can_be_retried(tmp_path):
    target = tmp_path / "counter.json"
    update_json(target, lambda d: {"n": 1}, default={})

    def broken(data):
        raise Boom()

    with pytest.raises(Boom):
        update_json(target, broken, timeout=0)
    assert update_json(target, lambda d: {"n": d["n"] + 1}, timeout=0) == {"n": 2}


def test_unserializable_update_keeps_the_old_file(tmp_path):
    target = tmp_path / "state.json"
    update_json(target, lambda d: {"ok": True}, default={})
    with pytest.raises(TypeError):
        update_json(target, lambda d: {"when": object()}, timeout=0)
    assert read_json(target) == {"ok": True}
    assert leftover_temp_files(tmp_path) == []
    assert not lock_path(target).exists()
