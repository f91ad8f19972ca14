"""The HTML viewer marks a lasso's cycle, in a real browser (skipped without Chromium)."""

from __future__ import annotations

from kafkamc.checker.liveness import check_liveness, resolve_fairness
from kafkamc.counterexamples.html import write_html
from livenesstoys import Spinner
from test_viewer_browser import Viewer, browser  # noqa: F401  (the browser fixture)


def test_the_cycle_is_marked(browser, tmp_path):  # noqa: F811
    spec = Spinner(size=3)
    r = check_liveness(spec, (), [Spinner.liveness_named("finishes")],
                       resolve_fairness(Spinner, fair=["spin"], no_fairness=True))
    path = str(tmp_path / "lasso.html")
    write_html(r, path)
    view = Viewer(browser, path)
    verdict = view.page.text_content("#verdict")
    assert "finishes" in verdict and "steps 1 to 3 repeat forever" in verdict and "Spin(x=0) leads back to step 1" in verdict
    cycle = view.page.eval_on_selector_all("#step-list li.cycle", "ls => ls.map(l => l.id)")
    assert cycle == ["item-1", "item-2", "item-3"]
    assert view.page.text_content("#item-1 .loopmark") == "\u21bb the cycle starts here, and repeats"
    assert view.page.eval_on_selector_all("#step-list li.failing", "ls => ls.length") == 0
    view.close()
