"""The Spark checkpoint directory without Spark: block files and their digests, and every bad
--checkpoint/--resume refused in one line (exit 2) before a JVM starts."""

from __future__ import annotations

import dataclasses
import json
import os

import numpy as np
import pytest

pytest.importorskip("pyspark")

from kafkamc.checker import spark_checkpoint as ck  # noqa: E402
from kafkamc.cli import main  # noqa: E402
from kafkamc.spec.registry import build_spec, select_properties  # noqa: E402


def test_block_files_round_trip_and_are_named_by_their_digest(tmp_path):
    visited = np.array([-5, 3, 1 << 62], dtype=np.int64)
    name = ck.write_block(str(tmp_path), 4, 1, visited, b"frontier", 2)
    assert name.startswith("part-00001-")
    back, packed, count = ck.read_block(str(tmp_path), 4, name)
    assert back.tolist() == visited.tolist() and packed == b"frontier" and count == 2
    # Another attempt of the same task with the same block writes the same file, beside nothing else.
    assert ck.write_block(str(tmp_path), 4, 1, visited, b"frontier", 2) == name
    assert sorted(os.listdir(tmp_path / "level-4")) == [name]
    path = tmp_path / "level-4" / name
    data = bytearray(path.read_bytes())
    data[-1] ^= 1
    path.write_bytes(bytes(data))
    with pytest.raises(ValueError, match="does not match its checksum"):
        ck.read_block(str(tmp_path), 4, name)


def recorded_checkpoint(root, **changes):
    """A checkpoint of ``replication`` after level 0 (one initial state in partition 0 of 2), as
    the engine records it, with ``changes`` to its identity."""
    spec = build_spec("replication", [])
    props = select_properties(type(spec), [])
    init = spec.initial()[0]
    identity = ck.spec_identity(spec, "replication", props, type(init), symmetry=False, deadlock=False,
                                max_depth=None, max_states=None)
    identity = dataclasses.replace(identity, **changes)
    names = [ck.write_block(str(root), 0, j, np.zeros(j, dtype=np.int64), b"", 0) for j in range(2)]
    ck.save(str(root), identity, ck.LevelState(
        level=0, partitions=2, blocks=tuple(names), distinct=1, generated=1, depth=1, frontier=1,
        coverage=((0,), (0,), (0,)), plain_codec=True, levels=()))
    return names


def resume(root, *extra):
    return main(["check", "--resume", str(root), *extra])


def test_resume_refuses_other_options_a_changed_spec_and_damage(tmp_path, capsys):
    root = tmp_path / "ckpt"
    names = recorded_checkpoint(root, source="0" * 64)
    assert resume(root, "-p", "replicas=3") == 2
    assert "-p cannot be given with it" in capsys.readouterr().err
    assert main(["check", "replication", "--resume", str(root)]) == 2
    assert "SPEC cannot be given" in capsys.readouterr().err
    assert resume(root) == 2
    err = capsys.readouterr().err
    assert "the source of spec replication changed" in err and len(err.strip().splitlines()) == 1

    root2 = tmp_path / "other"
    recorded_checkpoint(root2, params=(("replicas", 3),))
    assert resume(root2) == 2
    assert "params was" in capsys.readouterr().err

    root3 = tmp_path / "damaged"
    names = recorded_checkpoint(root3)
    (root3 / "level-0" / names[1]).write_bytes(b"x")
    assert resume(root3) == 2
    assert "is damaged: block 1 of level 0" in capsys.readouterr().err
    (root3 / ck.STATE_FILE).write_text("{")
    assert resume(root3) == 2
    assert "is damaged" in capsys.readouterr().err
    assert resume(tmp_path / "empty") == 2
    assert "holds no kafkamc Spark checkpoint" in capsys.readouterr().err
    assert resume(root3, "--partitions", "3") == 2  # damaged before anything else is looked at
    capsys.readouterr()


def test_checkpoint_options_refused(tmp_path, capsys):
    root = tmp_path / "ckpt"
    recorded_checkpoint(root)
    assert main(["check", "replication", "--engine", "spark", "--checkpoint", str(root)]) == 2
    assert "already holds a checkpoint" in capsys.readouterr().err
    assert main(["check", "replication", "--checkpoint", str(tmp_path / "new")]) == 2
    assert "only to --engine spark" in capsys.readouterr().err
    assert main(["check"]) == 2
    assert "or --resume DIR" in capsys.readouterr().err
    assert resume(root, "--partitions", "3") == 2
    assert "has 2 partitions" in capsys.readouterr().err
    with open(root / ck.STATE_FILE) as fh:
        assert json.load(fh)["identity"]["spec"] == "replication"
