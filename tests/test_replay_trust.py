"""``trace replay`` imports only bundled specs unless the user names the spec or passes --trust:
a trace file is data from anywhere, and importing the module it names runs that module's code."""

from __future__ import annotations

import json

from kafkamc.cli import main


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_a_trace_naming_an_unbundled_module_is_refused_without_importing_it(tmp_path, capsys, monkeypatch):
    code, _, _ = run(capsys, "check", "toyspecs:Counters", "-p", "limit=2", "--out", str(tmp_path))
    assert code == 1
    # A hostile file: the same trace, naming a module that would leave a mark if it were imported.
    mark = tmp_path / "imported"
    (tmp_path / "evil_replay_module.py").write_text(f"open({str(mark)!r}, 'w').close()\n")
    monkeypatch.chdir(tmp_path)
    for name in ("counters-x-below-limit.trace.json", "counters-x-below-limit.itf.json"):
        path = tmp_path / name
        doc = json.loads(path.read_text())
        if "#meta" in doc:
            doc["#meta"]["spec_ref"] = "evil_replay_module:Counters"
        else:
            doc["spec_ref"] = "evil_replay_module:Counters"
        path.write_text(json.dumps(doc))
        code, out, err = run(capsys, "trace", "replay", str(path))
        assert code == 2 and out == "" and err.count("\n") == 1
        assert "'evil_replay_module:Counters', which is not bundled" in err and "--trust" in err
        assert not mark.exists()
        # show and html never import a spec, even a hostile file's.
        assert run(capsys, "trace", "show", str(path))[0] == 0
        assert run(capsys, "trace", "html", str(path), "-o", str(tmp_path / "v.html"))[0] == 0
        assert not mark.exists()
        # Naming the spec replays against it; the file's reference is not imported.
        code, out, err = run(capsys, "trace", "replay", str(path), "--spec", "toyspecs:Counters")
        assert code == 0 and not mark.exists(), err


def test_trust_imports_the_files_reference(tmp_path, capsys):
    code, _, _ = run(capsys, "check", "toyspecs:Counters", "-p", "limit=2", "--out", str(tmp_path))
    path = tmp_path / "counters-x-below-limit.trace.json"
    code, _, err = run(capsys, "trace", "replay", str(path))
    assert code == 2 and "not bundled" in err
    code, out, err = run(capsys, "trace", "replay", str(path), "--trust")
    assert code == 0 and "reproduced" in out, err


def test_bundled_specs_replay_without_options(tmp_path, capsys):
    code, _, _ = run(capsys, "check", "replication", "-p", "replicas=2", "-p", "truncation=kip101",
                     "--out", str(tmp_path))
    assert code == 1
    (path,) = tmp_path.glob("*.trace.json")
    code, out, err = run(capsys, "trace", "replay", str(path))
    assert code == 0 and out.rstrip().endswith("reproduced"), err
