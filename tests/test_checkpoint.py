"""Checkpoint and resume: a run stopped at any level and resumed (once or several times) ends with
exactly the counts, depth, verdict, trace and coverage of an uninterrupted run, on one process and
on several; refusals are one line and exit 2."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from kafkamc.checker.checkpoint import Checkpointer
from kafkamc.checker.local import explore
from kafkamc.checker.manifest import MANIFEST, read_manifest, spec_identity
from kafkamc.checker.multicore import explore_multicore
from kafkamc.checker.watch import Stopped
from kafkamc.cli import main
from kafkamc.result import INCOMPLETE
from kafkamc.spec.registry import build_spec, select_properties

TESTS = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(TESTS)
HOLDS = ("replication", {"replicas": 2, "model": "tla"})  # ok: 5,973 states, depth 18
FAILS = ("replication", {"replicas": 2, "truncation": "kip279"})  # strong-isr fails after 11 steps


def _engine(workers: int | str):
    if workers == 1:
        return lambda spec, props, **kw: explore(spec, props, **kw)
    if workers == "spill":
        # One process, every level's states in files (checker/frontier.py): the checkpoint reads
        # a level from its file before it is expanded, and again after a stop.
        return lambda spec, props, **kw: explore(spec, props, frontier_memory=1, **kw)
    if workers == "spill2":
        # Two workers, every level's frontier and pending successors in their files (shard.py).
        return lambda spec, props, **kw: explore_multicore(spec, props, workers=2, fork_threshold=100,
                                                           frontier_memory=1, **kw)
    # Fork as soon as a level has 100 states, so the workers hold most levels' frontier.
    return lambda spec, props, **kw: explore_multicore(spec, props, workers=workers, fork_threshold=100, **kw)


def _outcome(r):
    return (r.result, r.violated, r.distinct_states, r.states_generated, r.depth,
            None if r.trace is None else r.trace.path, r.coverage)


def _stop_after(level: int):
    def progress(stats):
        if not stats.within_level and stats.level == level:
            raise Stopped("interrupted")
    return progress


def _checkpointer(directory, ref, spec, props, resume: bool):
    manifest = read_manifest(str(directory)) if resume else None
    options = {"properties": [pr.name for pr in props]}
    return Checkpointer(str(directory), spec_identity(spec, ref), options, 0.0, manifest)


@pytest.mark.parametrize("model", [HOLDS, FAILS], ids=["holds", "fails"])
@pytest.mark.parametrize("workers", [1, 2, "spill", "spill2"])
def test_stopped_at_successive_levels_and_resumed_equals_uninterrupted(tmp_path, model, workers):
    ref, params = model
    spec = build_spec(ref, params)
    props = select_properties(type(spec), [])
    run = _engine(workers)
    whole = run(spec, props)
    # Stop after level 3, resume and stop after 7, resume and stop after 10, resume to the end:
    # each stop rolls back to the boundary saved before it (the level being reported is redone).
    for k, stop in enumerate((3, 7, 10, None)):
        with _checkpointer(tmp_path, ref, spec, props, resume=k > 0) as ckpt:
            r = run(spec, props, progress=None if stop is None else _stop_after(stop), checkpoint=ckpt)
            if stop is None:
                break
            assert (r.result, r.reason) == (INCOMPLETE, "interrupted")
            assert ckpt.failure is None and ckpt.saved is not None and ckpt.saved.depth == stop - 1
    assert _outcome(r) == _outcome(whole)


@pytest.mark.parametrize("workers", [1, 2, "spill", "spill2"])
def test_stopped_inside_a_level_and_resumed_equals_uninterrupted(tmp_path, workers):
    """Stopped from the progress timer (a signal handler, so at any bytecode of the engine) while
    level 4 is being expanded: the level is dropped, the workers set it aside, and the resumed run
    ends as an uninterrupted one."""
    ref = "toyspecs:Ladder"
    params = {"width": 400, "rungs": 6, "top": True}
    fast = build_spec(ref, params)
    props = select_properties(type(fast), ["rung-below-top"])
    whole = _engine(workers)(fast, props)
    assert whole.violated == "rung-below-top"
    spec = build_spec(ref, {**params, "delay_us": 1000})  # a level: 0.4 s of sleeps

    def stop_inside(stats):
        if stats.within_level and stats.level == 5:
            raise Stopped("interrupted")

    with _checkpointer(tmp_path, ref, spec, props, resume=False) as ckpt:
        r = _engine(workers)(spec, props, progress=stop_inside, progress_every=0.1, checkpoint=ckpt)
        assert (r.result, r.reason, ckpt.failure, ckpt.saved.depth) == (INCOMPLETE, "interrupted", None, 4)
    with _checkpointer(tmp_path, ref, spec, props, resume=True) as ckpt:
        assert _outcome(_engine(workers)(spec, props, checkpoint=ckpt)) == _outcome(whole)


def test_memory_guard_stop_is_checkpointed_and_resumed(tmp_path):
    """The memory guard (here: any memory at all is too much) stops the run like Ctrl-C: its
    checkpoint resumes, under a guard that lets it finish, to the uninterrupted result."""
    ref = "toyspecs:Ladder"
    params = {"width": 400, "rungs": 6, "top": True}
    props = select_properties(type(build_spec(ref, params)), ["rung-below-top"])
    whole = explore(build_spec(ref, params), props)
    spec = build_spec(ref, {**params, "delay_us": 1000})
    with _checkpointer(tmp_path, ref, spec, props, resume=False) as ckpt:
        r = explore(spec, props, max_memory=1, checkpoint=ckpt)
        assert (r.result, r.reason, ckpt.failure) == (INCOMPLETE, "max-memory", None) and ckpt.saved is not None
    with _checkpointer(tmp_path, ref, spec, props, resume=True) as ckpt:
        assert _outcome(explore(spec, props, checkpoint=ckpt)) == _outcome(whole)


def test_resume_on_another_number_of_workers(tmp_path):
    ref, params = HOLDS
    spec = build_spec(ref, params)
    props = select_properties(type(spec), [])
    whole = _engine(1)(spec, props)
    with _checkpointer(tmp_path, ref, spec, props, resume=False) as ckpt:
        _engine(2)(spec, props, progress=_stop_after(12), checkpoint=ckpt)
    assert len([f for f in os.listdir(tmp_path) if f.startswith("frontier.")]) == 2  # one per worker
    with _checkpointer(tmp_path, ref, spec, props, resume=True) as ckpt:
        assert _outcome(_engine(1)(spec, props, checkpoint=ckpt)) == _outcome(whole)


def _cli(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _json_outcome(out: str):
    doc = json.loads(out)
    return (doc["result"], doc["violated"], doc["distinct_states"], doc["states_generated"], doc["depth"],
            doc.get("path"), doc["coverage"])


def test_cli_finished_run_is_reported_again_on_resume(tmp_path, capsys):
    target = str(tmp_path / "ck")
    argv = ["check", "replication", "-p", "replicas=2", "-p", "truncation=kip279", "--json", "--workers", "1"]
    code, plain, _ = _cli(capsys, *argv)
    assert code == 1
    code, out, _ = _cli(capsys, *argv, "--checkpoint", target, "--checkpoint-every", "0")
    assert code == 1 and _json_outcome(out) == _json_outcome(plain)
    assert json.loads(out)["checkpoint"] == {"directory": target, "level": None, "distinct_states": None}
    assert os.listdir(target) == [MANIFEST] or sorted(os.listdir(target)) == [".lock", MANIFEST]
    code, again, _ = _cli(capsys, "check", "--resume", target, "--json")
    assert code == 1 and _json_outcome(again) == _json_outcome(plain)
    # The text rendering of the trace is the same too.
    code, text, _ = _cli(capsys, "check", "--resume", target)
    code2, text2, _ = _cli(capsys, *[a for a in argv if a != "--json"])
    assert text.split("\n", 3)[3] == text2.split("\n", 3)[3]


def _stopped_checkpoint(tmp_path, capsys) -> str:
    """A checkpoint of the holding model stopped after level 5 (through the engine's hook)."""
    target = str(tmp_path / "ck")
    ref, params = HOLDS
    spec = build_spec(ref, params)
    props = select_properties(type(spec), [])
    options = {"properties": [pr.name for pr in props], "symmetry": False, "deadlock": False,
               "max_depth": None, "max_states": None}
    with Checkpointer(target, spec_identity(spec, ref), options, 0.0) as ckpt:
        explore(spec, props, progress=_stop_after(5), checkpoint=ckpt)
    return target


@pytest.mark.parametrize("extra, says", [
    (["-p", "replicas=3"], "-p replicas=3 but the checkpoint has replicas=2"),
    (["-p", "nope=1"], "not a parameter of spec replication"),
    (["controller"], "the checkpoint is of spec replication, not controller"),
    (["-i", "weak-isr"], "-i selects weak-isr but the checkpoint checks strong-isr, weak-isr"),
    (["--symmetry"], "--symmetry was not used by the checkpointed run"),
    (["--max-depth", "3"], "--max-depth 3 but the checkpointed run had none"),
    (["--engine", "spark"], "a checkpoint of the local engine, which goes on with it"),
    (["-l", "follower-catches-up"], "-l/--liveness is not checkpointed"),
    (["--checkpoint", "/elsewhere"], "--resume DIR goes on writing its checkpoints in DIR"),
])
def test_resume_refuses_other_options_in_one_line(tmp_path, capsys, extra, says):
    target = _stopped_checkpoint(tmp_path, capsys)
    spec_first = [a for a in extra if not a.startswith("-") and extra.index(a) == 0]
    rest = [a for a in extra if a not in spec_first]
    code, out, err = _cli(capsys, "check", *spec_first, "--resume", target, *rest)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and says in err, err


def test_resume_accepts_the_same_options_and_free_ones(tmp_path, capsys):
    target = _stopped_checkpoint(tmp_path, capsys)
    code, plain, _ = _cli(capsys, "check", "replication", "-p", "replicas=2", "-p", "model=tla", "--json")
    code, out, _ = _cli(capsys, "check", "replication", "--resume", target, "-p", "model=tla", "-i", "strong-isr",
                        "-i", "weak-isr", "--workers", "2", "--json", "--max-memory", "none",
                        "--checkpoint-every", "0")
    assert code == 0 and _json_outcome(out) == _json_outcome(plain)


@pytest.mark.parametrize("damage", ["manifest", "visited", "frontier", "truncated"])
def test_damaged_checkpoint_is_refused(tmp_path, capsys, damage):
    target = _stopped_checkpoint(tmp_path, capsys)
    names = sorted(os.listdir(target))
    pick = {"manifest": MANIFEST, "visited": next(n for n in names if n.startswith("visited")),
            "frontier": next(n for n in names if n.startswith("frontier")),
            "truncated": next(n for n in names if n.startswith("frontier"))}[damage]
    path = os.path.join(target, pick)
    raw = bytearray(open(path, "rb").read())
    if damage == "truncated":
        raw = raw[: len(raw) // 2]
    else:
        raw[len(raw) // 2] ^= 0x20
    with open(path, "wb") as fh:
        fh.write(raw)
    code, out, err = _cli(capsys, "check", "--resume", target)
    assert code == 2 and out == "" and err.count("\n") == 1 and "damaged" in err, err


def test_another_spec_version_is_refused(tmp_path, capsys, monkeypatch):
    source = open(os.path.join(TESTS, "toyspecs.py")).read()
    module = tmp_path / "ckspec_v.py"
    module.write_text(source)
    monkeypatch.syspath_prepend(str(tmp_path))
    target = str(tmp_path / "ck")
    code, _, err = _cli(capsys, "check", "ckspec_v:Ladder", "-p", "width=50", "--checkpoint", target,
                        "--max-depth", "3")
    assert code == 4  # a bound: finished, reported again on resume
    assert _cli(capsys, "check", "--resume", target)[0] == 4
    module.write_text(source.replace('yield "Skip"', 'yield "Jump"'))
    code, out, err = _cli(capsys, "check", "--resume", target)
    assert code == 2 and err.count("\n") == 1
    assert "another spec version (module ckspec_v changed since it was written)" in err, err


def test_a_directory_holding_a_checkpoint_is_not_overwritten(tmp_path, capsys):
    target = _stopped_checkpoint(tmp_path, capsys)
    code, _, err = _cli(capsys, "check", "replication", "--checkpoint", target)
    assert code == 2 and "already holds a checkpoint" in err
    code, _, err = _cli(capsys, "check", "--resume", str(tmp_path / "nothing"))
    assert code == 2 and "no such directory" in err
    code, _, err = _cli(capsys, "check", "replication", "--checkpoint-every", "5")
    assert code == 2 and "--checkpoint-every applies only with" in err
    code, _, err = _cli(capsys, "check")
    assert code == 2 and "or --resume DIR" in err
    with Checkpointer(target, {}, {}, 0.0, read_manifest(target)):
        code, _, err = _cli(capsys, "check", "--resume", target)
    assert code == 2 and "another kafkamc run is writing this checkpoint" in err


def _env():
    return {**os.environ, "PYTHONPATH": os.pathsep.join([ROOT, TESTS, os.environ.get("PYTHONPATH", "")])}


LADDER = ["toyspecs:Ladder", "-p", "width=3000", "-p", "rungs=8", "-p", "top=true", "-i", "rung-below-top"]


def test_sigkill_leaves_the_last_level_checkpoint(tmp_path):
    """A run killed outright (no handler runs) leaves its last complete checkpoint, which resumes to
    the uninterrupted result; what the kill cut short is not taken for a checkpoint."""
    target = str(tmp_path / "ck")
    proc = subprocess.Popen([sys.executable, "-m", "kafkamc", "check", *LADDER, "-p", "delay_us=300", "--workers",
                             "2", "--progress", "--checkpoint", target, "--checkpoint-every", "0"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=_env(),
                            cwd=str(tmp_path), start_new_session=True)
    try:
        for line in proc.stderr:
            if line.startswith("level 5:"):
                break
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        proc.kill()
    assert read_manifest(target).level >= 4
    resumed = subprocess.run([sys.executable, "-m", "kafkamc", "check", "--resume", target, "--json"],
                             capture_output=True, text=True, env=_env(), cwd=str(tmp_path), timeout=120)
    whole = subprocess.run([sys.executable, "-m", "kafkamc", "check", *LADDER, "--json"],
                           capture_output=True, text=True, env=_env(), cwd=str(tmp_path), timeout=120)
    assert resumed.returncode == whole.returncode == 1, resumed.stderr
    assert _json_outcome(resumed.stdout) == _json_outcome(whole.stdout)
    assert sorted(os.listdir(target)) == [".lock", MANIFEST]  # finished: no data or temporary file left


def test_sigterm_mid_level_with_workers_then_resume(tmp_path):
    """A real SIGTERM while two workers expand a level: exit 4, the checkpoint of the last boundary
    (the workers set the level aside and write their segments), and a resumed run in a new process
    that ends as an uninterrupted one."""
    env = _env()
    spec = LADDER
    target = str(tmp_path / "ck")
    slow = ["-p", "delay_us=500"]
    proc = subprocess.Popen([sys.executable, "-m", "kafkamc", "check", *spec, *slow, "--workers", "2", "--progress",
                             "--json", "--checkpoint", target, "--checkpoint-every", "0"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=str(tmp_path))
    lines = []
    try:
        for line in proc.stderr:
            lines.append(line)
            if line.startswith("level 3:"):
                break
        time.sleep(0.2)  # inside level 4's expansion (0.75 s of sleeps per worker)
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    err = "".join(lines) + err
    assert proc.returncode == 4, err
    doc = json.loads(out)
    # Level 3 unless this test was held up for most of level 4's second (a loaded machine).
    level = doc["checkpoint"]["level"]
    assert doc["reason"] == "terminated" and level >= 3, err
    assert f"checkpoint of level {level} ({doc['checkpoint']['distinct_states']:,} distinct states) in {target}" in err
    assert len([n for n in os.listdir(target) if n.startswith("frontier.")]) == 2  # one per worker
    resumed = subprocess.run([sys.executable, "-m", "kafkamc", "check", "--resume", target, "--json"],
                             capture_output=True, text=True, env=env, cwd=str(tmp_path), timeout=120)
    whole = subprocess.run([sys.executable, "-m", "kafkamc", "check", *spec, "--json"],
                           capture_output=True, text=True, env=env, cwd=str(tmp_path), timeout=120)
    assert resumed.returncode == whole.returncode == 1, resumed.stderr
    assert _json_outcome(resumed.stdout) == _json_outcome(whole.stdout)
