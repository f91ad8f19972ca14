"""Control characters, ANSI escapes and other non-printables from a spec (labels, exception
messages) or from the command line are escaped in every text output: check, gate, simulate."""

from __future__ import annotations

import re

import pytest

from kafkamc.cli import main
from kafkamc.terminal import printable, printable_lines

# Anything a terminal acts on or cannot encode, other than the line breaks of the output itself.
UNSAFE = re.compile(r"[\x00-\x09\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def assert_inert(text: str) -> None:
    assert not UNSAFE.search(text), repr(UNSAFE.search(text))
    assert "\nok: every reachable state satisfies everything" not in text  # no line was forged


def test_printable_escapes_like_json():
    assert printable("a\x1b[31mb\nc") == "a\\u001b[31mb\\nc"
    assert printable("\ud800") == "\\ud800"
    assert printable_lines("a\x07\nb") == "a\\u0007\nb"
    assert printable("plain (text), ok") == "plain (text), ok"


def test_check_escapes_labels_and_parameters(capsys):
    code, out, err = run(capsys, "check", "malformedspecs:HostileLabels", "-p", "tag=\x1b[5m")
    assert code == 1
    assert_inert(out + err)
    assert "Step(\\u001b]0;pwned\\u0007" in out and "\\nok: every reachable" in out
    assert "tag=\\u001b[5m" in out


def test_check_escapes_exception_messages_on_one_line(capsys):
    code, out, err = run(capsys, "check", "malformedspecs:HostileRaise")
    assert code == 3 and out == ""
    assert_inert(err)
    assert err.count("\n") == 1 and "action step raised ValueError: bad \\u001b]0;pwned" in err


def test_usage_errors_are_escaped(capsys):
    code, _, err = run(capsys, "check", "replication", "-p", "truncation=\x1b[2J\nkip320")
    assert code == 2 and err.count("\n") == 1
    assert_inert(err)


def test_simulate_escapes_labels(capsys):
    code, out, err = run(capsys, "simulate", "malformedspecs:HostileLabels", "--runs", "5", "--seed", "1",
                         "--no-database")
    assert code == 1
    assert_inert(out + err)
    assert "Step(\\u001b]0;pwned" in out


@pytest.mark.parametrize("spec, expect", [("HostileLabels", "hold"), ("HostileRaise", "hold")])
def test_gate_escapes_labels_and_errors(tmp_path, capsys, spec, expect):
    config = tmp_path / "kafkamc.toml"
    config.write_text(f'[checks.c]\nspec = "malformedspecs:{spec}"\nexpect = "{expect}"\n')
    code, out, err = run(capsys, "gate", "--config", str(config), "--out", str(tmp_path / "o"))
    assert code == 1
    assert_inert(out + err)
    if spec == "HostileRaise":
        assert "ValueError: bad \\u001b]0;pwned" in out
