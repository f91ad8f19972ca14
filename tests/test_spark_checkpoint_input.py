"""The Spark engine's checkpoints without Spark: block files and their digests, and a bad
--checkpoint/--resume refused in one line (exit 2) before a JVM starts."""

from __future__ import annotations

import json
import os

import pytest

np = pytest.importorskip("numpy")
pytest.importorskip("pyspark")

from kafkamc.checker.manifest import MANIFEST, FileEntry, spec_identity  # noqa: E402
from kafkamc.checker.spark_checkpoint import LevelState, SparkCheckpointer, read_block, write_block  # noqa: E402
from kafkamc.cli import main  # noqa: E402
from kafkamc.spec.registry import build_spec, select_properties  # noqa: E402


def test_block_files_round_trip_and_are_named_by_their_digest(tmp_path):
    visited = np.array([-5, 3, 1 << 62], dtype=np.int64)
    name, sha, size = write_block(str(tmp_path), 4, 1, visited, b"frontier", 2)
    assert name == f"spark.4.1.{sha[:16]}.blk" and size == os.path.getsize(tmp_path / name)
    back, packed, count = read_block(str(tmp_path), name, sha)
    assert back.tolist() == visited.tolist() and packed == b"frontier" and count == 2
    # Another attempt of the same task writes the same file, and leaves nothing else behind.
    assert write_block(str(tmp_path), 4, 1, visited, b"frontier", 2) == (name, sha, size)
    assert os.listdir(tmp_path) == [name]
    data = bytearray((tmp_path / name).read_bytes())
    data[-1] ^= 1
    (tmp_path / name).write_bytes(bytes(data))
    with pytest.raises(ValueError, match="does not match its SHA-256"):
        read_block(str(tmp_path), name, sha)


def spark_checkpoint(root):
    """A checkpoint of ``replication`` after level 0 in 2 partitions, as the engine records it."""
    spec = build_spec("replication", [])
    props = select_properties(type(spec), [])
    options = {"properties": [pr.name for pr in props], "symmetry": False, "deadlock": False,
               "max_depth": None, "max_states": None}
    with SparkCheckpointer(str(root), spec_identity(spec, "replication"), options, 0.0) as ckpt:
        blocks = [FileEntry(*write_block(str(root), 0, j, np.zeros(j, dtype=np.int64), b"", 0)) for j in range(2)]
        ckpt.record(LevelState(level=0, partitions=2, distinct=1, generated=1, depth=1, frontier=1,
                               coverage=((0,), (0,), (0,)), plain_codec=True, levels=()), blocks)
    return blocks


def cli(capsys, *args):
    code = main(["check", *args])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("args, says", [
    (["--partitions", "3"], "the checkpoint in {root} has 2 partitions; allowed: 2, or no --partitions"),
    (["--engine", "local"], "a checkpoint of the spark engine, which goes on with it"),
    (["--workers", "2"], "--workers applies only to --engine local"),
    (["--checkpoint-every", "1"], "--checkpoint-every applies only to --engine local"),
    (["-p", "replicas=3"], "-p replicas=3 but the checkpoint has replicas=2"),
    (["damaged"], "data file spark.0.1."),
])
def test_resume_of_a_spark_checkpoint_refuses_in_one_line(tmp_path, capsys, args, says):
    root = tmp_path / "ckpt"
    blocks = spark_checkpoint(root)
    with open(root / MANIFEST) as fh:
        assert json.load(fh)["engine"] == "spark"
    if args == ["damaged"]:
        (root / blocks[1].name).write_bytes(b"\0" * blocks[1].size)
        args = []
    code, out, err = cli(capsys, "--resume", str(root), *args)
    assert code == 2 and out == "" and err.count("\n") == 1, err
    assert says.format(root=root) in err, err


def test_spark_checkpoint_options_refused(tmp_path, capsys):
    root = tmp_path / "ckpt"
    spark_checkpoint(root)
    code, _, err = cli(capsys, "replication", "--engine", "spark", "--checkpoint", str(root))
    assert code == 2 and "already holds a checkpoint" in err
    code, _, err = cli(capsys, "replication", "--engine", "spark", "--checkpoint", str(tmp_path / "new"),
                       "--checkpoint-every", "0")
    assert code == 2 and "--checkpoint-every applies only to --engine local" in err


def test_a_recorded_level_removes_other_levels_and_what_killed_runs_left(tmp_path):
    stale = [write_block(str(tmp_path), 7, 0, np.zeros(3, dtype=np.int64), b"", 0)[0],
             ".spark.8.1.0123456789abcdef.blk.k1lled.tmp", ".manifest.json.k1lled.tmp"]
    for name in stale[1:]:
        (tmp_path / name).write_bytes(b"half")
    (tmp_path / "notes.txt").write_text("not ours")
    blocks = spark_checkpoint(tmp_path)
    assert sorted(os.listdir(tmp_path)) == sorted([".lock", MANIFEST, "notes.txt"] + [b.name for b in blocks])
