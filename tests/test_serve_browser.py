"""The restoration page in a real browser: headless Chromium (Debian's ``chromium`` and
``chromium-driver``, which ``.ci/run`` installs when missing) driven with Selenium against
``stoicheia serve``'s application on a local port.

With ``STOICHEIA_SCREENSHOT=PATH`` the test also writes a small PNG of the page restoring an
I.Sicily inscription (the README's picture: ``STOICHEIA_SCREENSHOT=docs/img/serve.png``;
``STOICHEIA_SERVE_CHECKPOINT`` picks a trained model for it)."""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import sys
import threading
import time
import unicodedata
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from serve_model import THREE_GAPS, TWO_PIECES, serve_model  # noqa: E402

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
REPO = Path(__file__).resolve().parents[1]


def _browser_missing() -> str | None:
    missing = [p for p in (CHROMIUM, CHROMEDRIVER) if not Path(p).exists()]
    if not missing:
        return None
    return (
        f"{' and '.join(missing)} missing: apt-get install chromium chromium-driver (.ci/run does)"
    )


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """The app on 127.0.0.1:<free port> in a uvicorn thread; yields (base URL, model)."""
    from stoicheia.serve.app import create_app

    model = serve_model(tmp_path_factory.mktemp("serve-browser"))
    for base in _serving(create_app(model)):
        yield base, model


def _serving(app):
    """Serve ``app`` on 127.0.0.1:<free port> in a uvicorn thread; yields the base URL once."""
    import uvicorn

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    srv = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=srv.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 60
    while not srv.started:
        if time.monotonic() > deadline or not thread.is_alive():
            pytest.fail("the test server did not start within 60 s")
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        srv.should_exit = True
        thread.join(timeout=30)


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    why = _browser_missing()
    if why:
        if os.environ.get("CI"):
            pytest.fail(why)  # CI installs them: missing there is a failure, not a skip
        pytest.skip(why)
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for flag in (
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--no-first-run",
        "--disable-sync",
        "--disable-dev-shm-usage",
        "--window-size=1000,900",
        "--force-device-scale-factor=1",
        "--hide-scrollbars",
        f"--user-data-dir={tmp_path_factory.mktemp('chromium-profile')}",
    ):
        opts.add_argument(flag)
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=opts)
    driver.set_page_load_timeout(60)
    driver.set_script_timeout(30)
    yield driver
    driver.quit()


def _open(browser, base: str) -> None:
    from selenium.webdriver.support.ui import WebDriverWait

    browser.get(base + "/")
    browser.execute_cdp_cmd(
        "Browser.grantPermissions",
        {"origin": base, "permissions": ["clipboardReadWrite", "clipboardSanitizedWrite"]},
    )
    WebDriverWait(browser, 30).until(
        lambda d: d.find_elements("css selector", "#examples button.example")
    )


def _restore(browser, text: str | None, top_k: int = 3) -> None:
    """Type ``text`` (or keep the text area's), set top-k, press Restore, wait for the answer."""
    from selenium.webdriver.support.ui import WebDriverWait

    box = browser.find_element("id", "text")
    if text is not None:
        box.clear()
        box.send_keys(text)
    k = browser.find_element("id", "top-k")
    k.clear()
    k.send_keys(str(top_k))
    browser.execute_script(
        "document.getElementById('result').hidden = true;"
        "document.getElementById('error').hidden = true;"
    )
    browser.find_element("id", "restore").click()
    WebDriverWait(browser, 180).until(
        lambda d: (
            d.find_element("id", "result").is_displayed()
            or d.find_element("id", "error").is_displayed()
        )
    )


def _api(base: str, body: dict) -> dict:
    import httpx

    r = httpx.post(base + "/restore", json=body, timeout=180)
    assert r.status_code == 200, r.text
    return r.json()


