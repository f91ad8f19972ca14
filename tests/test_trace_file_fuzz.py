"""Malformed trace files and gate configs: one line on stderr and exit 2, never a traceback, and a
viewer page only from a document that renders (strict JSON inside)."""

from __future__ import annotations

import copy
import json
import os
import tempfile

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafkamc.checker.local import explore
from kafkamc.cli import main
from kafkamc.counterexamples.render import result_to_json

import toyspecs


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture(scope="module")
def good_doc() -> dict:
    doc = result_to_json(explore(toyspecs.Counters(limit=2)))
    assert doc["result"] == "violation" and len(doc["trace"]) == 3
    return doc


def nested(depth: int) -> str:
    return "[" * depth + "1" + "]" * depth


def _with_state_value(doc: dict, raw: str) -> str:
    """The document as JSON text with ``raw`` (JSON text, possibly not valid Python JSON) as x."""
    marker = "__RAW__"
    d = copy.deepcopy(doc)
    d["trace"][1]["state"]["x"] = marker
    return json.dumps(d).replace(json.dumps(marker), raw)


def _with_key(doc: dict, key: str, raw: str) -> str:
    marker = "__RAW__"
    d = copy.deepcopy(doc)
    d[key] = marker
    return json.dumps(d).replace(json.dumps(marker), raw)


def _itf_with(raw: str) -> str:
    return '{"vars": ["x"], "states": [{"x": ' + raw + "}]}"


CASES = [
    (lambda d: _with_state_value(d, "9" * 5000), "an integer of 5,000 digits"),
    (lambda d: _with_state_value(d, "-" + "9" * 4301), "digits (at most 4,300)"),
    (lambda d: _itf_with('{"#bigint": "' + "9" * 5000 + '"}'), "#bigint of 5,000 characters"),
    (lambda d: _with_state_value(d, nested(500)), "nested more than 100 levels deep"),
    (lambda d: _with_state_value(d, nested(1000)), "nested"),
    (lambda d: _with_state_value(d, nested(100_000)), "nested too deeply"),
    (lambda d: _itf_with(nested(600)), "nested"),
    (lambda d: _with_key(d, "spec", '"\\ud800"'), "lone surrogate"),
    (lambda d: _with_key(d, "violated", '"x-below-\\udfff"'), "lone surrogate"),
    (lambda d: _with_state_value(d, '{"\\udc80": 1}'), "a key that is not text"),
    (lambda d: _with_state_value(d, "NaN"), "NaN is not a value a trace holds"),
    (lambda d: _with_state_value(d, "Infinity"), "Infinity is not a value"),
    (lambda d: _with_state_value(d, "-Infinity"), "-Infinity is not a value"),
    (lambda d: _with_state_value(d, "1e999"), "the number 1e999 is out of range"),
    (lambda d: _with_key(d, "seconds", "-1e999"), "out of range"),
    (lambda d: _with_key(d, "invariants", "5"), "'invariants' must be a list of names"),
    (lambda d: _with_key(d, "invariants", '"x-below-limit"'), "'invariants' must be a list of names"),
    (lambda d: _with_key(d, "invariants", "[1, [2]]"), "'invariants' must be a list of names"),
    (lambda d: _with_key(d, "spec", "[1]"), "'spec' must be a string or null"),
    (lambda d: _with_key(d, "violated", "{}"), "'violated' must be a string or null"),
    (lambda d: _with_key(d, "depth", "true"), "'depth' must be an integer or null"),
]


@pytest.mark.parametrize("command", ["show", "replay", "html"])
@pytest.mark.parametrize("index", range(len(CASES)))
def test_malformed_trace_files_are_exit_2_with_one_line(tmp_path, capsys, good_doc, command, index):
    make, needle = CASES[index]
    path = tmp_path / "bad.json"
    path.write_text(make(good_doc), encoding="utf-8")
    extra = ["-o", str(tmp_path / "x.html")] if command == "html" else []
    code, out, err = run(capsys, "trace", command, str(path), *extra)
    assert code == 2 and out == ""
    assert err.startswith("kafkamc: error: ") and err.count("\n") == 1 and needle in err, err
    assert len(err) < 500
    assert not (tmp_path / "x.html").exists()


@pytest.mark.parametrize("command", ["show", "replay", "html"])
def test_non_regular_and_oversized_files_are_refused_without_reading(tmp_path, capsys, command, monkeypatch):
    extra = ["-o", str(tmp_path / "x.html")] if command == "html" else []
    for target in ("/dev/zero", str(tmp_path)):
        if not os.path.exists(target):
            continue
        code, _, err = run(capsys, "trace", command, target, *extra)
        assert code == 2 and err.count("\n") == 1 and "not a regular file" in err
    monkeypatch.setattr("kafkamc.counterexamples.itf.MAX_TRACE_BYTES", 100)
    big = tmp_path / "big.json"
    big.write_text(" " * 101 + "{}")
    code, _, err = run(capsys, "trace", command, str(big), *extra)
    assert code == 2 and err.count("\n") == 1 and "larger than" in err


