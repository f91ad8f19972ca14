"""``kafkamc gate``: expectations, exit codes, --only, JUnit XML, JSON, --out, and config errors."""

from __future__ import annotations

import importlib.util
import json
import os
import sys
import textwrap
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

import pytest

from kafkamc import Param, Spec, action, invariant
from kafkamc.invariants.api import recoverable
from kafkamc.cli import main
from kafkamc.cli.gate import load_config

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HERE = __name__  # toy specs below are referenced as "<this module>:Class"


@dataclass(frozen=True, slots=True)
class Pos:
    x: int
    y: int


@invariant("gate-x-below-limit", "x stays below the limit")
def gate_x_below_limit(p, s):
    return s.x < p.limit


@invariant("gate-y-below-limit", "y stays below the limit")
def gate_y_below_limit(p, s):
    return s.y < p.limit


@recoverable("gate-can-reach-corner", "the corner (bound, bound) stays reachable")
def gate_can_reach_corner(p, s):
    return s.x == p.bound and s.y == p.bound


@recoverable("gate-can-go-home", "the origin stays reachable (it does not: counters only go up)")
def gate_can_go_home(p, s):
    return s.x == 0 and s.y == 0


class Grid(Spec):
    """x and y each count up to ``bound``: (bound + 1) ** 2 reachable states."""

    name = "gate-grid"
    parameters = (
        Param("bound", 3, "largest coordinate", min=1, max=20),
        Param("limit", 100, "x and y must stay below this", min=1, max=100),
    )
    invariants = (gate_x_below_limit, gate_y_below_limit)
    default_invariants = ("gate-x-below-limit",)
    recoverability = (gate_can_reach_corner, gate_can_go_home)

    def init_states(p):
        yield Pos(0, 0)

    @action
    def inc_x(p, s):
        if s.x < p.bound:
            yield f"IncX(x={s.x + 1})", Pos(s.x + 1, s.y)

    @action
    def inc_y(p, s):
        if s.y < p.bound:
            yield f"IncY(y={s.y + 1})", Pos(s.x, s.y + 1)


