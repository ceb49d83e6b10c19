"""The web page of ``g2gt serve`` driven as a person would: headless Chromium (Debian's ``chromium`` and
``chromium-driver``) through Selenium types text, presses Parse, and the drawn trees are checked against the
model's own parse: one word node per word and one arc per word, from the right head; with "coreference" ticked,
the mentions of each entity in one colour. Screenshots are saved (``$G2GT_TEST_ARTIFACTS`` or the test's
temporary folder)."""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import pytest

from test_serve_harness import LiveServer

from g2gt.serve.adapter import load_models
from g2gt.serve.app import ServeConfig, create_app
from g2gt.core.registry import DEFAULT_MODEL

webdriver = pytest.importorskip("selenium.webdriver", reason="the browser test needs selenium (pip install selenium)")
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
DRIVER = shutil.which("chromedriver")
pytestmark = pytest.mark.skipif(not (CHROMIUM and DRIVER), reason="needs Debian's chromium and chromium-driver "
                                "(apt-get install -y chromium chromium-driver; .ci/run installs them)")

TEXT = "The dog that barked ran away. I don't think it will rain tomorrow."


@pytest.fixture(scope="module")
def models():
    return load_models([DEFAULT_MODEL])


@pytest.fixture(scope="module")
def server(models):
    with LiveServer(create_app(models)) as live:
        yield live


@pytest.fixture
def browser(tmp_path):
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                "--disable-background-networking", "--disable-component-update", "--disable-sync",
                "--disable-dev-shm-usage", "--window-size=1000,1100", f"--user-data-dir={tmp_path / 'profile'}"):
        options.add_argument(arg)
    driver = webdriver.Chrome(service=Service(DRIVER), options=options)
    driver.set_page_load_timeout(60)
    try:
        yield driver
    finally:
        driver.quit()


def _arcs(svg) -> set[tuple[int, int]]:
    """``(head, dependent)`` pairs (1-based, head 0 = root) read off the drawing's geometry: each arc starts
    near its head's word and ends near its dependent's."""
    from selenium.webdriver.common.by import By

    centers = [float(w.get_attribute("x")) for w in svg.find_elements(By.CSS_SELECTOR, "text.word")]

    def nearest(x: float) -> int:
        return 1 + min(range(len(centers)), key=lambda i: abs(centers[i] - x))

    pairs = set()
    for path in svg.find_elements(By.CSS_SELECTOR, "path.arc"):
        xs = [float(v) for v in re.findall(r"-?\d+(?:\.\d+)?", path.get_attribute("d"))][0::2]
        if "root" in path.get_attribute("class"):
            pairs.add((0, nearest(xs[0])))
        else:
            pairs.add((nearest(xs[0]), nearest(xs[-1])))
    return pairs


def test_page_parses_text_and_draws_the_right_trees(server, models, browser, tmp_path):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait

    wait = WebDriverWait(browser, 60)
    browser.get(server.url + "/")
    wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "#model option"))
    box = browser.find_element(By.ID, "text")
    box.clear()
    box.send_keys(TEXT)
    browser.find_element(By.ID, "enhanced").click()
    browser.find_element(By.ID, "parse").click()
    wait.until(ec.text_to_be_present_in_element((By.ID, "status"), "words"))

    expected = models[DEFAULT_MODEL].nlp(TEXT)
    sections = browser.find_elements(By.CSS_SELECTOR, "#results section.sentence")
    assert len(sections) == len(expected) == 2
    for section, sent in zip(sections, expected):
        assert section.text.count(sent.text) == 1  # the heading shows the text; the drawing does not repeat it
        svg = section.find_element(By.CSS_SELECTOR, ".tree svg")
        words = [w.text for w in svg.find_elements(By.CSS_SELECTOR, "text.word")]
        assert words == sent.forms  # one node per word, in order
        assert len(svg.find_elements(By.CSS_SELECTOR, "path.arc")) == len(sent)  # one arc per word
        assert _arcs(svg) == {(h, d) for d, h in enumerate(sent.heads, 1)}
        labels = sorted(t.text for t in svg.find_elements(By.CSS_SELECTOR, "text.label"))
        assert labels == sorted(sent.deprels)
        rows = section.find_elements(By.CSS_SELECTOR, "table.columns tr.word")
        assert [r.find_elements(By.TAG_NAME, "td")[6].text for r in rows] == [str(h) for h in sent.heads]
        graph = section.find_element(By.CSS_SELECTOR, ".enhanced svg.graph-enhanced")
        assert len(graph.find_elements(By.CSS_SELECTOR, "text.word")) >= len(sent)
    assert section.find_elements(By.CSS_SELECTOR, "tr.mwt")  # don't = do + n't has its own row
    href = browser.find_element(By.ID, "download").get_attribute("href")
    assert href.startswith("blob:")

    out = Path(os.environ.get("G2GT_TEST_ARTIFACTS") or tmp_path)
    out.mkdir(parents=True, exist_ok=True)
    shot = out / "serve_page.png"
    assert browser.save_screenshot(str(shot)) and shot.stat().st_size > 1000


