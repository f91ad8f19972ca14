"""What an installation holds: a small base, pyspark as the ``spark`` extra, the viewer's assets
as package data; and what ``--engine spark`` says when pyspark is not installed."""

from __future__ import annotations

import sys
import tomllib
from pathlib import Path

from kafkamc.cli import main

ROOT = Path(__file__).resolve().parent.parent


def _project() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]


def _names(requirements: list[str]) -> set[str]:
    return {r.split("[")[0].split(">")[0].split("=")[0].split("<")[0].strip().lower() for r in requirements}


def test_pyspark_is_the_spark_extra_and_the_test_extra_includes_it():
    project = _project()
    base = _names(project["dependencies"])
    assert "pyspark" not in base, base
    assert "z3-solver" in base  # kafkamc prove is part of the base install
    assert "numpy" in base  # the local engine's fingerprint table
    extras = project["optional-dependencies"]
    assert "pyspark" in _names(extras["spark"])
    assert "kafkamc[spark]" in extras["test"]


def _without_pyspark(monkeypatch):
    monkeypatch.setitem(sys.modules, "pyspark", None)  # makes `import pyspark` raise ImportError


def test_check_engine_spark_without_pyspark_is_one_line_exit_2(monkeypatch, capsys):
    _without_pyspark(monkeypatch)
    code = main(["check", "toyspecs:Counters", "--engine", "spark"])
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    assert err.count("\n") == 1
    assert "--engine spark needs pyspark" in err and "pip install 'kafkamc[spark]'" in err


def test_gate_with_a_spark_check_without_pyspark_is_one_line_exit_2(monkeypatch, capsys, tmp_path):
    _without_pyspark(monkeypatch)
    config = tmp_path / "kafkamc.toml"
    config.write_text('[checks.local]\nspec = "toyspecs:Counters"\nexpect = "hold"\n\n'
                      '[checks.big]\nspec = "toyspecs:Counters"\nengine = "spark"\nexpect = "hold"\n')
    code = main(["gate", "--config", str(config)])
    out, err = capsys.readouterr()
    assert code == 2 and err.count("\n") == 1
    assert 'check big uses engine = "spark"' in err and "pip install 'kafkamc[spark]'" in err
    # A selection without the Spark check runs.
    assert main(["gate", "--config", str(config), "--only", "local"]) == 0


def test_the_viewer_css_and_script_are_package_data_files_not_python_strings():
    from kafkamc.counterexamples import html

    viewer = ROOT / "kafkamc" / "counterexamples" / "viewer"
    for name in ("viewer.css", "viewer.js", "viewer.html"):
        text = (viewer / name).read_text(encoding="utf-8")
        assert text.strip() and html.viewer_asset(name) == text
    patterns = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"][
        "package-data"]["kafkamc.counterexamples"]
    assert {"viewer/*.css", "viewer/*.js", "viewer/*.html"} <= set(patterns)
    source = Path(html.__file__).read_text(encoding="utf-8")
    assert "function (" not in source and "border-collapse" not in source
    page = html.render_html({"schema": 1, "trace": [{"action": None, "state": {"x": 1}}]})
    assert html.viewer_asset("viewer.js") in page and html.viewer_asset("viewer.css") in page