def test_restore_shade_and_copy_in_the_browser(server, browser):
    base, _ = server
    _open(browser, base)
    _restore(browser, THREE_GAPS)
    assert not browser.find_element("id", "error").is_displayed()
    want = _api(base, {"text": THREE_GAPS, "top_k": 3})
    # the shaded letters: one span per restored letter, carrying its probability
    spans = browser.find_elements("css selector", "#restored span.fill")
    shown = [
        (s.text, float(s.get_attribute("data-p")), int(s.get_attribute("data-gap"))) for s in spans
    ]
    expected = []
    for g in want["gaps"]:
        letters = [
            c
            for c in unicodedata.normalize("NFC", g["fill"])
            if unicodedata.category(c).startswith("L")
        ]
        expected += [(c, p, g["index"]) for c, p in zip(letters, g["letter_probs"], strict=True)]
    assert [(unicodedata.normalize("NFD", t)[0], g) for t, _, g in shown] == [
        (unicodedata.normalize("NFD", c)[0], g) for c, _, g in expected
    ]
    assert [p for _, p, _ in shown] == pytest.approx([p for _, p, _ in expected], abs=1e-4)
    # shading follows the probability: a more probable letter has a more opaque background
    alpha = {
        round(float(s.get_attribute("data-p")), 4): browser.execute_script(
            "return getComputedStyle(arguments[0]).backgroundColor", s
        )
        for s in spans
    }
    lo, hi = min(alpha), max(alpha)
    if hi - lo >= 0.002:  # the page shades in steps of 0.001 (--p has 3 decimals)
        assert alpha[lo] != alpha[hi]
    assert (
        browser.find_element("id", "restored").text.replace("\u0323", "").startswith("καὶ τοῦ δή[")
    )
    # the three gaps in the table, the widths of the two uncertain ones drawn
    rows = browser.find_elements("css selector", "#gaps tbody tr")
    assert [r.find_elements("tag name", "td")[1].text for r in rows] == [
        "[....]",
        "[-ca.6-]",
        "[---]",
    ]
    assert [len(r.find_elements("css selector", ".widths .col")) > 0 for r in rows] == [
        False,
        True,
        True,
    ]
    assert len(browser.find_elements("css selector", "#restorations li")) == 3
    # Copy as Leiden: the clipboard holds the best restoration's Leiden text
    browser.find_element("id", "copy-leiden").click()
    clip = browser.execute_async_script(
        "const done = arguments[arguments.length - 1];"
        "navigator.clipboard.readText().then(done, (e) => done('ERROR ' + e));"
    )
    assert clip == want["restorations"][0]["text"]
    assert browser.find_element("id", "copied").get_attribute("value") == clip
    assert browser.find_element("id", "copy-status").text == "copied Leiden"
    # choosing the second whole-text restoration, then Copy as EpiDoc
    browser.find_elements("css selector", "#restorations li")[1].click()
    browser.find_element("id", "copy-epidoc").click()
    clip = browser.execute_async_script(
        "const done = arguments[arguments.length - 1];"
        "navigator.clipboard.readText().then(done, (e) => done('ERROR ' + e));"
    )
    assert clip == want["epidoc"][1] and clip.startswith('<ab xml:space="preserve">')


def test_respace_shows_the_models_text(server, browser):
    base, _ = server
    _open(browser, base)
    browser.find_element("id", "respace").click()
    try:
        _restore(browser, "ΚΑΙΤΟΥΔΗ[..]ΤΟΥΕΑΥΤΟΥ", top_k=2)
        want = _api(base, {"text": "ΚΑΙΤΟΥΔΗ[..]ΤΟΥΕΑΥΤΟΥ", "top_k": 2, "respace": True})
        shown = browser.find_element("id", "restored").text
        assert shown == unicodedata.normalize("NFC", want["respaced"][0])
        assert "respaced by the model" in browser.find_element("id", "shown-rank").text
        # its note names the box, not the command line's option, nor the model's "planes"
        notes = browser.find_element("id", "notes").text
        assert "respace rebuilds the text from the model's predictions, in lower case" in notes
        assert "--respace" not in notes and "planes" not in notes, notes
        browser.find_element("id", "copy-leiden").click()
        assert browser.find_element("id", "copied").get_attribute("value") == want["respaced"][0]
    finally:
        browser.find_element("id", "respace").click()


def test_epidoc_upload_downloads_the_restored_file(server, browser, corpus_root, tmp_path):
    from selenium.webdriver.support.ui import WebDriverWait

    import stoicheia

    if not hasattr(stoicheia, "restore_epidoc"):
        pytest.skip(
            "stoicheia.restore_epidoc is not in this checkout (the page disables the upload)"
        )
    base, _ = server
    _open(browser, base)
    downloads = tmp_path / "downloads"
    downloads.mkdir()
    browser.execute_cdp_cmd(
        "Browser.setDownloadBehavior", {"behavior": "allow", "downloadPath": str(downloads)}
    )
    src = corpus_root / "isicily" / "inscriptions" / "ISic003084.xml"
    browser.find_element("id", "epidoc-file").send_keys(str(src))
    browser.find_element("id", "epidoc-restore").click()
    got = downloads / "ISic003084.restored.xml"
    WebDriverWait(browser, 180).until(
        lambda d: (
            got.is_file()
            and got.stat().st_size > 0
            or d.find_element("id", "epidoc-error").is_displayed()
        )
    )
    assert not browser.find_element("id", "epidoc-error").is_displayed()
    data = got.read_bytes()
    assert data != src.read_bytes() and b'resp="#stoicheia"' in data
    assert re.fullmatch(  # every count (X-Stoicheia-Gaps), and why gaps were left, counted
        r"downloaded \(gaps: restored [1-9]\d*, left (0|[1-9]\d* \(.+: \d+\)), "
        r"refused (0|\d+ \(.+\))\)",
        browser.find_element("id", "epidoc-status").text,
    ), browser.find_element("id", "epidoc-status").text
    # a file that is not XML: the one line, next to the upload
    bad = tmp_path / "bad.xml"
    bad.write_text("<notxml", encoding="utf-8")
    browser.find_element("id", "epidoc-file").send_keys(str(bad))
    browser.find_element("id", "epidoc-restore").click()
    WebDriverWait(browser, 60).until(lambda d: d.find_element("id", "epidoc-error").is_displayed())
    assert "malformed XML" in browser.find_element("id", "epidoc-error").text