# -- fuzz: any mutation of a good document is either read or refused in one line ----------------

HOSTILE = st.sampled_from([
    float("nan"), float("inf"), "__BIGINT__", "__DEEP__", "\ud800", "\x1b[2J", [[[[]]]], {"#bigint": "1" * 5000},
    {"#tup": 5}, {"#set": [{"#map": 3}]}, None, True, -1, "", {}, [], {"#unserializable": [1]},
])
JSONISH = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5) | HOSTILE,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=12,
)


def _paths(value, prefix=()):
    yield prefix
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _paths(v, prefix + (k,))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _paths(v, prefix + (i,))


def _replace(doc, path, new):
    if not path:
        return new
    out = copy.deepcopy(doc)
    target = out
    for step in path[:-1]:
        target = target[step]
    target[path[-1]] = new
    return out


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data(), command=st.sampled_from(["show", "html", "replay"]), itf=st.booleans())
def test_fuzzed_trace_files_never_crash(capsys, good_doc, data, command, itf):
    from kafkamc.counterexamples.itf import result_to_itf

    base = result_to_itf(explore(toyspecs.Counters(limit=2))) if itf else good_doc
    paths = list(_paths(base))
    mutated = base
    for _ in range(data.draw(st.integers(1, 3))):
        path = data.draw(st.sampled_from(paths))
        mutated = _replace(mutated, path, data.draw(JSONISH))
        paths = list(_paths(mutated)) if isinstance(mutated, (dict, list)) else [()]
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "t.json")
        with open(path, "w", encoding="utf-8") as fh:
            # NaN and Infinity as JSON writers emit them; an integer no Python str() can make.
            fh.write(json.dumps(mutated, ensure_ascii=True).replace('"__BIGINT__"', "9" * 5000)
                     .replace('"__DEEP__"', nested(data.draw(st.integers(90, 1100)))))
        out_html = os.path.join(tmp, "v.html")
        extra = {"html": ["-o", out_html], "replay": ["--spec", "toyspecs:Counters"]}.get(command, [])
        code, out, err = run(capsys, "trace", command, path, *extra)
        out.encode("utf-8")  # printable as UTF-8: no lone surrogate reached the terminal
        if code == 2:
            assert out == "" and err.startswith("kafkamc: error: ") and err.count("\n") == 1, err
            assert not os.path.exists(out_html)
        else:
            assert code in ((0, 1) if command == "replay" else (0,)), (code, err)
            assert "Traceback" not in err
        if command == "html" and code == 0:
            page = open(out_html, encoding="utf-8").read()
            start = page.index('id="trace-data">') + len('id="trace-data">')
            embedded = page[start:page.index("</script>", start)]

            def strict(name):
                raise AssertionError(f"{name} in the page data: the viewer would be blank")

            json.loads(embedded, parse_constant=strict)


# -- the gate's TOML -------------------------------------------------------------------------------


@pytest.mark.parametrize("text, needle", [
    ('[checks.x]\nspec = "replication"\nexpect = "hold"\nmax_states = ' + "9" * 5000 + "\n",
     "an integer of more than 4,300 digits"),
    ('[checks.x]\nspec = "replication"\nexpect = "hold"\nmax_states = ' + "9" * 4000 + "\n",
     "max_states is too large"),
    ('[checks.x]\nspec = "replication"\nexpect = "hold"\ndescription = ' + "[" * 5000 + "]" * 5000 + "\n",
     "nested too deeply"),
    ('[checks.x]\nspec = "replication"\nexpect = "hold"\nparams = ' + "{a = " * 3000 + "1" + "}" * 3000 + "\n",
     "nested too deeply"),
    ('[checks.x]\nspec = "replication"\nexpect = "hold"\ndescription = ' + "[" * 300 + "]" * 300 + "\n",
     "description = "),
])
def test_hostile_gate_configs_are_exit_2_with_one_line(tmp_path, capsys, text, needle):
    config = tmp_path / "kafkamc.toml"
    config.write_text(text)
    code, out, err = run(capsys, "gate", "--config", str(config))
    assert code == 2 and out == "" and err.count("\n") == 1 and needle in err, err


def test_a_gate_config_that_is_not_a_regular_file(capsys, tmp_path):
    code, _, err = run(capsys, "gate", "--config", str(tmp_path))
    assert code == 2 and "is not a regular file" in err
