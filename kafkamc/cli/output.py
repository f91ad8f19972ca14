"""Writing a counterexample's files: kafkamc JSON, ITF and the HTML viewer."""

from __future__ import annotations

import json
import os

from kafkamc.counterexamples.render import result_to_json
from kafkamc.errors import UsageError
from kafkamc.result import CheckResult
from kafkamc.safewrite import check_output_dir, check_output_file, write_file

__all__ = ["write_trace_file", "write_counterexample", "file_part", "check_counterexample_paths"]


def write_trace_file(result: CheckResult, out_dir: str) -> str | None:
    """Write ``DIR/<spec>-<invariant>.trace.json`` for a violation; returns the path written."""
    if result.trace is None or result.violated is None:
        return None
    path = os.path.join(out_dir, f"{file_part(result.spec)}-{result.violated}.trace.json")
    return write_file(path, json.dumps(result_to_json(result), indent=1) + "\n")


def file_part(spec_name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_" else "_" for c in spec_name)


def write_counterexample(result: CheckResult, out_dir: str | None, html: str | None = None) -> list[str]:
    """Every file a violation produces: JSON and ITF in ``out_dir``; the HTML viewer if asked."""
    written: list[str] = []
    if result.trace is None or result.violated is None:
        return written
    if out_dir:
        path = write_trace_file(result, out_dir)
        if path:
            written.append(path)
        try:
            from kafkamc.counterexamples.itf import write_itf
        except ImportError:
            write_itf = None
        if write_itf is not None:
            path = write_itf(result, out_dir)
            if path:
                written.append(path)
    if html is not None:
        try:
            from kafkamc.counterexamples.html import write_html
        except ImportError:
            raise UsageError("--html: this installation has no HTML trace viewer") from None
        target = html or os.path.join(out_dir or ".", f"{file_part(result.spec)}-{result.violated}.html")
        written.append(write_html(result, target))
    return written


def check_counterexample_paths(out_dir: str | None, html: str | None) -> None:
    """Before exploring: refuse ``--out DIR`` / ``--html [FILE]`` that could not be written."""
    if out_dir is not None:
        check_output_dir(out_dir, "--out")
    if html:
        check_output_file(html, "--html")
    elif html is not None:
        check_output_dir(out_dir or ".", "--html")