def test_bad_input_shows_the_one_line_message(server, browser):
    base, _ = server
    _open(browser, base)
    _restore(browser, "καὶ [τοῦ")
    error = browser.find_element("id", "error")
    assert error.is_displayed()
    assert error.text.startswith("Leiden notation at character 4: '[' is never closed; add ']'")
    assert "Traceback" not in browser.page_source
    assert "bad" in browser.find_element("id", "text").get_attribute("class")
    _restore(browser, "καὶ [..]", top_k=1)  # fixing it clears the message
    assert not browser.find_element("id", "error").is_displayed()
    assert browser.find_element("id", "result").is_displayed()
    _restore(browser, "καὶ [τοῦ")  # a new error hides the restoration of the text before
    assert browser.find_element("id", "error").is_displayed()
    assert not browser.find_element("id", "result").is_displayed()
    # the API's advice names the request's field ("respace": true), the page its checkbox
    _restore(browser, "καὶ τοῦ")
    assert browser.find_element("id", "error").text.endswith(
        "; tick respace to predict word division, accents and punctuation, or tick accents "
        "for the accents alone"
    )


def test_options_out_of_range_are_said_in_the_pages_words(server, browser, tmp_path):
    """top-k or *unknown width ≤* empty, 0, 25, 2.5 or 99999: the page says which box and what
    it takes, for the text and for the EpiDoc file (not the API's "top_k: Input should be less
    than or equal to 20; see /openapi.json"), and sends nothing; a right value restores again."""
    from selenium.webdriver.support.ui import WebDriverWait

    base, _ = server
    _open(browser, base)
    upload = tmp_path / "t.xml"
    upload.write_bytes(TWO_PIECES)
    cases = [
        ("top-k", "25", "top-k: give a whole number of restorations from 1 to 20, not 25"),
        ("top-k", "2.5", "top-k: give a whole number of restorations from 1 to 20, not 2.5"),
        ("top-k", "", "top-k: give a whole number of restorations from 1 to 20; the box is empty"),
        (
            "unknown-width",
            "0",
            "unknown width ≤: give a whole number of letters from 1 to 10,000, not 0",
        ),
        (
            "unknown-width",
            "99999",
            "unknown width ≤: give a whole number of letters from 1 to 10,000, not 99999",
        ),
    ]
    set_box = "document.getElementById(arguments[0]).value = arguments[1]"
    try:
        browser.find_element("id", "text").clear()
        browser.find_element("id", "text").send_keys("καὶ τοῦ δή[..]")
        browser.find_element("id", "epidoc-file").send_keys(str(upload))
        for box, value, said in cases:
            browser.execute_script(set_box, "top-k", "3")
            browser.execute_script(set_box, "unknown-width", "20")
            browser.execute_script(set_box, box, value)
            browser.find_element("id", "restore").click()
            WebDriverWait(browser, 30).until(lambda d: d.find_element("id", "error").is_displayed())
            assert browser.find_element("id", "error").text == said
            assert not browser.find_element("id", "result").is_displayed()
            assert "bad" in browser.find_element("id", box).get_attribute("class")
            browser.find_element("id", "epidoc-restore").click()
            WebDriverWait(browser, 30).until(
                lambda d: d.find_element("id", "epidoc-error").is_displayed()
            )
            assert browser.find_element("id", "epidoc-error").text == said
            assert browser.find_element("id", "epidoc-status").text == ""
        browser.execute_script(set_box, "unknown-width", "20")
        _restore(browser, None, top_k=2)
        assert not browser.find_element("id", "error").is_displayed()
        assert "bad" not in browser.find_element("id", "unknown-width").get_attribute("class")
    finally:
        browser.execute_script(set_box, "top-k", "3")
        browser.execute_script(set_box, "unknown-width", "20")


def test_an_epidoc_document_pasted_as_text_points_to_the_file_form(server, browser):
    """A whole EpiDoc document pasted in the text area: its one line sends the reader to the
    page's own *An EpiDoc file* form, not to a command (``stoicheia restore --epidoc``)."""
    base, _ = server
    _open(browser, base)
    browser.execute_script(
        "document.getElementById('text').value = arguments[0]", TWO_PIECES.decode()
    )
    _restore(browser, None, top_k=2)
    said = browser.find_element("id", "error").text
    assert "holds XML markup" in said and "stoicheia restore" not in said, said
    assert said.endswith(
        "save the document as an .xml file and restore it under An EpiDoc file below "
        "(Restore and download)"
    ), said
    assert browser.find_element("id", "epidoc-title").text == "An EpiDoc file"


