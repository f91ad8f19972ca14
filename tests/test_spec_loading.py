"""A broken user spec is one line and exit 2 (cannot be loaded) or 3 (misbehaves while explored)."""

from __future__ import annotations

import textwrap

import pytest

from kafkamc.cli import main


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def one_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert "Traceback" not in err
    return lines[0]


@pytest.fixture
def module(tmp_path, monkeypatch):
    """Write a module under a fresh name; returns that name."""
    monkeypatch.syspath_prepend(str(tmp_path))
    counter = iter(range(1000))

    def write(source: str) -> str:
        name = f"userspec_{tmp_path.name.replace('-', '_')}_{next(counter)}"
        (tmp_path / f"{name}.py").write_text(textwrap.dedent(source))
        return name

    return write


@pytest.mark.parametrize("command", ["check", "simulate", "graph"])
@pytest.mark.parametrize("source, needle", [
    ("def f(:\n", "SyntaxError"),
    ("raise RuntimeError('boom at import')\n", "RuntimeError: boom at import"),
    ("import sys\nsys.exit(3)\n", "SystemExit"),
    ("import no_such_module_kafkamc\n", "No module named"),
])
def test_module_that_fails_to_import_is_exit_2(capsys, module, tmp_path, command, source, needle):
    name = module(source)
    extra = ["--out", str(tmp_path / "g.json")] if command == "graph" else []
    code, out, err = run(capsys, command, f"{name}:S", *extra)
    line = one_line(err)
    assert code == 2
    assert f"cannot import module {name!r}" in line and needle in line


def test_relative_reference_is_exit_2(capsys):
    code, _, err = run(capsys, "check", ".x:Y")
    assert code == 2 and "is relative" in one_line(err)


def test_validate_params_raising_anything_is_exit_2(capsys):
    code, _, err = run(capsys, "check", "malformedspecs:ValidateRaises")
    line = one_line(err)
    assert code == 2
    assert "malformedspecs:ValidateRaises" in line and "ValueError: brokers must exceed replicas" in line


@pytest.mark.parametrize("ref, needle", [
    ("kafkamc:Spec", "abstract base class"),
    ("malformedspecs:UndecoratedInvariant", "invariants lists plain_invariant, which is not decorated"),
    ("malformedspecs:NoInitStates", "defines no init_states"),
])
def test_spec_class_errors_found_at_load_are_exit_2(capsys, ref, needle):
    code, _, err = run(capsys, "check", ref)
    assert code == 2 and needle in one_line(err)


@pytest.mark.parametrize("argv", [
    ["check", "malformedspecs:YieldsBareState"],
    ["check", "malformedspecs:YieldsBareState", "-i", "all"],
    ["simulate", "malformedspecs:YieldsBareState", "--runs", "3", "--no-database", "--seed", "1"],
    ["check", "malformedspecs:WideThenBare", "--workers", "2"],
])
def test_action_yielding_a_bare_state_is_exit_3_naming_it(capsys, argv):
    code, _, err = run(capsys, *argv)
    line = one_line(err)
    assert code == 3
    assert "action bare is malformed" in line or "action inc is malformed" in line
    assert "instead of a (label, next_state) pair" in line


def test_action_returning_a_tuple_is_exit_3_naming_it(capsys):
    code, _, err = run(capsys, "check", "malformedspecs:ReturnsTuple")
    line = one_line(err)
    assert code == 3 and "action inc is malformed" in line and "return a tuple instead of yielding" in line


def test_action_returning_none_is_exit_3_naming_it(capsys):
    code, _, err = run(capsys, "check", "malformedspecs:ReturnsNone")
    line = one_line(err)
    assert code == 3 and "action inc is malformed: returned None" in line


# -- the gate: a broken spec is an ERROR row, the other checks still run, exit 2 -----------------



@pytest.mark.parametrize("source, spec, needle", [
    ("def f(:\n", "{mod}:S", "SyntaxError"),
    ("raise RuntimeError('boom at import')\n", "{mod}:S", "RuntimeError: boom at import"),
    ("import no_such_module_kafkamc\n", "{mod}:S", "No module named 'no_such_module_kafkamc'"),
    (None, "malformedspecs:ValidateRaises", "validate_params raised ValueError"),
])
def test_gate_reports_a_broken_spec_as_an_error_row_and_exits_2(capsys, module, tmp_path, monkeypatch,
                                                                 source, spec, needle):
    monkeypatch.setattr("sys.path", list(__import__("sys").path))
    ref = spec.format(mod=module(source)) if source else spec
    config = tmp_path / "kafkamc.toml"
    config.write_text(f'[checks.broken]\nspec = "{ref}"\nexpect = "hold"\n\n'
                      '[checks.other]\nspec = "replication"\nexpect = "hold"\nmax_states = 50\n'
                      'allow_incomplete = true\n')
    junit = tmp_path / "junit.xml"
    code, out, err = run(capsys, "gate", "--config", str(config), "--junit", str(junit))
    assert code == 2
    line = one_line(err)
    assert line.startswith(f"kafkamc: error: {config}:2: check 'broken': ") and needle in line
    assert "ERROR broken" in out and needle in out
    assert "PASS  other" in out  # the other check still ran
    assert 'type="SpecLoadError"' in junit.read_text()
    code, out, _ = run(capsys, "gate", "--config", str(config), "--json")
    doc = __import__("json").loads(out)
    broken = next(c for c in doc["checks"] if c["name"] == "broken")
    assert code == 2 and broken["status"] == "error" and needle in broken["message"] and broken["params"] is None
    # Not selected, not imported: the rest of the gate is unaffected.
    code, _, err = run(capsys, "gate", "--config", str(config), "--only", "other")
    assert code == 0 and err == ""
