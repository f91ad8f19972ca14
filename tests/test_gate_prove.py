"""``kafkamc gate`` proof checks: ``expect = "proved"`` and ``expect = "cti"`` (with ``reachable``)."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pytest

from kafkamc.cli.main import main


def _gate(tmp_path, body, *extra):
    config = tmp_path / "kafkamc.toml"
    config.write_text(body)
    return main(["gate", "--config", str(config), *extra])


PROVED = '''
[checks.lagging-strengthened]
spec = "provespecs:Lagging"
invariants = ["y-non-negative", "x-non-negative"]
expect = "proved"
workers = 1
'''

CTI_UNREACHED = '''
[checks.lagging-alone]
spec = "provespecs:Lagging"
invariants = ["y-non-negative"]
expect = "cti"
violated = "y-non-negative"
reachable = false
workers = 1
'''

CTI_REACHABLE = '''
[checks.counter-wraps]
spec = "provespecs:Counter1000"
invariants = ["count-non-negative"]
expect = "cti"
reachable = true
timeout = 60
workers = 1
'''


def test_proved_and_cti_expectations_pass_with_junit_and_json(tmp_path, capsys):
    junit = tmp_path / "junit.xml"
    assert _gate(tmp_path, PROVED + CTI_UNREACHED + CTI_REACHABLE, "--junit", str(junit)) == 0
    out = capsys.readouterr().out
    assert "PASS  lagging-strengthened" in out and "-> proved" in out
    assert "cti y-non-negative (unreached)" in out and "cti count-non-negative (reachable)" in out
    suite = ET.parse(junit).getroot()
    assert suite.get("tests") == "3" and suite.get("failures") == "0" and suite.get("errors") == "0"
    text = "".join(e.text or "" for e in suite.iter("system-out"))
    assert "proved:" in text and "not reached within these bounds" in text

    assert _gate(tmp_path, PROVED + CTI_UNREACHED, "--json") == 0
    data = json.loads(capsys.readouterr().out)
    first, second = data["checks"]
    assert first["expect"] == "proved" and first["result"]["result"] == "proved"
    assert second["reachable"] is False and second["result"]["result"] == "cti"


def test_a_changed_verdict_fails_the_check(tmp_path, capsys):
    # y >= 0 alone is not inductive: expecting a proof fails, naming the CTI.
    wrong_proof = CTI_UNREACHED.replace('expect = "cti"', 'expect = "proved"').replace(
        'violated = "y-non-negative"\nreachable = false\n', "")
    junit = tmp_path / "junit.xml"
    assert _gate(tmp_path, wrong_proof, "--junit", str(junit)) == 1
    out = capsys.readouterr().out
    assert "FAIL" in out and "y-non-negative is not: step breaks it" in out
    assert ET.parse(junit).getroot().get("failures") == "1"
    # A proof where a CTI is expected fails too, and so does the wrong reachability.
    assert _gate(tmp_path, PROVED.replace('expect = "proved"', 'expect = "cti"')) == 1
    assert "is proved inductive" in capsys.readouterr().out
    assert _gate(tmp_path, CTI_UNREACHED.replace("reachable = false", "reachable = true")) == 1
    assert "expected the CTI to be reachable" in capsys.readouterr().out


def test_unsupported_construct_is_an_error_not_a_verdict(tmp_path, capsys):
    body = '[checks.bad]\nspec = "provespecs:HashSpec"\ninvariants = ["count-non-negative"]\nexpect = "proved"\nworkers = 1\n'
    assert _gate(tmp_path, body) == 1
    out = capsys.readouterr().out
    assert "ERROR bad" in out and "SymbolicUnsupported" in out and "hash" in out


@pytest.mark.parametrize("body, message", [
    ('expect = "proved"\nreachable = true\n', 'reachable applies only to expect = "cti"'),
    ('expect = "proved"\nmax_states = 5\n', 'max_states does not apply to expect = "proved"'),
    ('expect = "cti"\ntimeout = 0\n', "timeout = 0 is not allowed; allowed: a positive number"),
    ('expect = "cti"\ntimeout = "x"\n', "allowed: an integer or a number"),
    ('expect = "hold"\nreachable = true\n', 'reachable applies only to expect = "proved" or "cti"'),
    ('expect = "maybe"\n', "allowed: hold, violate, proved, cti"),
])
def test_config_errors(tmp_path, capsys, body, message):
    assert _gate(tmp_path, '[checks.x]\nspec = "provespecs:Lagging"\n' + body) == 2
    assert message in capsys.readouterr().err