def test_a_text_or_file_over_the_limit_is_said_in_letters_and_megabytes(server, browser, tmp_path):
    """A text over the 256 KiB of one request, and an EpiDoc file over 8 MiB: the page says how
    long the text is in characters and what it may hold, and the file's name and size (not the
    server's "request body over 262,144 bytes; send a shorter text or a smaller file")."""
    from selenium.webdriver.support.ui import WebDriverWait

    base, _ = server
    _open(browser, base)
    text = "καὶ τοῦ δήμου " * 10_000 + "[..]"
    browser.execute_script("document.getElementById('text').value = arguments[0]", text)
    _restore(browser, None, top_k=2)
    said = browser.find_element("id", "error").text
    assert said.startswith(f"the text is {len(text):,} characters ("), said
    assert said.endswith(
        "one restoration takes at most 256 KB, about 100,000 Greek letters; restore it in parts"
    ), said
    big = tmp_path / "Big corpus.xml"
    big.write_bytes(
        TWO_PIECES.replace(b"<teiHeader>", b"<!--" + b"x" * 9_000_000 + b"--><teiHeader>")
    )
    browser.find_element("id", "epidoc-file").send_keys(str(big))
    browser.find_element("id", "epidoc-restore").click()
    WebDriverWait(browser, 60).until(lambda d: d.find_element("id", "epidoc-error").is_displayed())
    assert browser.find_element("id", "epidoc-error").text == (
        "Big corpus.xml is 8.6 MB: the page restores EpiDoc files of at most 8 MB (8,388,608 bytes)"
    )


def test_a_files_gaps_left_are_said_in_the_fields_words(server, browser):
    """The line after an EpiDoc file's download counts its gaps left by reason as the server
    sends them (X-Stoicheia-Gaps-Left), the plan's short reasons said in words: a gap of whole
    lines is "lost lines, not letters" (not "lines: 1")."""
    base, _ = server
    _open(browser, base)
    said = browser.execute_script(
        "return gapsSaid(new Headers({'X-Stoicheia-Gaps': 'restored=2 left=4 refused=1',"
        " 'X-Stoicheia-Gaps-Left': arguments[0], 'X-Stoicheia-Gaps-Refused': arguments[1]}))",
        json.dumps(
            [
                ["below the confidence floor --min-probability 0.25, readings proposed", 2],
                ["lines", 1],
                ["unit cm", 1],
            ]
        ),
        json.dumps([["too wide", 1]]),
    )
    assert said == (
        " (gaps: restored 2, left 4 (below the confidence floor 0.25, readings proposed: 2; "
        "lost lines, not letters: 1; measured in cm, not letters: 1), refused 1 (wider than "
        "the model's window: 1))"
    )


def test_the_file_forms_confidence_floor(server, browser, tmp_path):
    """The EpiDoc form's *confidence floor* (``restore --epidoc --min-probability``): 1 leaves
    every gap of letters with its readings proposed, 0 restores them all; empty, the model's
    own floors; 1.5 is said in the page's words and nothing is sent."""
    from selenium.webdriver.support.ui import WebDriverWait

    import stoicheia

    if not hasattr(stoicheia, "restore_epidoc"):
        pytest.skip("stoicheia.restore_epidoc is not in this checkout (the page disables it)")
    base, _ = server
    _open(browser, base)
    browser.execute_cdp_cmd(
        "Browser.setDownloadBehavior", {"behavior": "allow", "downloadPath": str(tmp_path)}
    )
    src = tmp_path / "two-pieces.xml"
    src.write_bytes(TWO_PIECES)
    browser.find_element("id", "epidoc-file").send_keys(str(src))
    floor = browser.find_element("id", "epidoc-floor")
    said = {}
    for value in ("1", "0", "1.5"):
        floor.clear()
        floor.send_keys(value)
        browser.execute_script(
            "document.getElementById('epidoc-status').textContent = '';"
            "document.getElementById('epidoc-error').hidden = true;"
        )
        browser.find_element("id", "epidoc-restore").click()
        WebDriverWait(browser, 120).until(
            lambda d: (
                d.find_element("id", "epidoc-status").text.startswith("downloaded")
                or d.find_element("id", "epidoc-error").is_displayed()
            )
        )
        said[value] = (
            browser.find_element("id", "epidoc-status").text
            or browser.find_element("id", "epidoc-error").text
        )
    assert said["1"].startswith(
        "downloaded (gaps: restored 0, left 4 (below the confidence floor 1"
    )
    assert said["0"] == (
        "downloaded (gaps: restored 3, left 1 (lost lines, not letters: 1), refused 0)"
    )
    assert said["1.5"] == (
        "confidence floor: give a probability from 0 to 1 (such as 0.1), or leave the box "
        "empty for the model's own floors; not 1.5"
    )


def test_the_parallels_decoder_says_when_there_is_no_index(server, browser):
    """A server without a parallels index offers the *parallels* decoder when it has an n-gram
    (it answers with the n-gram's readings): its option says so before it is chosen, and is
    plain *parallels* when the index is there."""
    base, _ = server
    _open(browser, base)
    said = browser.execute_script("""
      const label = () => [...document.getElementById('decoder').options]
        .find((o) => o.value === 'parallels');
      offerDecoders({decoders: ['fused', 'parallels', 'ngram', 'model'], decoder: 'fused',
                     parallels: false, ngram: true});
      const without = [label().textContent, label().disabled];
      offerDecoders({decoders: ['fused', 'parallels', 'ngram', 'model'], decoder: 'parallels',
                     parallels: true, ngram: true});
      return [without, [label().textContent, label().disabled],
              document.getElementById('decoder').value];""")
    assert said == [
        ["parallels (no index here: n-gram alone)", False],
        ["parallels", False],
        "parallels",
    ]