def test_page_colours_the_mentions_of_each_entity(server, models, browser, tmp_path):
    """With "coreference" ticked, the text comes back with every mention of an entity with two or more mentions
    in that entity's colour (one colour per entity, its id and type on hover), singletons uncoloured, and the
    trees carry the same colours as bars under the words."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    text = "Mary called her brother John. He told Mary that he was tired."  # "her" nested in "her brother"
    wait = WebDriverWait(browser, 60)
    browser.get(server.url + "/")
    wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "#model option"))
    box = browser.find_element(By.ID, "text")
    box.clear()
    box.send_keys(text)
    browser.find_element(By.ID, "coref").click()
    browser.find_element(By.ID, "parse").click()
    wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "#results section.coref"))

    entities = models[DEFAULT_MODEL].nlp(text, coref=True).to_dict()["entities"]
    shared = {e["id"]: e for e in entities if len(e["mentions"]) >= 2}
    assert len(shared) >= 2, "the model should find two entities with two or more mentions here"
    panel = browser.find_element(By.CSS_SELECTOR, "section.coref .coref-text")
    assert panel.text == text  # the text as typed, mentions marked inside it
    spans = panel.find_elements(By.CSS_SELECTOR, "span.mention")
    colour: dict[str, set[str]] = {}
    for span in spans:
        colour.setdefault(span.get_attribute("data-entity"), set()).add(span.value_of_css_property("border-bottom-color"))
        e = shared[span.get_attribute("data-entity")]  # only entities with two or more mentions are coloured
        assert span.get_attribute("title").startswith(f"entity {e['id']} ({e['type']})")
    assert set(colour) == set(shared)
    assert sorted(s.text for s in spans) == sorted(m["text"] for e in shared.values() for m in e["mentions"])
    assert all(len(c) == 1 for c in colour.values())  # one colour per entity ...
    assert len({next(iter(c)) for c in colour.values()}) == len(colour)  # ... and a different one for each
    assert all(next(iter(c)) not in ("rgba(0, 0, 0, 0)", "rgb(0, 0, 0)") for c in colour.values())
    bars = browser.find_elements(By.CSS_SELECTOR, "section.sentence .tree svg g.mention")
    assert {b.get_attribute("data-entity") for b in bars} == set(shared)

    out = Path(os.environ.get("G2GT_TEST_ARTIFACTS") or tmp_path)
    out.mkdir(parents=True, exist_ok=True)
    assert browser.save_screenshot(str(out / "serve_page_coref.png"))


def test_page_shows_a_server_error(models, browser):
    """An answer that is not 200 from the server itself (the body over the server's size limit, 413) is shown
    with its status and the server's message, and no trees are left on the page."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait

    with LiveServer(create_app(models, ServeConfig(max_body_bytes=300))) as small:
        browser.get(small.url + "/")
        WebDriverWait(browser, 60).until(lambda d: d.find_elements(By.CSS_SELECTOR, "#model option"))
        box = browser.find_element(By.ID, "text")
        box.clear()
        box.send_keys("The dog barked. " * 30)  # about 500 bytes of JSON: over the limit
        browser.find_element(By.ID, "parse").click()
        WebDriverWait(browser, 60).until(ec.visibility_of_element_located((By.ID, "error")))
        message = browser.find_element(By.ID, "error").text
    assert message.startswith("413: ") and "request body too large" in message and "300 bytes" in message
    assert not browser.find_elements(By.CSS_SELECTOR, "section.sentence")


def test_page_asks_for_text_before_sending_anything(server, browser):
    """Nothing typed: the page says so itself, without a request."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait

    browser.get(server.url + "/")
    WebDriverWait(browser, 60).until(lambda d: d.find_elements(By.CSS_SELECTOR, "#model option"))
    browser.find_element(By.ID, "parse").click()  # nothing typed
    WebDriverWait(browser, 30).until(ec.visibility_of_element_located((By.ID, "error")))
    assert "Type some text" in browser.find_element(By.ID, "error").text
