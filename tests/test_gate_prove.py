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


INFERRED = '''
[checks.lagging-inferred]
description = "y >= 0 with the auxiliaries inferred"
spec = "provespecs:Lagging"
invariants = ["y-non-negative"]
expect = "proved"
infer = true
workers = 1
'''


def test_infer_check_proves_with_inferred_invariants_junit_and_json(tmp_path, capsys):
    # y >= 0 alone is not inductive (CTI_UNREACHED above); with infer = true the check passes.
    junit = tmp_path / "junit.xml"
    assert _gate(tmp_path, INFERRED, "--junit", str(junit)) == 0
    out = capsys.readouterr().out
    assert "PASS  lagging-inferred" in out and "proved (infer)" in out and "-> proved (" in out
    suite = ET.parse(junit).getroot()
    assert suite.get("tests") == "1" and suite.get("failures") == "0" and suite.get("errors") == "0"
    text = "".join(e.text or "" for e in suite.iter("system-out"))
    assert "infer: " in text and "true on" in text and "proved: y-non-negative" in text
    assert "@invariant('x-ge-0'" in text  # the inferred module, as prove --infer prints it
    assert _gate(tmp_path, INFERRED, "--json") == 0
    (check,) = json.loads(capsys.readouterr().out)["checks"]
    assert check["infer"] is True and check["result"]["result"] == "proved"
    assert check["inferred"]["result"] == "proved" and check["inferred"]["inferred"]
    assert {"name": "x-ge-0", "expr": "s.x >= 0"} in check["inferred"]["inferred"]


def test_infer_check_fails_when_no_candidate_saves_a_target(tmp_path, capsys):
    body = INFERRED.replace("Lagging", "Counter1000").replace("y-non-negative", "count-non-negative")
    junit = tmp_path / "junit.xml"
    assert _gate(tmp_path, body, "--junit", str(junit)) == 1
    out = capsys.readouterr().out
    assert "FAIL  lagging-inferred" in out and "cti count-non-negative (reachable)" in out
    assert "count-non-negative is implied by no subset of the" in out and "(reachable: a real violation)" in out
    assert ET.parse(junit).getroot().get("failures") == "1"


def test_infer_check_that_leaves_the_domain_is_unknown_never_proved(tmp_path, capsys):
    (tmp_path / "leavingspec.py").write_text(
        "from test_infer import Leaving\n")  # a spec next to the config, as module:Class
    body = INFERRED.replace("provespecs:Lagging", "leavingspec:Leaving").replace("y-non-negative",
                                                                                "y-stays-non-negative")
    assert _gate(tmp_path, body) == 1
    out = capsys.readouterr().out
    assert "FAIL  lagging-inferred" in out and "-> unknown" in out
    assert "the domain is left (type-ok) by leave" in out and "never read as a proof" in out


@pytest.mark.parametrize("body, message", [
    ('expect = "cti"\ninfer = true\n', 'infer applies only to expect = "proved"'),
    ('expect = "hold"\ninfer = true\n', 'infer applies only to expect = "proved" or "cti"'),
    ('expect = "proved"\ninfer = "yes"\n', "infer"),
])
def test_infer_config_errors(tmp_path, capsys, body, message):
    assert _gate(tmp_path, '[checks.x]\nspec = "provespecs:Lagging"\ninvariants = ["y-non-negative"]\n' + body) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1