def test_example_buttons_and_the_screenshot(server, browser, tmp_path):
    base, _ = server
    _open(browser, base)
    examples = json.loads(
        (REPO / "stoicheia" / "serve" / "static" / "examples.json").read_text(encoding="utf-8")
    )
    buttons = browser.find_elements("css selector", "#examples button.example")
    assert [b.text for b in buttons] == [e["id"] for e in examples["examples"]]
    buttons[0].click()
    assert (
        browser.find_element("id", "text").get_attribute("value") == examples["examples"][0]["text"]
    )
    source = browser.find_element("id", "example-source")
    assert (
        source.is_displayed()
        and source.text.startswith(examples["examples"][0]["id"])
        and "CC BY 4.0" in source.text
    )
    _restore(browser, None, top_k=3)
    assert not browser.find_element("id", "error").is_displayed()
    assert browser.find_elements("css selector", "#restored span.fill")
    # the Greek is drawn with the page's own font, loaded from the server
    assert browser.execute_async_script(
        "const done = arguments[arguments.length - 1];"
        "document.fonts.ready.then("
        "() => done(document.fonts.check('20px \"Stoicheia Greek\"', 'ἀῶ')));"
    )
    target = os.environ.get("STOICHEIA_SCREENSHOT")
    if target:
        _screenshot(browser, Path(target), tmp_path)


def _screenshot(browser, target: Path, tmp: Path) -> None:
    """The page down to the gap table as a small PNG (palette of 64 colours)."""
    from PIL import Image

    browser.execute_script("document.getElementById('epidoc-section').hidden = true;")
    height = browser.execute_script(
        "const r = document.getElementById('gaps').getBoundingClientRect();"
        "return Math.ceil(r.bottom + window.scrollY + 16);"
    )
    browser.set_window_size(1000, max(400, min(int(height) + 140, 1600)))
    raw = tmp / "page.png"
    browser.save_screenshot(str(raw))
    img = Image.open(raw).convert("RGB")
    img = img.crop((0, 0, img.width, min(img.height, int(height))))
    target.parent.mkdir(parents=True, exist_ok=True)
    img.quantize(colors=64, method=Image.Quantize.MEDIANCUT).save(target, optimize=True)
    browser.execute_script("document.getElementById('epidoc-section').hidden = false;")
    assert target.stat().st_size < 200_000
    shutil.copy(raw, tmp / "full.png")


def test_one_request_at_a_time_and_keyboard_only(server, browser):
    """Ctrl-Enter pressed again while an answer is coming sends nothing (its answer could arrive
    first and be overwritten by the stale one); the whole-text restorations are reached with Tab
    and shown with Enter."""
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support.ui import WebDriverWait

    base, _ = server
    _open(browser, base)
    # hold every /restore request until the test lets it go, and count them
    browser.execute_script("""
      window.__sent = 0; window.__release = null;
      const gate = new Promise((resolve) => { window.__release = resolve; });
      const fetch0 = window.fetch;
      window.fetch = async (url, opts) => {
        if (String(url).endsWith('/restore')) { window.__sent += 1; await gate; }
        return fetch0(url, opts);
      };""")
    box = browser.find_element("id", "text")
    box.clear()
    box.send_keys("καὶ τοῦ δή[..] τοῦ [---]")
    k = browser.find_element("id", "top-k")
    k.clear()
    k.send_keys("3")
    box.click()
    for _ in range(2):
        ActionChains(browser).key_down(Keys.CONTROL).send_keys(Keys.ENTER).key_up(
            Keys.CONTROL
        ).perform()
    assert browser.execute_script("return window.__sent") == 1
    browser.execute_script("window.__release()")
    WebDriverWait(browser, 180).until(lambda d: d.find_element("id", "result").is_displayed())
    assert browser.execute_script("return window.__sent") == 1
    # keyboard only: Tab from the text area to the second restoration, Enter shows it
    box.click()
    for _ in range(40):
        ActionChains(browser).send_keys(Keys.TAB).perform()
        if browser.execute_script("return !!document.activeElement.closest('#restorations')"):
            break
    else:
        pytest.fail("Tab never reaches the whole-text restorations")
    ActionChains(browser).send_keys(Keys.TAB).send_keys(Keys.ENTER).perform()
    assert browser.find_element("id", "shown-rank").text == "#2 of 3"
    ActionChains(browser).key_down(Keys.SHIFT).send_keys(Keys.TAB).key_up(Keys.SHIFT).send_keys(
        " "
    ).perform()
    assert browser.find_element("id", "shown-rank").text == "#1 of 3"


def test_a_phone_wide_window_does_not_scroll_sideways(server, browser):
    """375 CSS pixels (a phone): the gap table, long fills and scriptio continua without a blank
    wrap inside the page."""
    base, _ = server
    size = browser.get_window_size()
    browser.set_window_size(375, 800)
    try:
        _open(browser, base)
        browser.find_elements("css selector", "#examples button.example")[0].click()
        for text in (
            None,
            "ΚΑΙΤΟΥΔΗΜΟΥΤΟΥΕΑΥΤΟΥΚΑΙΤΟΥΔΗΜΟΥΤΟΥΕΑΥΤΟΥ[..]ΚΑΙΤΟΥΔΗΜΟΥΤΟΥΕΑΥΤΟΥΚΑΙΤΟΥ",
        ):
            _restore(browser, text, top_k=3)
            assert browser.find_element("id", "result").is_displayed()
            inner, scroll = browser.execute_script(
                "return [window.innerWidth, document.documentElement.scrollWidth]"
            )
            assert inner <= 400 and scroll <= inner, (inner, scroll)
    finally:
        browser.set_window_size(size["width"], size["height"])


