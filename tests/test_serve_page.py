"""The chat page in a real browser: Debian's headless Chromium driven by Playwright asks a question
on a phone-sized screen, reads the streamed answer and opens a source; the screenshot is kept in
benchmarks/results/serve_chat_page.png."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from .conftest import DIRECTOR, FILM, ROOT
from .serve_helpers import TOKEN, Server, copy_index, small_profile

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run"]
SCREENSHOT = ROOT / "benchmarks" / "results" / "serve_chat_page.png"
DIALOGUE_SCREENSHOT = ROOT / "benchmarks" / "results" / "serve_chat_dialogue.png"
PLUMBER = "Who arranged for a plumber to fix the water tap at Li Hua's place in January?"
FOLLOW_UP = "When does he confirm the plumber will arrive?"
QUESTION = "When does Li Hua check in with Adam about moving in?"
COUNT_UPDATES = """() => { window.updates = 0;
  new MutationObserver(() => window.updates++).observe(document.getElementById('log'),
    {subtree: true, childList: true, characterData: true}); }"""


@pytest.fixture()
def chromium():
    """Playwright's Chromium driver pointed at the Debian executable (never a downloaded one)."""
    if not Path(CHROMIUM).is_file():
        pytest.skip("no Chromium: apt-get install chromium (export/bootstrap.sh dev does, as root)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as driver:
        browser = driver.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        yield browser
        browser.close()


def test_the_chat_page_streams_an_answer_and_shows_its_sources(chromium, lihua_index: Path,
                                                               tmp_path: Path) -> None:
    server = Server(copy_index(lihua_index, tmp_path), small_profile(tmp_path))
    try:
        page = chromium.new_page(viewport={"width": 390, "height": 780}, device_scale_factor=2,
                                 is_mobile=True, has_touch=True)
        page.goto(server.url + "/")
        page.fill("#question", QUESTION)
        page.click("#send")  # no token yet: the page says so and asks for one
        page.wait_for_selector(".answer.error")
        assert "unauthorized" in page.inner_text(".answer.error")
        assert page.is_visible("#token")
        page.fill("#token", TOKEN)  # kept in the browser's local storage
        page.reload()
        page.evaluate(COUNT_UPDATES)
        page.fill("#question", QUESTION)
        page.click("#send")
        page.wait_for_selector("section.turn[data-done='true']", timeout=300_000)
        turn = page.locator("section.turn").first
        answer = turn.locator(".answer").inner_text()
        assert answer.strip() and page.evaluate("window.updates") > 3  # the text came in pieces
        summary = turn.locator(".sources summary").first
        assert summary.inner_text().startswith("[1] ")
        quoted = turn.locator(".sources summary.cited").first  # the line a citation stands on
        assert ", line " in quoted.inner_text() and "\u201c" in quoted.inner_text()
        summary.click()
        cited = turn.locator(".sources pre").first
        assert cited.is_visible() and cited.inner_text().strip()
        assert "method vector" in turn.locator(".meta").inner_text()
        for text, source in ((FILM, "film.txt"), (DIRECTOR, "quill.txt")):  # a bridge question's passages
            assert server.request("POST", "/v1/documents", {"text": text, "source": source}).status == 201
        page.fill("#question", "Where was the director of film Harbor Lights born?")
        page.click("#send")
        page.wait_for_selector("section.turn:nth-of-type(2)[data-done='true']", timeout=300_000)
        second = page.locator("section.turn").nth(1)
        assert "Turkey" not in second.locator(".answer").inner_text()  # only what a source says
        hops = second.locator(".hops li").first.inner_text()
        assert hops.startswith("asked first: Who is the director of film Harbor Lights? → Mara Quill")
        SCREENSHOT.parent.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SCREENSHOT), full_page=True)
    finally:
        assert server.stop() == 0


def test_the_chat_page_holds_a_conversation_and_starts_a_new_one(chromium, lihua_index: Path,
                                                                tmp_path: Path) -> None:
    server = Server(copy_index(lihua_index, tmp_path), small_profile(tmp_path), token=None)
    try:
        page = chromium.new_page(viewport={"width": 390, "height": 780}, device_scale_factor=2,
                                 is_mobile=True, has_touch=True)
        page.goto(server.url + "/")
        page.select_option("#method", "auto")
        for n, question in enumerate((PLUMBER, FOLLOW_UP), 1):
            page.fill("#question", question)
            page.click("#send")
            page.wait_for_selector(f"section.turn:nth-of-type({n})[data-done='true']", timeout=300_000)
        turns = page.locator("section.turn")
        assert turns.count() == 2 and turns.nth(0).locator(".understood").count() == 0
        understood = turns.nth(1).locator(".understood").inner_text()
        assert understood.startswith("understood as: ") and "plumber to fix the water tap" in understood
        assert turns.nth(1).locator(".answer").inner_text().strip()
        DIALOGUE_SCREENSHOT.parent.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(DIALOGUE_SCREENSHOT), full_page=True)
        page.click("#new")
        assert page.locator("section.turn").count() == 0
        page.fill("#question", FOLLOW_UP)  # alone now: nothing to lean on, read as it is
        page.click("#send")
        page.wait_for_selector("section.turn[data-done='true']", timeout=300_000)
        assert page.locator("section.turn").count() == 1 and page.locator(".understood").count() == 0
    finally:
        assert server.stop() == 0
