"""The memory browser in a real browser: headless Chromium (Debian's /usr/bin/chromium), driven by
the playwright pip package, never a downloaded browser. Search, edit, validate and forget, each
checked in the page; the run saves docs/img/browser.png (the screenshot the docs show)."""

from __future__ import annotations

import os
import shutil
import socket
import threading
import time
from pathlib import Path

import pytest

from recallite_core import Recallite

ROOT = Path(__file__).resolve().parents[2]
SCREENSHOT = ROOT / "docs" / "img" / "browser.png"
CHROMIUM = shutil.which("chromium") or ("/usr/bin/chromium" if Path("/usr/bin/chromium").exists() else None)
# What works on a machine with no display and a closed network (see .ci/run).
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]

# CI installs both and sets RECALLITE_BROWSER_TEST=required: there a missing browser is a failure.
REQUIRED = os.environ.get("RECALLITE_BROWSER_TEST") == "required"
try:
    from playwright import sync_api
except ImportError:  # pragma: no cover - depends on the machine
    sync_api = None
MISSING = ("the playwright pip package is not installed (pip install -e '.[test]')" if sync_api is None
           else "no Chromium here: apt-get install chromium (CI does)" if CHROMIUM is None else None)
if MISSING and REQUIRED:
    raise RuntimeError(f"RECALLITE_BROWSER_TEST=required, but {MISSING}")
pytestmark = [pytest.mark.slow, pytest.mark.skipif(MISSING is not None, reason=MISSING or "")]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def served(tmp_path):
    """The ui app on a real socket (uvicorn in a thread) over a seeded store."""
    import uvicorn

    from recallite_mcp.browser.app import build_app
    from recallite_mcp.browser.guard import Guard

    mem = Recallite.open(str(tmp_path / "memory.db"), embedder="hash")
    seeds = {
        "lesson": mem.remember("Run pytest with -x to stop at the first failure; it keeps CI logs short.",
                               type="lesson", tags=["testing", "ci"], scope="shop-api"),
        "rule": mem.remember("Never push to main without a review.", type="constraint", scope="shop-api"),
        "guess": mem.remember("The staging database listens on port 5433.", type="fact", source="llm",
                              scope="shop-api", tags=["db"]),
        "old": mem.remember("Deploys go out on Fridays.", type="fact", scope="shop-api"),
    }
    mem.remember("CI runs the test suite with pytest -q on every push.", type="procedure", scope="shop-api",
                 tags=["ci"])
    mem.remember("Flaky pytest tests are marked slow and retried once in CI.", type="lesson", source="agent",
                 scope="shop-api", tags=["testing"])
    mem.remember("Prefer tabs in Makefiles.", type="preference", scope="user")
    for query, outcome, used in (("pytest failure", "success", "lesson"), ("pytest ci logs", "success", "lesson"),
                                 ("review before push", "failure", None)):
        r = mem.recall(query, scope="shop-api")
        mem.feedback(r.retrieval_id, outcome, used_memory_ids=[seeds[used].id] if used else None)
    port = free_port()
    guard = Guard("127.0.0.1", port)
    server = uvicorn.Server(uvicorn.Config(build_app(mem, guard), host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            pytest.fail("the ui server did not start")
        time.sleep(0.05)
    yield guard, mem, seeds
    server.should_exit = True
    thread.join(timeout=10)
    mem.close()


@pytest.fixture
def page():
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=FLAGS)
        try:
            context = browser.new_context(viewport={"width": 1280, "height": 860})
            yield context.new_page()
        finally:
            browser.close()


def test_search_edit_validate_forget_in_chromium(served, page):
    guard, mem, seeds = served
    page.goto(guard.start_url())
    assert "token" not in page.url  # exchanged for the cookie, dropped from the address bar
    assert page.locator("h1").inner_text() == "Memories"

    # Search: the real recall, with its reasons and the score breakdown.
    page.fill("input[name=q]", "pytest CI failure")
    page.click("button:has-text('Search')")
    first = page.locator("li.hit").first
    assert seeds["lesson"].id in first.inner_text()
    assert first.locator(".reason").count() > 0
    first.locator("summary").click()
    assert first.locator("table.breakdown").is_visible()
    assert "= final" in first.locator("table.breakdown").inner_text()
    page.screenshot(path=str(SCREENSHOT))

    # Edit: a new version; the old one is superseded and listed under Versions.
    first.locator(f"a:has-text('{seeds['lesson'].id}')").first.click()
    page.fill("textarea[name=content]", "Run pytest -x -q: stop at the first failure, keep CI logs short.")
    page.fill("input[name=reason]", "shorter")
    page.click("button:has-text('Save new version')")
    assert "Saved as a new version" in page.locator(".notice").inner_text()
    assert "pytest -x -q" in page.locator("pre.content").inner_text()
    assert seeds["lesson"].id in page.locator("section:has(h2:has-text('Versions'))").inner_text()
    assert mem.get(seeds["lesson"].id).status == "superseded"

    # Validate: the llm's guess becomes validated, through the trust policy.
    page.goto(page.url.split("/memory/")[0] + f"/memory/{seeds['guess'].id}")
    page.click("button:has-text('Activate')")  # refused first: an untrusted candidate
    assert "untrusted source" in page.locator(".error").inner_text()
    page.click("button:has-text('Validate')")
    assert page.locator(".notice").inner_text() == "Validated."
    assert "validated" in page.locator("p .badge.status-validated").inner_text()
    assert mem.get(seeds["guess"].id).status == "validated"

    # Forget: asked first, then gone from the list.
    page.goto(page.url.split("/memory/")[0] + f"/memory/{seeds['old'].id}")
    page.click("button:has-text('Forget…')")
    assert "for good?" in page.locator("main").inner_text()
    page.click(f"button:has-text('Yes, forget {seeds['old'].id}')")
    assert f"Forgot {seeds['old'].id}." in page.locator(".notice").inner_text()
    assert f"/memory/{seeds['old'].id}\"" not in page.content()
    assert "Deploys go out on Fridays" not in page.locator("table.memories").inner_text()

    # The other pages answer in the same session.
    for name in ("Learning", "Health", "Curate"):
        page.click(f"header nav a:has-text('{name}')")
        assert page.locator("h1").inner_text() == name