def test_width_charts_stand_on_one_line_with_labels_apart(server, browser):
    """The width charts of ``[-ca.12-]`` (9 to 15 letters, every width labelled) and ``[---]`` (1
    to 20, some labelled): every bar stands on the same line, labelled or not, and no two labels
    shown overlap, in a phone's 375 pixels as in a desktop's window (the likeliest width's label
    is always shown); one letter is "1 letter"; a gap's notation is not broken across lines."""
    base, _ = server
    size = browser.get_window_size()
    measure = """
      return [...document.querySelectorAll('#gaps .widths')].map((chart) => ({
        bottoms: [...chart.querySelectorAll('.v')].map((v) => v.getBoundingClientRect().bottom),
        shown: [...chart.querySelectorAll('.n')]
          .filter((n) => n.textContent && getComputedStyle(n).visibility !== 'hidden')
          .map((n) => { const r = n.getBoundingClientRect();
                        return [n.textContent, r.left, r.right]; }),
        likeliest: chart.nextElementSibling.textContent}));"""
    try:
        for width in (375, 1000):
            browser.set_window_size(width, 900)
            _open(browser, base)
            _restore(browser, "καὶ τοῦ δή[-ca.12-] τοῦ ἑαυτοῦ [---] χαῖρε", top_k=1)
            charts = browser.execute_script(measure)
            assert len(charts) == 2
            for chart in charts:
                assert max(chart["bottoms"]) - min(chart["bottoms"]) < 0.5, (width, chart)
            for chart in charts:
                spans = sorted(chart["shown"], key=lambda s: s[1])
                for (a, _, a_right), (b, b_left, _) in zip(spans, spans[1:], strict=False):
                    assert a_right <= b_left, (width, a, b, spans)
                top = re.search(r"likeliest (\d+) letter", chart["likeliest"]).group(1)
                assert top in [s[0] for s in spans], (width, chart)
        # each gap's notation as typed on one line ([-ca.12-], not [-/ca.1/2-] in a phone's column)
        browser.set_window_size(375, 900)
        lines = browser.execute_script("""
          return [...document.querySelectorAll('#gaps tbody tr')].map((tr) => {
            const range = document.createRange();
            range.selectNodeContents(tr.children[1]);
            return [tr.children[1].textContent, range.getClientRects().length]; });""")
        assert lines == [["[-ca.12-]", 1], ["[---]", 1]]
        said = browser.execute_script("return widthChart({1: 0.6, 2: 0.4}).lastChild.textContent")
        assert said == "likeliest 1 letter (60%, its readings together)"
    finally:
        browser.set_window_size(size["width"], size["height"])


def test_cancel_stops_a_long_restoration(browser, tmp_path_factory):
    """Cancel, shown while a restoration runs, aborts it: the page says so and is ready again,
    the server stops decoding (the model lock is free within a forward pass) and the next
    restoration is answered."""
    from selenium.webdriver.support.ui import WebDriverWait

    from stoicheia.inference.loading import LoadedModel
    from stoicheia.serve.app import create_app

    base_model = serve_model(tmp_path_factory.mktemp("serve-cancel"))
    passes = []

    class Slow(LoadedModel):  # 3 forward passes a second: the long text takes over 10 s
        def __call__(self, batch):
            passes.append(time.monotonic())
            time.sleep(0.3)
            return super().__call__(batch)

    app = create_app(
        Slow(base_model.encoder, base_model.config, base_model.source, base_model.kind, step=0)
    )
    for base in _serving(app):
        _open(browser, base)
        assert not browser.find_element("id", "cancel").is_displayed()
        box = browser.find_element("id", "text")
        box.clear()
        box.send_keys(" ".join([THREE_GAPS] * 12))
        browser.find_element("id", "restore").click()
        WebDriverWait(browser, 30).until(
            lambda d: d.find_element("id", "cancel").is_displayed() and len(passes) > 2
        )
        browser.find_element("id", "cancel").click()
        WebDriverWait(browser, 30).until(
            lambda d: d.find_element("id", "run-status").text == "cancelled"
        )
        assert not browser.find_element("id", "cancel").is_displayed()
        assert browser.find_element("id", "restore").is_enabled()
        assert not browser.find_element("id", "error").is_displayed()
        assert app.state.lock.acquire(timeout=3.0), "the cancelled decoding still holds the model"
        app.state.lock.release()
        n = len(passes)
        time.sleep(0.5)
        assert len(passes) == n
        _restore(browser, "καὶ τοῦ [..]", top_k=1)
        assert browser.find_element("id", "result").is_displayed()
        assert browser.find_element("id", "run-status").text == ""


