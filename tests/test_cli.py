"""The command-line contract: exit codes, one-line errors, the JSON object, --out."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from kafkamc.cli import main

JSON_KEYS = {
    "schema", "spec", "params", "engine", "result", "invariants", "violated",
    "distinct_states", "states_generated", "depth", "seconds", "trace",
}


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_ok_exit_0_and_json_shape(capsys):
    code, out, err = run(capsys, "check", "toyspecs:Counters", "--json")
    assert code == 0
    doc = json.loads(out)
    assert JSON_KEYS <= set(doc)
    assert doc["schema"] == 1 and doc["result"] == "ok" and doc["engine"] == "local"
    assert doc["params"] == {"bound": 4, "limit": 100, "cap": 1000, "decrement": False}
    assert doc["invariants"] == ["x-below-limit", "sum-below-cap"]
    assert doc["violated"] is None and doc["trace"] is None
    assert (doc["distinct_states"], doc["states_generated"], doc["depth"]) == (25, 41, 9)
    assert out.count("\n") == 1  # exactly one JSON object


def test_violation_exit_1_with_trace(capsys):
    code, out, _ = run(capsys, "check", "toyspecs:Counters", "-p", "limit=2", "--json")
    assert code == 1
    doc = json.loads(out)
    assert doc["result"] == "violation" and doc["violated"] == "x-below-limit"
    assert doc["trace"][0] == {"action": None, "state": {"x": 0, "y": 0}}
    assert [s["action"] for s in doc["trace"]] == [None, "IncX(x=1)", "IncX(x=2)"]
    assert doc["trace"][-1]["state"] == {"x": 2, "y": 0}


def test_text_output_shows_only_changed_fields(capsys):
    code, out, _ = run(capsys, "check", "toyspecs:Counters", "-p", "limit=2")
    assert code == 1
    assert "violation: x-below-limit fails after 2 steps" in out
    assert "x: 0 -> 1" in out and "x: 1 -> 2" in out
    assert "y:" not in out.split("2. IncX(x=1)")[1]


@pytest.mark.parametrize(
    "argv, needle",
    [
        (["check", "nosuch"], "unknown spec 'nosuch'; allowed: "),
        (["check", "toyspecs:Counters", "-p", "nope=1"], "unknown parameter 'nope'"),
        (["check", "toyspecs:Counters", "-p", "bound=99"], "out of range; allowed: an integer in 1..50"),
        (["check", "toyspecs:Counters", "-p", "bound=x"], "is not an integer"),
        (["check", "toyspecs:Counters", "-p", "decrement=maybe"], "allowed: true, false"),
        (["check", "toyspecs:Counters", "-p", "bound"], "must look like NAME=VALUE"),
        (["check", "toyspecs:Counters", "-p", "bound=2", "-p", "bound=3"], "given twice"),
        (["check", "toyspecs:Counters", "-i", "nope"], "unknown invariant 'nope'"),
        (["check", "toyspecs:Counters", "--max-depth", "0"], "allowed: a positive integer"),
        (["check", "toyspecs:Counters", "--engine", "tlc"], "invalid choice"),
        (["check", "toyspecs:Counters", "--symmetry"], "declares no symmetry hook"),
        (["check", "toyspecs:Counters", "--partitions", "4"], "only to --engine spark"),
        (["check", "nomodule_here:Spec"], "cannot import module"),
        (["check", "toyspecs:Pair"], "is not a kafkamc Spec subclass"),
        (["frobnicate"], "invalid choice"),
    ],
)
def test_bad_input_exit_2_one_line(capsys, argv, needle):
    code, out, err = run(capsys, *argv)
    assert code == 2
    assert out == ""
    assert err.count("\n") == 1 and needle in err
    assert "Traceback" not in err


def test_spec_raising_exit_3_names_action_and_state(capsys):
    code, out, err = run(capsys, "check", "toyspecs:Raising")
    assert code == 3
    assert "action step" in err and "Pair(x=1, y=0)" in err and "ZeroDivisionError" in err
    assert "Traceback" not in err


def test_bounds_exit_4_incomplete(capsys):
    code, out, _ = run(capsys, "check", "toyspecs:Counters", "--max-depth", "3", "--json")
    assert code == 4
    doc = json.loads(out)
    assert doc["result"] == "incomplete" and doc["reason"] == "max-depth"
    code, out, _ = run(capsys, "check", "toyspecs:Counters", "--max-states", "5")
    assert code == 4 and "incomplete" in out and "not exhaustive" in out


def test_invariant_all_and_repeat(capsys):
    code, out, _ = run(capsys, "check", "toyspecs:Counters", "-i", "all", "-p", "decrement=true", "--json")
    doc = json.loads(out)
    assert code == 1 and doc["violated"] == "x-never-decreases"
    assert doc["invariants"] == ["x-below-limit", "sum-below-cap", "x-never-decreases"]
    code, out, _ = run(capsys, "check", "toyspecs:Counters", "-i", "sum-below-cap", "-p", "cap=3", "--json")
    doc = json.loads(out)
    assert code == 1 and doc["invariants"] == ["sum-below-cap"] and doc["violated"] == "sum-below-cap"


def test_out_writes_the_counterexample(tmp_path, capsys):
    code, out, _ = run(capsys, "check", "toyspecs:Counters", "-p", "limit=2", "--out", str(tmp_path))
    assert code == 1
    path = tmp_path / "counters-x-below-limit.trace.json"
    doc = json.loads(path.read_text())
    assert doc["violated"] == "x-below-limit" and doc["path"] == [0, 0, 0]
    assert len(doc["trace"]) == 3
    itf = json.loads((tmp_path / "counters-x-below-limit.itf.json").read_text())
    assert len(itf["states"]) == 3 and itf["#meta"]["invariant"] == "x-below-limit"


def test_deadlock_flag(capsys):
    code, out, _ = run(capsys, "check", "toyspecs:Counters", "-p", "bound=1", "--deadlock", "--json")
    doc = json.loads(out)
    assert code == 1 and doc["violated"] == "deadlock" and len(doc["trace"]) == 3


def test_progress_lines_on_stderr(capsys):
    code, out, err = run(capsys, "check", "toyspecs:Counters", "--progress")
    assert code == 0
    assert "level 1: 1 distinct" in err and "level 9: 25 distinct" in err


def test_list_json_and_text(capsys):
    code, out, _ = run(capsys, "list", "--json")
    assert code == 0
    doc = json.loads(out)
    names = [s["name"] for s in doc["specs"]]
    assert "replication" in names
    rep = next(s for s in doc["specs"] if s["name"] == "replication")
    trunc = next(p for p in rep["parameters"] if p["name"] == "truncation")
    assert trunc["type"] == "str" and "kip320" in trunc["allowed"]
    assert any(i["name"] == "strong-isr" and i["default"] for i in rep["invariants"])
    code, out, _ = run(capsys, "list")
    assert code == 0 and "replication:" in out and "strong-isr" in out


def test_console_script_and_module_entry_points(tmp_path):
    env = dict(os.environ, PYTHONPATH=os.path.dirname(__file__))
    done = subprocess.run(
        [sys.executable, "-m", "kafkamc", "check", "toyspecs:Counters", "-p", "limit=3", "--json"],
        capture_output=True, text=True, env=env, cwd=tmp_path,
    )
    assert done.returncode == 1 and json.loads(done.stdout)["violated"] == "x-below-limit"
    done = subprocess.run([sys.executable, "-m", "kafkamc", "check", "replication", "-p", "replicas=9"],
                          capture_output=True, text=True)
    assert done.returncode == 2 and done.stderr.startswith("kafkamc: error: parameter replicas=9")


def test_readme_spec_example_runs_as_written(tmp_path, capsys, monkeypatch):
    import re

    readme = open(os.path.join(os.path.dirname(__file__), "..", "README.md"), encoding="utf-8").read()
    code = re.findall(r"```python\n(.*?)```", readme, re.S)[0]
    pkg = tmp_path / "mymodels"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "bounded_counter.py").write_text(code)
    monkeypatch.syspath_prepend(str(tmp_path))
    exit_code, out, _ = run(capsys, "check", "mymodels.bounded_counter:BoundedCounter", "-p", "limit=2", "--json")
    doc = json.loads(out)
    assert exit_code == 1 and doc["violated"] == "hw-below-limit" and len(doc["trace"]) == 5
    exit_code, out, _ = run(capsys, "check", "mymodels.bounded_counter:BoundedCounter", "-p", "limit=5", "--json")
    assert exit_code == 0 and json.loads(out)["result"] == "ok"


@pytest.mark.parametrize("workers", ["1", "2"])
def test_ctrl_c_reports_incomplete_with_stats(workers):
    import signal

    proc = subprocess.Popen(
        [sys.executable, "-m", "kafkamc", "check", "replication", "-p", "replicas=3", "-p", "truncation=kip320",
         "--workers", workers, "--json", "--progress"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    # Interrupt mid-search, not during start-up: wait for a progress line of a level that the
    # two-worker engine expands with forked workers (more than 2,000 states).
    lines = []
    for line in proc.stderr:
        lines.append(line)
        if line.startswith("level 12:"):
            break
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    err = "".join(lines) + err
    assert proc.returncode == 4, err
    doc = json.loads(out)
    assert doc["result"] == "incomplete" and doc["reason"] == "interrupted"
    assert doc["distinct_states"] > 2000 and "Traceback" not in err


def test_user_spec_trace_replays_with_trust_or_spec_option(tmp_path, capsys):
    code, _, _ = run(capsys, "check", "toyspecs:Counters", "-p", "limit=2", "--out", str(tmp_path))
    assert code == 1
    for name in ("counters-x-below-limit.trace.json", "counters-x-below-limit.itf.json"):
        code, out, err = run(capsys, "trace", "replay", str(tmp_path / name), "--trust")
        assert code == 0, err
        code, out, err = run(capsys, "trace", "replay", str(tmp_path / name), "--spec", "toyspecs:Counters")
        assert code == 0, err


def test_trace_text_names_entities_and_shows_differences(capsys):
    code, out, _ = run(capsys, "check", "replication", "-p", "replicas=3", "-p", "truncation=kip279",
                       "-p", "log_size=1", "-p", "max_records=1")
    assert code == 1
    assert "requests: appended (" in out          # an appended LeaderAndIsr request, not the whole set again
    assert "r3.logs: truncated to 0 (dropped" in out   # the truncation that loses the committed record
    assert "r1.hw: 0 -> 1" in out
