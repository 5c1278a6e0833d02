"""The run report in a real headless browser (Debian's chromium through chromedriver).

Opens the page written for a run of real episodes and checks what a person would see: every
section, every image decoded, no console errors (an escaped-away ``<script>`` in the transcripts
would log one if it ran), and no script element at all.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from a01gym.training import report

CHROMEDRIVER = Path("/usr/bin/chromedriver")
SECTIONS = ("training", "evaluation", "breakdown", "expert", "transcripts", "config")


def _unavailable(reason: str) -> None:
    """Fail in CI (``A01GYM_REQUIRE_BROWSER=1``), skip elsewhere."""
    message = f"{reason}; install it with: apt-get install chromium chromium-driver"
    if os.environ.get("A01GYM_REQUIRE_BROWSER") == "1":
        pytest.fail(message)
    pytest.skip(message)


@pytest.fixture
def browser() -> Iterator[Any]:
    """A headless chromium that records every console message."""
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        _unavailable("selenium is not installed (pip install -e '.[dev]')")
    chromium = shutil.which("chromium")
    if chromium is None or not CHROMEDRIVER.is_file():
        _unavailable("chromium or /usr/bin/chromedriver is missing")
    options = webdriver.ChromeOptions()
    options.binary_location = str(chromium)
    for argument in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"):
        options.add_argument(argument)
    options.add_argument("--window-size=1280,1600")
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(options=options, service=Service(str(CHROMEDRIVER)))
    try:
        yield driver
    finally:
        driver.quit()


@pytest.fixture
def page(real_run: Path, tmp_path: Path) -> Path:
    return report.write_html_report(real_run, tmp_path / "report")


def test_report_loads_without_console_errors_and_every_image_renders(
    browser: Any, page: Path
) -> None:
    browser.get(page.as_uri())
    state = browser.execute_script(
        "return {ready: document.readyState,"
        " images: [...document.images].map(i => [i.getAttribute('src'), i.complete,"
        " i.naturalWidth]),"
        " scripts: document.scripts.length,"
        " sections: [...document.querySelectorAll('section[id] > h2')].map(h =>"
        " [h.parentElement.id, h.textContent])}"
    )
    severe = [e for e in browser.get_log("browser") if e["level"] == "SEVERE"]
    assert severe == []
    assert state["ready"] == "complete"
    assert sorted(src for src, _, _ in state["images"]) == [
        "breakdown.png",
        "families.png",
        "training.png",
    ]
    assert all(complete and width > 0 for _, complete, width in state["images"]), state
    assert state["scripts"] == 0
    assert [section for section, _ in state["sections"]] == list(SECTIONS)


def test_report_shows_real_episodes_and_agent_text_as_text(browser: Any, page: Path) -> None:
    from selenium.webdriver.common.by import By

    browser.get(page.as_uri())
    evaluation = browser.find_element(By.ID, "evaluation").text
    assert "noop 2 0 0.000 0% 100% 0% 1.0" in evaluation
    assert "reference 2 0 1.000 100% 100% 100% 2.0" in evaluation
    breakdown = browser.find_element(By.ID, "breakdown").text.splitlines()
    (reference,) = [line for line in breakdown if line.startswith("reference ")]
    assert reference.endswith("1.000 100% 100%")  # reward, exploits blocked, regressions pass
    titles = [
        element.get_attribute("textContent")
        for element in browser.find_elements(By.CSS_SELECTOR, "details.transcript > summary")
    ]
    assert titles[:4] == [
        "noop: seed 0, reward 0.000",
        "noop: seed 1, reward 0.000",
        "reference: seed 0, reward 1.000",
        "reference: seed 1, reward 1.000",
    ]
    assert titles[4].startswith("GRPO step 3 rollout")
    transcripts = browser.find_element(By.ID, "transcripts").get_attribute("textContent")
    assert 'write_file(path="app/routers/notes.py")\ncontent:\n' in transcripts
    assert "+++ b/app/routers/notes.py" in transcripts
    assert '<script>console.error("xss")</script>' in transcripts  # shown, not run