def test_characters_outside_the_bmp_keep_the_restoration_in_place(server, browser):
    """The API's offsets count code points; a JavaScript string counts UTF-16 units, two for
    each character outside the Basic Multilingual Plane (𐅵, a papyrus fraction; 𐅃, an
    acrophonic numeral): the page draws each fill where its gap is, after them too."""
    base, _ = server
    text = "𐅵 𐅃𐅃 καὶ τοῦ δή[..] τοῦ 𐅵 ἑαυ[...] χαῖρε"
    _open(browser, base)
    _restore(browser, text, top_k=2)
    assert not browser.find_element("id", "error").is_displayed()
    want = _api(base, {"text": text, "top_k": 2})
    nfc = [unicodedata.normalize("NFC", r["text"]) for r in want["restorations"]]
    assert browser.find_element("id", "restored").text == nfc[0]
    items = browser.find_elements("css selector", "#restorations li .greek")
    assert [i.text for i in items] == nfc
    # the shaded letters are the fills' letters, in order
    fills = "".join(s.text for s in browser.find_elements("css selector", "#restored span.fill"))
    letters = unicodedata.normalize("NFC", "".join(want["restorations"][0]["fills"]))
    assert fills == "".join(c for c in letters if unicodedata.category(c).startswith("L"))


def test_a_gap_inside_an_editors_brackets_gets_no_brackets_of_its_own(server, browser):
    """A lacuna typed inside an editor's supplement (``[ι ---]``: its notation is ``---``) and
    lost letters typed as ``++`` are drawn as ``stoicheia restore`` prints them, ``[ι ἀ]`` and
    dotted letters, not ``[ι [ἀ]]`` and ``[α̣ὐ̣]``: the restoration above and the list below."""
    _drawn_as_restore_prints(
        server, browser, "Ἀπόλλων[ι ---] ἀνέθηκε καὶ ++ τοῦ δή[..]", ["---", "++", "[..]"]
    )


def _drawn_as_restore_prints(server, browser, text: str, notations: list[str]) -> list[str]:
    """Restore ``text`` on the page (top 2): its gaps' notations are ``notations``, and the
    restoration shown and the list below are the API's texts, as ``stoicheia restore`` prints
    them; returns those texts (NFC)."""
    base, _ = server
    _open(browser, base)
    _restore(browser, text, top_k=2)
    assert not browser.find_element("id", "error").is_displayed()
    want = _api(base, {"text": text, "top_k": 2})
    assert [g["notation"] for g in want["gaps"]] == notations
    nfc = [unicodedata.normalize("NFC", r["text"]) for r in want["restorations"]]
    assert browser.find_element("id", "restored").text == nfc[0]
    items = browser.find_elements("css selector", "#restorations li .greek")
    assert [i.text for i in items] == nfc
    return nfc


def test_lost_letters_in_an_erasure_or_half_brackets_are_drawn_in_brackets_inside_them(
    server, browser
):
    """The dots of ``⟦ ⟧`` and ``⸢ ⸣`` filled are drawn as ``stoicheia restore`` prints them,
    ``⟦[ντε]⟧`` and ``⸢[βο]υλῇ⸣`` (as if read on the stone, ``⟦ντε⟧``, before), while the dots of
    a ``[καὶ ...]`` take no brackets of their own."""
    text = "ἔδοξε τῇ ⟦...⟧ καὶ τῷ ⸢..μῳ⸣ [καὶ ...] τοῦ"
    nfc = _drawn_as_restore_prints(server, browser, text, ["...", "..", "..."])
    assert "⟦[" in nfc[0] and "⸢[" in nfc[0] and "[καὶ " in nfc[0]


def test_shares_print_as_percentages_like_the_command_line(server, browser):
    """Probabilities on the page print as ``stoicheia restore`` prints them (50%, <1%), the
    parallels' share of a fill too (not 0.50); the model line says what is fused in."""
    base, _ = server
    _open(browser, base)
    _restore(browser, "καὶ τοῦ δή[-ca.4-] τοῦ", top_k=2)
    for p in browser.find_elements("css selector", "#gaps .alt .p"):
        assert re.fullmatch(r"\d{1,3}%|<1%", p.text), p.text
    assert re.search(
        r"likeliest \d+ letters? \((\d{1,3}%|<1%), its readings together\)",
        browser.find_element("id", "gaps").text,
    )
    # a gap with parallels, drawn as the API gives them
    shown = browser.execute_script("""
      current.gaps[0].parallels = [{fill: "μου", letters_matched: 7, sides: [4, 3], sources: 2,
        prob: 0.5, parallels: []}, {fill: "νος", letters_matched: 5, sides: [3, 2], sources: 1,
        prob: 0.004, parallels: []}];
      drawParallels();
      return document.getElementById("parallels").innerText;""")
    assert "2 sources, 50% of the parallels" in shown and "1 source, <1% of the parallels" in shown
    # the shading's legend too
    assert [s.strip() for s in browser.find_element("css selector", ".scale").text.split("α")] == [
        "",
        "10%",
        "50%",
        "90%",
    ]
    assert browser.find_element("id", "model-line").text.endswith(
        "letter n-gram: none; parallels: no index"
    )