class Boom(Spec):
    """Its only action divides by zero on the second step."""

    name = "gate-boom"
    invariants = (gate_x_below_limit,)
    parameters = (Param("limit", 100, "unused bound", min=1, max=100),)

    def init_states(p):
        yield Pos(0, 0)

    @action
    def step(p, s):
        if s.x < 3:
            yield "Step", Pos(s.x + 1, 1 // (1 - s.x))


class Hostile(Spec):
    """Labels with characters XML cannot carry or must escape."""

    name = "gate-hostile"
    invariants = (gate_x_below_limit,)
    parameters = (Param("limit", 2, "x must stay below this", min=1, max=100),)

    def init_states(p):
        yield Pos(0, 0)

    @action
    def step(p, s):
        if s.x < 3:
            yield f"Step(\x01<&>\"']]>{s.x})", Pos(s.x + 1, 0)


GRID = f"{HERE}:Grid"


@pytest.fixture(autouse=True)
def _restore_sys_path(monkeypatch):
    # The gate appends each config file's directory to sys.path; keep that inside each test.
    monkeypatch.setattr(sys, "path", list(sys.path))


def write(tmp_path, text, name="kafkamc.toml"):
    path = tmp_path / name
    path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return str(path)


def gate(capsys, *argv):
    code = main(["gate", *argv])
    out, err = capsys.readouterr()
    return code, out, err


GOOD = f"""
[checks.grid-holds]
spec = "{GRID}"
params = {{ bound = 3 }}
expect = "hold"
distinct_states = 16

[checks.grid-x-bug]
spec = "{GRID}"
params = {{ limit = 2 }}
expect = "violate"
violated = "gate-x-below-limit"
max_trace_length = 3
"""


def test_all_expectations_met_exit_0(tmp_path, capsys):
    code, out, err = gate(capsys, "--config", write(tmp_path, GOOD))
    assert code == 0, out + err
    lines = out.splitlines()
    assert lines[0].startswith("PASS  grid-holds") and "16 states" in lines[0]
    assert lines[1].startswith("PASS  grid-x-bug") and "violation gate-x-below-limit (3 states)" in lines[1]
    assert lines[-1].startswith("gate: 2 checks, 2 passed, all expectations met")


@pytest.mark.parametrize(
    "body, needle",
    [
        ('params = { limit = 2 }\nexpect = "hold"',
         "expected gate-x-below-limit to hold, but gate-x-below-limit is violated"),
        ('expect = "violate"', "the model no longer finds the bug"),
        ('params = { limit = 2 }\ninvariants = "all"\nexpect = "violate"\nviolated = "gate-y-below-limit"',
         "expected gate-y-below-limit to be violated, but the first violation found is gate-x-below-limit"),
        ('params = { limit = 2 }\nexpect = "violate"\nmax_trace_length = 2', "at most 2 states, got 3"),
        ('expect = "hold"\ndistinct_states = 15', "expected exactly 15 distinct states, got 16"),
        ('expect = "hold"\ndepth = 6', "expected depth 6, got 7"),
    ],
    ids=["hold-but-violates", "violate-but-holds", "other-invariant", "trace-too-long", "state-count", "depth"],
)
def test_wrong_expectation_exit_1(tmp_path, capsys, body, needle):
    config = write(tmp_path, f'[checks.wrong]\nspec = "{GRID}"\n{body}\n')
    code, out, _ = gate(capsys, "--config", config)
    assert code == 1
    assert out.startswith("FAIL  wrong")
    assert needle in out
    assert "1 not met: wrong" in out.splitlines()[-1]


def test_incomplete_fails_hold_unless_allowed(tmp_path, capsys):
    text = f"""
    [checks.bounded]
    spec = "{GRID}"
    max_states = 5
    expect = "hold"
    """
    code, out, _ = gate(capsys, "--config", write(tmp_path, text))
    assert code == 1
    assert "incomplete (max-states)" in out and "set allow_incomplete = true" in out
    code, out, _ = gate(capsys, "--config", write(tmp_path, text + "allow_incomplete = true\n"))
    assert code == 0, out
    # A bound from [defaults] counts the same; an expected violation not reached is a failure too.
    text = f"""
    [defaults]
    max_depth = 2

    [checks.too-shallow]
    spec = "{GRID}"
    params = {{ limit = 3 }}
    expect = "violate"
    """
    code, out, _ = gate(capsys, "--config", write(tmp_path, text))
    assert code == 1 and "none was found before the run stopped (max-depth)" in out


def test_only_selects_checks(tmp_path, capsys):
    config = write(tmp_path, GOOD + f'\n[checks.broken]\nspec = "{GRID}"\nparams = {{ limit = 2 }}\nexpect = "hold"\n')
    code, out, _ = gate(capsys, "--config", config)
    assert code == 1 and "FAIL  broken" in out
    code, out, _ = gate(capsys, "--config", config, "--only", "grid-holds", "--only", "grid-x-bug")
    assert code == 0 and "broken" not in out and "2 checks" in out
    code, out, _ = gate(capsys, "--config", config, "--only", "grid-*")
    assert code == 0 and "2 checks" in out
    code, out, err = gate(capsys, "--config", config, "--only", "nosuch")
    assert code == 2 and out == ""
    assert "--only 'nosuch' matches no check; allowed: grid-holds, grid-x-bug, broken" in err


def test_junit_xml(tmp_path, capsys):
    config = write(tmp_path, GOOD + f"""
    [checks.broken]
    spec = "{GRID}"
    params = {{ limit = 2 }}
    expect = "hold"

    [checks.raises]
    spec = "{HERE}:Boom"
    expect = "hold"
    """.replace("\n    ", "\n"))
    junit = tmp_path / "reports" / "gate.xml"
    code, _, _ = gate(capsys, "--config", config, "--junit", str(junit))
    assert code == 1
    root = ET.parse(junit).getroot()  # well-formed, or this raises
    assert root.tag == "testsuites"
    suite = root.find("testsuite")
    assert (suite.get("tests"), suite.get("failures"), suite.get("errors")) == ("4", "1", "1")
    cases = {c.get("name"): c for c in suite.findall("testcase")}
    assert list(cases) == ["grid-holds", "grid-x-bug", "broken", "raises"]
    assert cases["grid-holds"].find("failure") is None and cases["grid-holds"].find("error") is None
    assert cases["broken"].get("classname") == "kafkamc.gate.gate-grid"
    assert cases["broken"].get("line") == "14"
    failure = cases["broken"].find("failure")
    assert "gate-x-below-limit is violated (counterexample of 3 states)" in failure.get("message")
    out = cases["broken"].find("system-out").text
    assert "counterexample:" in out and "IncX(x=2)" in out
    # The expected violation passes, and its counterexample is shown too.
    assert "IncX(x=2)" in cases["grid-x-bug"].find("system-out").text
    error = cases["raises"].find("error")
    assert "ZeroDivisionError" in error.get("message") and "action step" in error.get("message")


def test_spec_that_raises_fails_its_check_only(tmp_path, capsys):
    config = write(tmp_path, GOOD + f'\n[checks.raises]\nspec = "{HERE}:Boom"\nexpect = "violate"\n')
    code, out, _ = gate(capsys, "--config", config)
    assert code == 1
    assert "ERROR raises" in out and "ZeroDivisionError" in out
    assert out.count("PASS ") == 2  # the other checks still ran


def test_json_and_out(tmp_path, capsys):
    out_dir = tmp_path / "cex"
    code, out, _ = gate(capsys, "--config", write(tmp_path, GOOD), "--json", "--out", str(out_dir))
    assert code == 0
    assert out.count("\n") == 1  # exactly one JSON object
    doc = json.loads(out)
    assert doc["schema"] == 1 and doc["passed"] is True
    assert doc["summary"]["checks"] == 2 and doc["summary"]["passed"] == 2
    holds, bug = doc["checks"]
    assert holds["name"] == "grid-holds" and holds["met"] is True and holds["result"]["result"] == "ok"
    assert holds["result"]["distinct_states"] == 16 and holds["files"] == []
    assert bug["result"]["violated"] == "gate-x-below-limit" and len(bug["result"]["trace"]) == 3
    trace_file = out_dir / "grid-x-bug" / "gate-grid-gate-x-below-limit.trace.json"
    assert str(trace_file) in bug["files"]
    written = json.loads(trace_file.read_text())
    assert [s["action"] for s in written["trace"]] == [None, "IncX(x=1)", "IncX(x=2)"]
    assert written["spec_ref"] == GRID  # a user spec's trace replays without --spec
    # The ITF trace and the HTML viewer beside it, in installations that have those writers.
    stem = out_dir / "grid-x-bug" / "gate-grid-gate-x-below-limit"
    if importlib.util.find_spec("kafkamc.counterexamples.itf") is not None:
        itf = Path(f"{stem}.itf.json")
        assert str(itf) in bug["files"] and len(json.loads(itf.read_text())["states"]) == 3
    if importlib.util.find_spec("kafkamc.counterexamples.html") is not None:
        html = Path(f"{stem}.html")
        assert str(html) in bug["files"] and "IncX(x=2)" in html.read_text()


def test_pyproject_tool_table(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write(tmp_path, f"""
    [project]
    name = "x"

    [tool.kafkamc.checks.grid]
    spec = "{GRID}"
    expect = "hold"
    """, name="pyproject.toml")
    code, out, _ = gate(capsys)
    assert code == 0 and out.startswith("PASS  grid")
    write(tmp_path, f"""
    [tool.kafkamc.checks.grid]
    spec = "{GRID}"
    expect = "hold"
    max_state = 3
    """, name="pyproject.toml")
    code, _, err = gate(capsys)
    assert code == 2 and "pyproject.toml:4: unknown key 'max_state' in check 'grid'" in err
    # kafkamc.toml wins over pyproject.toml
    write(tmp_path, f'[checks.from-toml]\nspec = "{GRID}"\nexpect = "hold"\n')
    code, out, _ = gate(capsys)
    assert code == 0 and "from-toml" in out


def test_no_config_is_exit_2(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, out, err = gate(capsys)
    assert code == 2 and "no kafkamc.toml here" in err
    code, out, err = gate(capsys, "--config", "missing.toml")
    assert code == 2 and "config file 'missing.toml' does not exist" in err


def test_spec_module_next_to_the_config(tmp_path, capsys, monkeypatch):
    (tmp_path / "gate_local_spec.py").write_text(
        f"from {HERE} import Grid\n\nclass Small(Grid):\n    name = 'gate-small'\n", encoding="utf-8"
    )
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    config = write(tmp_path, '[checks.local]\nspec = "gate_local_spec:Small"\nexpect = "hold"\ndistinct_states = 16\n')
    code, out, err = gate(capsys, "--config", config)
    assert code == 0, out + err


# Each bad config: (text, the line the message must name, a part of the message).
BAD = [
    ('[check.x]\nspec = "replication"\n', 1, "unknown key 'check'; allowed: checks, defaults"),
    ('[checks.x]\nspec = "replication"\nexpect = "hold"\nengin = "local"\n', 4,
     "unknown key 'engin' in check 'x'; allowed: spec,"),
    ('[checks.x]\n\nspec = "nosuch"\nexpect = "hold"\n', 3, "unknown spec 'nosuch'; allowed: "),
    ('[checks.x]\nspec = "nosuch.module:Spec"\nexpect = "hold"\n', 2, "cannot import module 'nosuch.module'"),
    (f'[checks.x]\nspec = "{GRID}"\nexpect = "hold"\n\n[checks.x.params]\nbound = 2\nlimt = 3\n', 7,
     "unknown parameter 'limt' for spec gate-grid; allowed: bound, limit"),
    (f'[checks.x]\nspec = "{GRID}"\nexpect = "hold"\nparams = {{ bound = 99 }}\n', 4,
     "parameter bound=99 is out of range; allowed: an integer in 1..20"),
    (f'[checks.x]\nspec = "{GRID}"\nexpect = "hold"\nparams = {{ bound = "two" }}\n', 4,
     "parameter bound='two' is not an integer"),
    (f'[checks.x]\nspec = "{GRID}"\nexpect = "hold"\ninvariants = [\n  "gate-x-below-limit",\n  "no-such",\n]\n', 6,
     "unknown invariant 'no-such' for spec gate-grid; allowed: gate-x-below-limit, gate-y-below-limit, all"),
    (f'[checks.x]\nspec = "{GRID}"\nexpect = "holds"\n', 3, "expect = 'holds' is not allowed; allowed: hold, violate"),
    (f'[checks.x]\nspec = "{GRID}"\nexpect = "hold"\nmax_states = "10"\n', 4,
     "max_states = '10' has the wrong type; allowed: an integer"),
    (f'[checks.x]\nspec = "{GRID}"\nexpect = "hold"\nmax_depth = 0\n', 4, "max_depth = 0 is not allowed"),
    (f'[checks.x]\nspec = "{GRID}"\nexpect = "hold"\nviolated = "gate-x-below-limit"\n', 4,
     "violated applies only to expect = \"violate\""),
    (f'[checks.x]\nspec = "{GRID}"\nexpect = "violate"\nviolated = "gate-y-below-limit"\n', 4,
     "violated = 'gate-y-below-limit' is not among the properties this check checks; allowed: gate-x-below-limit"),
    (f'[checks.x]\nspec = "{GRID}"\nexpect = "hold"\nsymmetry = true\n', 4, "declares no symmetry hook"),
    (f'[checks.x]\nspec = "{GRID}"\nexpect = "hold"\npartitions = 2\n', 4,
     'partitions applies only to engine = "spark"'),
    (f'[checks.x]\nspec = "{GRID}"\nexpect = "hold"\nengine = "spark"\nworkers = 2\n', 5,
     'workers applies only to engine = "local"'),
    (f'[checks.x]\nspec = "{GRID}"\n', 1, "check 'x': missing key 'expect'"),
    (f'[checks.x]\nspec = "{GRID}"\nexpect = "hold"\nrecoverability = ["gate-can-reach-corner", "nope"]\n', 4,
     "unknown recoverability property 'nope' for spec gate-grid"),
    (f'[checks.x]\nspec = "{GRID}"\nexpect = "hold"\nrecoverability = ["gate-can-go-home"]\nmax_depth = 3\n', 5,
     "max_depth cannot be combined with recoverability"),
    (f'[checks.x]\nspec = "{GRID}"\nexpect = "hold"\n[defaults]\nspec = "x"\n', 5, "unknown key 'spec' in [defaults]"),
    (f'[checks.x]\nspec = "{GRID}"\nexpect = "hold"\nparams = {{ bound = 2 \n', 4, "invalid TOML"),
    ('# nothing here\n', None, "defines no checks"),
]


@pytest.mark.parametrize("text, line, needle", BAD, ids=[
    "top-key", "check-key", "bundled-spec", "module-spec", "param-name", "param-range", "param-type", "invariant",
    "expect", "type", "positive", "violated-on-hold", "violated-unchecked", "symmetry", "spark-only", "local-only",
    "missing", "recoverability-name", "recoverability-depth", "defaults-key", "toml-syntax", "empty",
])
def test_bad_config_exit_2_with_file_and_line(tmp_path, capsys, text, line, needle):
    config = write(tmp_path, text, name="gate.toml")
    code, out, err = gate(capsys, "--config", config)
    assert code == 2
    assert out == ""
    assert err.count("\n") == 1, err  # one line, no traceback
    where = f"{config}:{line}: " if line is not None else f"{config}: "
    assert err.startswith(f"kafkamc: error: {where}"), err
    assert needle in err


def test_a_bundled_spec_at_tlc_parity(tmp_path, capsys):
    # KIP-320 truncation, 2 replicas, log_size 2, max_records 2, max_leader_epoch 2: TLC's count (issue 3).
    config = write(tmp_path, """
    [checks.replication-kip320]
    spec = "replication"
    params = { model = "tla", truncation = "kip320", replicas = 2, log_size = 2, max_records = 2, max_leader_epoch = 2 }
    invariants = ["strong-isr", "weak-isr"]
    expect = "hold"
    distinct_states = 5973
    depth = 18
    """)
    code, out, _ = gate(capsys, "--config", config)
    assert code == 0, out
    assert "5,973 states" in out


def test_root_config_is_valid():
    """The repository's own kafkamc.toml loads: every spec, parameter and invariant it names exists."""
    config = load_config(os.path.join(ROOT, "kafkamc.toml"))
    names = [c.name for c in config.checks]
    assert len(names) == len(set(names)) > 0
    assert any(c.expect == "violate" for c in config.checks)


def test_spark_engine_gets_the_check_settings(tmp_path, capsys, monkeypatch):
    # A stand-in for kafkamc.checker.spark: records its arguments, explores with the local engine.
    import types

    from kafkamc.checker.local import explore

    calls = []

    def explore_spark(spec, properties=None, *, master=None, partitions=None, **kwargs):
        calls.append(dict(master=master, partitions=partitions, **kwargs))
        return explore(spec, properties, **kwargs)

    monkeypatch.setitem(sys.modules, "kafkamc.checker.spark", types.SimpleNamespace(explore_spark=explore_spark))
    config = write(tmp_path, f"""
    [defaults]
    engine = "spark"
    workers = 2
    max_depth = 50

    [checks.on-spark]
    spec = "{GRID}"
    expect = "hold"
    master = "local[2]"
    partitions = 4
    """)
    code, out, _ = gate(capsys, "--config", config)
    assert code == 0, out
    assert calls == [dict(master="local[2]", partitions=4, max_depth=50, max_states=None, symmetry=False,
                          deadlock=False)]


def test_ctrl_c_fails_the_gate_and_skips_the_rest(tmp_path, capsys, monkeypatch):
    import kafkamc.cli.gate as gate_module
    from kafkamc.result import CheckResult

    def interrupted(check):
        return CheckResult(spec=check.spec.name, params=check.spec.p.as_dict(), engine="local", result="incomplete",
                           invariants=("gate-x-below-limit",), violated=None, distinct_states=7,
                           states_generated=9, depth=3, seconds=0.1, reason="interrupted")

    monkeypatch.setattr(gate_module, "_explore", interrupted)
    junit = tmp_path / "gate.xml"
    code, out, _ = gate(capsys, "--config", write(tmp_path, GOOD), "--junit", str(junit))
    assert code == 1
    assert out.startswith("FAIL  grid-holds") and "interrupted (Ctrl-C)" in out
    assert "SKIP  grid-x-bug" in out
    suite = ET.parse(junit).getroot().find("testsuite")
    assert (suite.get("failures"), suite.get("skipped")) == ("1", "1")


def test_junit_xml_carries_hostile_labels(tmp_path, capsys):
    config = write(tmp_path, f'[checks.hostile]\nspec = "{HERE}:Hostile"\nexpect = "hold"\n')
    junit = tmp_path / "gate.xml"
    code, _, _ = gate(capsys, "--config", config, "--junit", str(junit))
    assert code == 1
    case = ET.parse(junit).getroot().find("testsuite/testcase")
    # The control character is shown escaped (as in every text output); XML's own specials survive.
    assert "Step(\\u0001<&>\"']]>1)" in case.find("system-out").text


def test_an_engine_that_is_not_installed_fails_its_check(tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "kafkamc.checker.spark", None)  # makes the import raise ImportError
    config = write(tmp_path, GOOD + f'\n[checks.on-spark]\nspec = "{GRID}"\nengine = "spark"\nexpect = "hold"\n')
    code, out, _ = gate(capsys, "--config", config)
    assert code == 1
    assert "ERROR on-spark" in out and "engine spark is not available" in out
    assert out.count("PASS ") == 2


def test_recoverability_checks(tmp_path, capsys):
    config = write(tmp_path, f"""
    [checks.corner]
    spec = "{GRID}"
    invariants = []
    recoverability = ["gate-can-reach-corner"]
    expect = "hold"
    distinct_states = 16

    [checks.home]
    spec = "{GRID}"
    recoverability = "gate-can-go-home"
    expect = "violate"
    violated = "gate-can-go-home"
    max_trace_length = 2
    """)
    junit = tmp_path / "gate.xml"
    code, out, _ = gate(capsys, "--config", config, "--json", "--junit", str(junit))
    assert code == 0, out
    home_case = ET.parse(junit).getroot().findall("testsuite/testcase")[1]
    assert "gate-can-go-home: good states 1, stuck states 15" in home_case.find("system-out").text
    corner, home = json.loads(out)["checks"]
    assert corner["recoverability"] == ["gate-can-reach-corner"] and corner["result"]["result"] == "ok"
    assert corner["invariants"] == [] and corner["result"]["invariants"] == ["gate-can-reach-corner"]
    assert home["invariants"] == ["gate-x-below-limit"]  # the spec's defaults beside the property
    assert home["result"]["violated"] == "gate-can-go-home" and len(home["result"]["trace"]) == 2
    assert home["result"]["recoverability"]["gate-can-go-home"]["stuck_states"] == 15
    # The same property expected to hold fails the gate.
    code, out, _ = gate(capsys, "--config", write(tmp_path, f"""
    [checks.home]
    spec = "{GRID}"
    recoverability = ["gate-can-go-home"]
    expect = "hold"
    """))
    assert code == 1 and "but gate-can-go-home is violated (counterexample of 2 states)" in out


def test_a_sigterm_a_check_took_while_giving_its_answer_stops_the_gate(tmp_path, capsys, monkeypatch):
    # E.g. SIGTERM while a violation's trace was replayed: the engine takes the stop and still
    # reports the violation; the gate must stop all the same.
    import kafkamc.cli.gate as gate_module
    from kafkamc.checker.watch import Stopped, stop_reason

    real = gate_module._explore

    def answered_then_stopped(check):
        result = real(check)
        stop_reason(Stopped("terminated"))
        return result

    monkeypatch.setattr(gate_module, "_explore", answered_then_stopped)
    code, out, _ = gate(capsys, "--config", write(tmp_path, GOOD))
    assert code == 1
    assert out.startswith("PASS  grid-holds") and "SKIP  grid-x-bug" in out, out
