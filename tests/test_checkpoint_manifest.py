"""The checkpoint manifest: identity of the spec and runtime, checksums, refusals in one line."""

from __future__ import annotations

import json
import os

import pytest

from kafkamc.checker.manifest import (
    MANIFEST, FileEntry, Manifest, read_manifest, refuse_mismatch, runtime_identity, source_digests,
    spec_identity, verify_file, write_data_file, write_manifest,
)
from kafkamc.errors import UsageError
from kafkamc.spec.registry import build_spec


def _manifest(files: tuple[FileEntry, ...] = ()) -> Manifest:
    spec = build_spec("controller", ["brokers=2"])
    return Manifest(engine="local", spec=spec_identity(spec, "controller"), runtime=runtime_identity(),
                    options={"invariants": ["a"], "symmetry": False}, generation=3, level=5, files=files,
                    state={"generated": 12})


def test_identity_covers_spec_invariants_and_fingerprint_modules():
    sources = source_digests(build_spec("replication", []))
    assert {"kafkamc.spec.replication", "kafkamc.invariants.replication", "kafkamc.checker.fingerprint",
            "kafkamc.spec.api"} <= set(sources)
    assert not any(name.split(".")[0] in ("json", "typing", "dataclasses") for name in sources)
    assert all(len(digest) == 64 for digest in sources.values())


def test_round_trip(tmp_path):
    entry = write_data_file(str(tmp_path), "data.1.bin", lambda out: out.write(b"x" * 1000))
    assert entry.size == 1000
    m = _manifest((entry,))
    write_manifest(str(tmp_path), m)
    back = read_manifest(str(tmp_path))
    assert (back.spec, back.options, back.files, back.state, back.level) == (m.spec, m.options, m.files, m.state, 5)
    assert verify_file(str(tmp_path), back.files[0]).endswith("data.1.bin")
    assert sorted(os.listdir(tmp_path)) == ["data.1.bin", MANIFEST]  # no temporary file left


@pytest.mark.parametrize("damage", ["edit", "truncate", "not-json", "version", "missing"])
def test_damaged_manifest_is_refused_in_one_line(tmp_path, damage):
    write_manifest(str(tmp_path), _manifest())
    path = tmp_path / MANIFEST
    doc = json.loads(path.read_text())
    if damage == "edit":
        doc["level"] = 6
        path.write_text(json.dumps(doc))
    elif damage == "truncate":
        path.write_bytes(path.read_bytes()[:100])
    elif damage == "not-json":
        path.write_bytes(b"\x00\x01")
    elif damage == "version":
        doc["version"] = 99
        path.write_text(json.dumps(doc))
    else:
        path.unlink()
    with pytest.raises(UsageError) as err:
        read_manifest(str(tmp_path))
    assert "\n" not in str(err.value) and "allowed" in str(err.value)


@pytest.mark.parametrize("damage", ["flip", "truncate", "missing"])
def test_damaged_data_file_is_refused(tmp_path, damage):
    entry = write_data_file(str(tmp_path), "d.bin", lambda out: out.write(bytes(range(256)) * 8))
    path = tmp_path / "d.bin"
    if damage == "flip":
        raw = bytearray(path.read_bytes())
        raw[700] ^= 1
        path.write_bytes(bytes(raw))
    elif damage == "truncate":
        path.write_bytes(path.read_bytes()[:-1])
    else:
        path.unlink()
    with pytest.raises(UsageError, match="d.bin is (damaged|missing)"):
        verify_file(str(tmp_path), entry)


def test_a_name_outside_the_directory_is_refused(tmp_path):
    with pytest.raises(UsageError, match="not a file of the checkpoint"):
        verify_file(str(tmp_path), FileEntry("../etc/passwd", "0" * 64, 1))


def test_mismatch_names_the_field():
    with pytest.raises(UsageError, match=r"spec params brokers is 3 here but 2 in the checkpoint"):
        refuse_mismatch({"params": {"brokers": 2}}, {"params": {"brokers": 3}}, "spec")
    refuse_mismatch({"a": 1}, {"a": 1}, "x")