def test_accents_keep_the_typed_word_division(server, browser):
    """The *accents* box: the model's accents on the text as typed (its spaces kept), shown
    and copied; ticking *respace* unticks it (one of them at a time)."""
    base, _ = server
    _open(browser, base)
    text = "και του δη[..] του εαυτου"
    browser.find_element("id", "accents").click()
    try:
        _restore(browser, text, top_k=2)
        want = _api(base, {"text": text, "top_k": 2, "accents": True})
        shown = browser.find_element("id", "restored").text
        assert shown == unicodedata.normalize("NFC", want["respaced"][0])
        outside = [re.sub(r"\[[^\]]*\]", "", s).split() for s in (shown, text)]
        letters = [[sum(c.isalpha() for c in w) for w in ws] for ws in outside]
        assert letters[0] == letters[1], shown
        assert "accented by the model" in browser.find_element("id", "shown-rank").text
        browser.find_element("id", "respace").click()
        assert not browser.find_element("id", "accents").is_selected()
    finally:
        for box in ("accents", "respace"):
            if browser.find_element("id", box).is_selected():
                browser.find_element("id", box).click()


def test_a_long_restoration_shows_its_progress(browser, tmp_path_factory):
    """The page shows how far a long restoration is (passes done of planned, on a bar), not
    only "restoring…", and hides it when the answer is drawn."""
    from selenium.webdriver.support.ui import WebDriverWait

    from stoicheia.inference.loading import LoadedModel
    from stoicheia.serve.app import create_app

    base_model = serve_model(tmp_path_factory.mktemp("serve-progress"))

    class Slow(LoadedModel):  # 4 forward passes a second: the page polls several times
        def __call__(self, batch):
            time.sleep(0.25)
            return super().__call__(batch)

    app = create_app(
        Slow(base_model.encoder, base_model.config, base_model.source, base_model.kind, step=0)
    )
    for base in _serving(app):
        _open(browser, base)
        box = browser.find_element("id", "text")
        box.clear()
        box.send_keys(" ".join([THREE_GAPS] * 3))
        browser.find_element("id", "restore").click()
        said = WebDriverWait(browser, 60).until(
            lambda d: re.fullmatch(
                r"restoring… pass (\d+) of (\d+) \(\d+ %\)", d.find_element("id", "busy-text").text
            )
        )
        done, total = int(said[1]), int(said[2])
        assert total == 9 + 2 and 0 <= done <= total
        bar = browser.find_element("id", "busy-bar")
        assert bar.get_attribute("max") == str(total)
        WebDriverWait(browser, 120).until(lambda d: d.find_element("id", "result").is_displayed())
        assert not browser.find_element("id", "busy").is_displayed()


def test_a_long_file_restoration_shows_its_progress(browser, tmp_path_factory):
    """An uploaded EpiDoc file shows how far it is (its gaps done of those to fill, the piece of
    the pieces, that piece's passes, on a bar), not only "restoring…", and hides it when the
    restored file is downloaded."""
    from selenium.webdriver.support.ui import WebDriverWait

    import stoicheia
    from stoicheia.inference.loading import LoadedModel
    from stoicheia.serve.app import create_app

    if not hasattr(stoicheia, "restore_epidoc"):
        pytest.skip("stoicheia.restore_epidoc is not in this checkout (the page disables it)")
    folder = tmp_path_factory.mktemp("serve-file-progress")
    base_model = serve_model(folder)

    class Slow(LoadedModel):  # 3 forward passes a second: the page polls several times
        def __call__(self, batch):
            time.sleep(0.35)
            return super().__call__(batch)

    app = create_app(
        Slow(base_model.encoder, base_model.config, base_model.source, base_model.kind, step=0)
    )
    src = folder / "two-pieces.xml"
    src.write_bytes(TWO_PIECES)
    downloads = folder / "downloads"
    downloads.mkdir()
    got = downloads / "two-pieces.restored.xml"  # written by the browser after the click
    for base in _serving(app):
        _open(browser, base)
        browser.execute_cdp_cmd(
            "Browser.setDownloadBehavior", {"behavior": "allow", "downloadPath": str(downloads)}
        )
        browser.find_element("id", "epidoc-file").send_keys(str(src))
        browser.find_element("id", "epidoc-restore").click()
        said = WebDriverWait(browser, 60).until(
            lambda d: re.fullmatch(
                r"restoring… (\d) of 3 gaps done · piece 2 of 2, pass (\d) of (\d) \((\d+) %\)",
                d.find_element("id", "epidoc-busy-text").text,
            )
        )
        assert said[1] == "1" and said[3] == "4" and 50 <= int(said[4]) <= 100
        bar = browser.find_element("id", "epidoc-bar")
        assert bar.get_attribute("max") == "1" and 0.5 <= float(bar.get_attribute("value")) <= 1
        WebDriverWait(browser, 120).until(
            lambda d: d.find_element("id", "epidoc-status").text.startswith("downloaded")
        )
        assert not browser.find_element("id", "epidoc-busy").is_displayed()
        WebDriverWait(browser, 30).until(lambda d: got.is_file() and got.stat().st_size > 0)
        assert b'resp="#stoicheia"' in got.read_bytes()
