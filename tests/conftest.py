"""On CI (``.ci/run`` sets ``CI``), hypothesis draws the same examples on every run: a submission
lands or not on its own code, not on the draw. Elsewhere each run draws afresh."""

from __future__ import annotations

import os

from hypothesis import settings

settings.register_profile("ci", derandomize=True)
if os.environ.get("CI"):
    settings.load_profile("ci")
