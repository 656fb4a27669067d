"""The restoration server's API (FastAPI's TestClient): the restore result JSON, one-line
errors, the body limit, concurrent requests, the page's local assets, the EpiDoc fragment,
the ``serve`` command's refusals and the example inscriptions."""

from __future__ import annotations

import json
import math
import re
import socket
import sys
import threading
import unicodedata
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from serve_model import THREE_GAPS, live_server, serve_model  # noqa: E402

pytest.importorskip("fastapi")
from fastapi.testclient import TestClient  # noqa: E402
from lxml import etree  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
STATIC = REPO / "stoicheia" / "serve" / "static"
TEI = "{http://www.tei-c.org/ns/1.0}"


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    return serve_model(tmp_path_factory.mktemp("serve"))


@pytest.fixture(scope="module")
def client(model):
    from stoicheia.serve.app import create_app

    with TestClient(create_app(model)) as c:
        yield c


def _letters(s: str) -> int:
    return sum(
        1 for c in unicodedata.normalize("NFD", s) if unicodedata.category(c).startswith("L")
    )


def test_restore_answers_the_contract(client, model):
    from stoicheia.inference.restore import restore

    r = client.post("/restore", json={"text": THREE_GAPS, "top_k": 3, "unknown_width": 6})
    assert r.status_code == 200, r.text
    data = r.json()
    assert set(data) == {"input", "gaps", "restorations", "notes", "epidoc", "respaced"}
    assert data["respaced"] is None  # only with respace
    assert data["input"] == THREE_GAPS
    gaps = data["gaps"]
    assert [g["notation"] for g in gaps] == ["[....]", "[-ca.6-]", "[---]"]
    assert [(g["min_letters"], g["max_letters"]) for g in gaps] == [(4, 4), (4, 8), (1, 6)]
    for g in gaps:
        assert THREE_GAPS[g["start"] : g["end"]] == g["notation"]
        assert g["kind"] == "lacuna"
        assert len(g["letter_probs"]) == _letters(g["fill"])
        assert g["min_letters"] <= _letters(g["fill"]) <= g["max_letters"]
        assert all(0 <= p <= 1 for p in g["letter_probs"])
        probs = [a["prob"] for a in g["alternatives"]]
        assert probs == sorted(probs, reverse=True) and sum(probs) <= 1 + 1e-6
        assert len({a["fill"] for a in g["alternatives"]}) == len(probs)  # distinct
        assert all(
            math.isclose(a["logprob"], math.log(a["prob"]), abs_tol=1e-5) for a in g["alternatives"]
        )
    assert gaps[0]["width_probs"] is None  # a known width
    for g in gaps[1:]:
        assert math.isclose(sum(g["width_probs"].values()), 1.0, abs_tol=1e-5)
        assert all(g["min_letters"] <= int(n) <= g["max_letters"] for n in g["width_probs"])
    assert len(data["restorations"]) == 3 and len(data["epidoc"]) == 3
    scores = [x["logprob"] for x in data["restorations"]]
    assert scores == sorted(scores, reverse=True)
    for rest in data["restorations"]:
        assert len(rest["fills"]) == len(gaps)
        expected = THREE_GAPS
        for g, fill in sorted(zip(gaps, rest["fills"], strict=True), key=lambda x: -x[0]["start"]):
            expected = expected[: g["start"]] + f"[{fill}]" + expected[g["end"] :]
        assert rest["text"] == expected
    # the same restoration as the command line's (the model loaded once, the same decoder)
    direct = restore(model, THREE_GAPS, top_k=3, unknown_width=6)
    assert [[_strip(f) for f in x["fills"]] for x in data["restorations"]] == [
        [f.lower() for f in x.fills] for x in direct.restorations
    ]
    assert data["restorations"][0]["logprob"] == pytest.approx(direct.restorations[0].logprob)
    # the same JSON as `stoicheia restore --json` (RestoreResult.to_json): no field dropped by
    # the response model (`letters` was), plus `epidoc` and `respaced`
    cli = direct.to_json()
    assert set(data) - set(cli) == {"epidoc", "respaced"}
    assert [set(x) for x in data["restorations"]] == [set(x) for x in cli["restorations"]]
    assert [set(g) for g in data["gaps"]] == [set(g) for g in cli["gaps"]]
    assert [x["letters"] for x in data["restorations"]] == [
        x["letters"] for x in cli["restorations"]
    ]
    assert [x["letters"] for x in data["restorations"]] == [
        [_strip(f) for f in x["fills"]] for x in data["restorations"]
    ]


def test_respace_answers_the_models_rendering(client, model):
    from stoicheia.inference.restore import restore

    text = "ΚΑΙΤΟΥΔΗ[..]ΤΟΥΕΑΥΤΟΥ"
    data = client.post("/restore", json={"text": text, "top_k": 2, "respace": True}).json()
    direct = restore(model, text, top_k=2, respace=True)
    assert data["respaced"] == [r.text for r in direct.restorations]
    assert [g["notation"] for g in data["gaps"]] == ["[..]"]


def test_respace_fragments_keep_the_inputs_case(client):
    """With respace the fills are the model's lowercase, accented rendering; the EpiDoc
    fragment, the input's Leiden with each fill in its <supplied>, prints them as the input
    prints its letters: a text in capitals stays in capitals (not ``ΕΤΗ <supplied>ν
    ἀ</supplied> ΧΑΙΡΕ``), a capital heading of a lowercase text too, scriptio continua without
    spaces, and a lowercase accented text keeps the fill as rendered."""
    from stoicheia.serve.fragment import epidoc_ab, in_input_style

    def data(text, fills):
        gaps = [m.span() for m in re.finditer(r"\[[^\]]*\]", text)]
        return {
            "input": text,
            "gaps": [
                {"index": i, "kind": "lacuna", "start": a, "end": b}
                for i, (a, b) in enumerate(gaps)
            ],
            "restorations": [{"text": "", "fills": fills, "letters": [], "logprob": 0.0}],
        }

    def supplied(d):
        return re.findall(r"<supplied[^>]*>([^<]*)</supplied>", epidoc_ab(in_input_style(d)))

    assert supplied(data("ΔΙΟΝΥΣΙΟΣ ΕΤΗ [...] ΧΑΙΡΕ", ["ν ἀς"])) == ["Ν ΑΣ"]
    assert supplied(data("ΚΑΙΤΟΥΔΗ[..]ΤΟΥΕΑΥΤΟΥ", ["ν ἀ"])) == ["ΝΑ"]
    assert supplied(data("καὶ τοῦ δή[...] τοῦ", ["μου ὁ"])) == ["μου ὁ"]
    heading = "ΚΑΤΑ ΤΟΝ ΝΟΜΟΝ [....] ΤΟΥ ΔΗΜΟΥ | καὶ τοῦ δή[....] τοῦ ἑαυτοῦ"
    assert supplied(data(heading, ["τὸν δ", "μου ὁ"])) == ["ΤΟΝ Δ", "μου ὁ"]
    # the server's fragments are these
    text = "ΔΙΟΝΥΣΙΟΣ ΕΝΘΑΔΕ ΚΕΙΤΑΙ ΕΖΗΣΕΝ ΕΤΗ [....] ΧΑΙΡΕ"
    got = client.post("/restore", json={"text": text, "top_k": 2, "respace": True}).json()
    framed = in_input_style(got)
    assert got["epidoc"] == [epidoc_ab(framed, i) for i in range(len(got["restorations"]))]
    plain = client.post("/restore", json={"text": text, "top_k": 2}).json()
    assert in_input_style(plain)["restorations"] == plain["restorations"]  # already so


def _strip(s: str) -> str:
    """The base letters of a printed fill (what ``Restoration.fills`` holds)."""
    nfd = unicodedata.normalize("NFD", s).lower()
    return "".join(c for c in nfd if unicodedata.category(c).startswith("L")).replace("ς", "σ")


def test_epidoc_fragments_are_well_formed_and_mark_the_model(client):
    data = client.post("/restore", json={"text": THREE_GAPS, "top_k": 2, "unknown_width": 6}).json()
    for frag, rest in zip(data["epidoc"], data["restorations"], strict=True):
        ab = etree.fromstring(frag)
        assert ab.tag == "ab"
        supplied = ab.findall("supplied")
        assert [s.text for s in supplied] == rest["fills"]
        assert all(
            s.get("resp") == "#stoicheia" and s.get("cert") == "low" and s.get("reason") == "lost"
            for s in supplied
        )
        assert "".join(ab.itertext()).startswith("καὶ τοῦ δή")


def test_fragment_maps_each_leiden_sign():
    from stoicheia.serve.fragment import epidoc_ab

    text = "τ̣οῦ δή[..] ⟨κ⟩αὶ\n[καὶ] ⟦ὁ⟧ {ς}"
    data = {
        "input": text,
        "gaps": [{"index": 0, "kind": "uncertain"}, {"index": 1, "kind": "lacuna"}],
        "restorations": [{"fills": ["π", "μο"]}],
    }
    assert epidoc_ab(data) == (
        '<ab xml:space="preserve"><lb n="1"/><unclear cert="low" resp="#stoicheia">π</unclear>οῦ δή'
        '<supplied reason="lost" cert="low" resp="#stoicheia">μο</supplied> '
        '<supplied reason="omitted">κ</supplied>αὶ'
        '\n<lb n="2"/><supplied reason="lost">καὶ</supplied> <del rend="erasure">ὁ</del> '
        "<surplus>ς</surplus></ab>"
    )
    data["restorations"][0]["fills"][0] = "τ"  # the reading kept: no resp
    assert epidoc_ab(data).startswith('<ab xml:space="preserve"><lb n="1"/><unclear>τ</unclear>οῦ')
    data["restorations"][0]["fills"][0] = (
        "π\u0323"  # a printed fill with its dot: <unclear> is the dot
    )
    assert epidoc_ab(data).startswith(
        '<ab xml:space="preserve"><lb n="1"/><unclear cert="low" resp="#stoicheia">π</unclear>'
    )


def test_fragment_keeps_the_lost_letters_of_an_erasure_or_half_brackets_inside_them():
    """The dots of ``⟦ ⟧`` or ``⸢ ⸣`` filled: the ``<supplied>`` inside the ``<del>`` (or the
    half brackets' ``<supplied>``), which holds the letters read too. The ``<del>`` was lost
    (``⟦...⟧``) or split around the fill (``⟦πα..ρα⟧``)."""
    from stoicheia.serve.fragment import epidoc_ab

    sup = '<supplied reason="lost" cert="low" resp="#stoicheia">'
    for text, fills, ab in (
        ("τὸν ⟦...⟧ πατέρα", ["ἐμὸ"], f'τὸν <del rend="erasure">{sup}ἐμὸ</supplied></del> πατέρα'),
        ("τὸν ⟦πα..ρα⟧", ["τέ"], f'τὸν <del rend="erasure">πα{sup}τέ</supplied>ρα</del>'),
        (
            "τὸν ⸢..τέρα⸣ [.]",
            ["πα", "ν"],
            f'τὸν <supplied reason="undefined" evidence="previouseditor">{sup}πα</supplied>'
            f"τέρα</supplied> {sup}ν</supplied>",
        ),
        ("⟦καὶ⟧ [..]", ["τὸ"], f'<del rend="erasure">καὶ</del> {sup}τὸ</supplied>'),
    ):
        data = {
            "input": text,
            "gaps": [{"index": i, "kind": "lacuna"} for i in range(len(fills))],
            "restorations": [{"fills": fills}],
        }
        assert epidoc_ab(data) == f'<ab xml:space="preserve"><lb n="1"/>{ab}</ab>', text


def test_fragment_writes_traces_filled_without_leiden_dots():
    """``++`` outside brackets (traces of letters: restore prints its fill dotted, α̣ὐ̣) is
    ``<supplied reason="illegible">`` holding the bare letters: no combining dot below inside
    EpiDoc (the element says what the dot said); ``[+3+]`` stays a lost lacuna."""
    from stoicheia.serve.fragment import epidoc_ab

    data = {
        "input": "καὶ ++ τοῦ [+3+]",
        "gaps": [{"index": 0, "kind": "lacuna"}, {"index": 1, "kind": "lacuna"}],
        "restorations": [{"fills": ["α\u0323ὐ\u0323", "δήμ"]}],
    }
    assert epidoc_ab(data) == (
        '<ab xml:space="preserve"><lb n="1"/>καὶ '
        '<supplied reason="illegible" cert="low" resp="#stoicheia">αὐ</supplied> τοῦ '
        '<supplied reason="lost" cert="low" resp="#stoicheia">δήμ</supplied></ab>'
    )


@pytest.mark.parametrize(
    "body, message",
    [
        ({"text": "καὶ [τοῦ"}, r"^Leiden notation at character 4: '\[' is never closed; add '\]'"),
        ({"text": "abc [...]"}, r"^no Greek letter in 'abc \[\.\.\.\]'"),
        # the command line's options named as the request's fields
        (
            {"text": "καὶ τοῦ"},
            r"^nothing to restore in 'καὶ τοῦ'.*; "
            r"send \"respace\": true to predict word division[^-]*$",
        ),
        (
            {"text": "καὶ [---]", "unknown_width": 500},
            r"^the lacuna '\[---\]' may hold up to 500 letters .* "
            r"send \"unknown_width\": \d+ or less$",
        ),
        (
            {"text": "καὶ [...]", "top_k": 0},
            r"^top_k: Input should be greater than or equal to 1; see /openapi.json",
        ),
        ({"text": "καὶ [...]", "beam": 9}, r"^beam: Extra inputs are not permitted"),
        ({"text": "", "top_k": 2}, r"^text: String should have at least 1 character"),
        # strict types: a wrong type is refused, never read as 1, True or a number
        ({"text": "καὶ [...]", "top_k": True}, r"^top_k: Input should be a valid integer; "),
        ({"text": "καὶ [...]", "top_k": "3"}, r"^top_k: Input should be a valid integer; "),
        (
            {"text": "καὶ [...]", "unknown_width": 2.0},
            r"^unknown_width: Input should be a valid integer",
        ),
        ({"text": "καὶ [...]", "respace": "yes"}, r"^respace: Input should be a valid boolean; "),
        ({"text": "καὶ [...]", "respace": 1}, r"^respace: Input should be a valid boolean; "),
        (
            {"text": "καὶ [...]", "about_margin": "0.3"},
            r"^about_margin: Input should be a valid number",
        ),
        ({"text": 5}, r"^text: Input should be a valid string; "),
        (
            {"text": "καὶ [...]", "supplements": True},
            r"^supplements: Input should be 'keep' or 'repredict'",
        ),
    ],
)
def test_bad_input_is_one_line(client, body, message):
    r = client.post("/restore", json=body)
    assert r.status_code == 422
    err = r.json()
    assert set(err) == {"error"} and "\n" not in err["error"] and "Traceback" not in err["error"]
    assert re.search(message, err["error"]), err["error"]


def test_the_error_is_the_command_lines(client):
    """The page shows the line ``stoicheia restore`` prints (RestoreError's message)."""
    from stoicheia.inference.restore import RestoreError, parse_input

    with pytest.raises(RestoreError) as err:
        parse_input("καὶ ]τοῦ")
    assert client.post("/restore", json={"text": "καὶ ]τοῦ"}).json()["error"] == str(err.value)


def test_bodies_over_the_limit_are_refused(model):
    from stoicheia.serve.app import create_app

    with TestClient(create_app(model, max_json_bytes=2_000, max_upload_bytes=3_000)) as small:
        big = json.dumps({"text": "καὶ [...] " * 300})
        r = small.post("/restore", content=big, headers={"content-type": "application/json"})
        assert r.status_code == 413 and r.json() == {
            "error": "request body over 2,000 bytes; send a shorter text or a smaller file"
        }

        def chunks():  # no Content-Length: counted as it streams in
            for _ in range(10):
                yield b" " * 500

        r = small.post("/restore", content=chunks(), headers={"content-type": "application/json"})
        assert r.status_code == 413
        r = small.post("/restore-epidoc", files={"file": ("big.xml", b"<a/>" + b" " * 4_000)})
        assert r.status_code == 413 and "3,000 bytes" in r.json()["error"]
        ok = small.post("/restore", json={"text": "καὶ [...]", "top_k": 1})
        assert ok.status_code == 200


def test_the_limits_are_the_documented_ones(client):
    """The request's only limits are those docs/restoration-page.md lists: a 50,000-letter text
    (about 117 KB of UTF-8, under the 256 KiB body limit) is restored, not refused with a
    character limit that only /openapi.json mentioned; every bound of the schema's fields is on
    the page's table; an integer is a number for ``about_margin``."""
    from stoicheia.serve.body_limit import MAX_JSON_BYTES

    words = ["ἀγαθῆι", "τύχηι", "ἔδοξε", "τῶι", "δήμωι", "καὶ", "τῆι", "βουλῆι"]
    body = []
    while sum(map(_letters, body)) < 50_000:
        body.append(words[len(body) % len(words)])
    text = " ".join(body[: len(body) // 2] + ["τοῦ", "[..]"] + body[len(body) // 2 :])
    assert (
        _letters(text) >= 50_000
        and 100_000 < len(json.dumps({"text": text}, ensure_ascii=False).encode()) < MAX_JSON_BYTES
    )
    r = client.post("/restore", json={"text": text, "top_k": 1})
    assert r.status_code == 200, r.text[:300]
    assert [g["notation"] for g in r.json()["gaps"]] == ["[..]"]
    ok = client.post("/restore", json={"text": "καὶ [...]", "top_k": 1, "about_margin": 0})
    assert ok.status_code == 200, ok.text
    page = (REPO / "docs" / "restoration-page.md").read_text(encoding="utf-8")
    fields = client.get("/openapi.json").json()["components"]["schemas"]["RestoreRequest"]
    for name, spec in fields["properties"].items():
        row = next((ln for ln in page.splitlines() if ln.startswith(f"| `{name}` |")), None)
        assert row is not None, f"{name} is not in the page's table of fields"
        for bound in ("minimum", "maximum", "maxLength"):
            if bound in spec:
                v = spec[bound]
                shown = f"{int(v):,}" if float(v).is_integer() else str(v)
                assert shown in row, (name, bound, v, row)
        assert "maxLength" not in spec or name != "text"
    assert "256 KiB" in page and "8 MiB" in page


def test_concurrent_requests_each_get_their_own_answer(client):
    texts = [
        "καὶ τοῦ δή[...] τοῦ",
        "ἐνθάδε κεῖ[..]αι",
        "[---] χαῖρε",
        "Διὸ[.5.] Ὀλυμπίου",
        "τ̣ῆς πόλεως",
    ]
    bodies = [{"text": t, "top_k": 2, "unknown_width": 5} for t in texts]
    serial = [client.post("/restore", json=b).json() for b in bodies]
    barrier = threading.Barrier(len(bodies) * 2)

    def ask(b):
        barrier.wait()  # all at once, as from several tabs
        return client.post("/restore", json=b).json()

    with ThreadPoolExecutor(len(bodies) * 2) as pool:
        got = list(pool.map(ask, bodies * 2))
    assert got == serial * 2


def _uvicorn(app):
    """``app`` served as ``stoicheia serve`` serves it (:func:`serve_model.live_server`)."""
    return live_server(app)


def test_a_request_whose_client_leaves_stops_decoding_and_frees_the_model(model, corpus_root):
    """The page's Cancel aborts its fetch: the server sees the connection closed, stops the
    decoding at its next forward pass and releases the model lock, so the next request (another
    tab) is answered at once instead of after the abandoned one; an abandoned EpiDoc upload
    stops the same way."""
    import time

    import httpx

    from stoicheia.inference.loading import LoadedModel
    from stoicheia.inference.restore import restore
    from stoicheia.serve.app import create_app

    passes = []

    class Slow(LoadedModel):  # the tiny model at 3 forward passes a second: a long decoding
        def __call__(self, batch):
            passes.append(time.monotonic())
            time.sleep(0.3)
            return super().__call__(batch)

    slow = Slow(model.encoder, model.config, model.source, model.kind, step=model.step)
    long_text = " ".join(["καὶ τοῦ δή[....] τοῦ [-ca.6-] ἑαυτοῦ [---] χαῖρε"] * 12)
    full = []
    restore(model, long_text, top_k=3, progress=lambda done, total: full.append(done))
    assert len(full) > 30  # forward passes of the whole decoding: over 9 s on the slow model
    app = create_app(slow)
    lock = app.state.lock
    base, srv, thread = _uvicorn(app)
    try:
        with pytest.raises(httpx.ReadTimeout):  # the client gives up after 1 s and closes
            httpx.post(
                base + "/restore",
                json={"text": long_text, "top_k": 3},
                timeout=httpx.Timeout(5.0, read=1.0),
            )
        left = time.monotonic()
        assert lock.acquire(timeout=3.0), "the abandoned decoding still holds the model"
        freed = time.monotonic() - left
        lock.release()
        n = len(passes)
        time.sleep(0.5)
        assert len(passes) == n, "the abandoned decoding goes on"
        assert 0 < n < len(full) / 2 and freed < 2.0, (n, len(full), freed)
        t0 = time.monotonic()
        r = httpx.post(base + "/restore", json={"text": "καὶ τοῦ [..]", "top_k": 1}, timeout=60)
        assert r.status_code == 200 and r.json()["gaps"][0]["notation"] == "[..]"
        assert time.monotonic() - t0 < 5.0
        # an EpiDoc upload abandoned the same way (a long edition: ISic001375's text ten times)
        one = (corpus_root / "isicily" / "inscriptions" / "ISic001375.xml").read_bytes()
        m = re.search(rb"(<div type=\"edition\"[^>]*>\s*<ab>)(.*?)(</ab>)", one, re.S)
        xml = one[: m.start(2)] + m.group(2) * 10 + one[m.end(2) :]
        passes.clear()
        with pytest.raises(httpx.ReadTimeout):
            httpx.post(
                base + "/restore-epidoc",
                files={"file": ("a.xml", xml)},
                data={"top_k": "5"},
                timeout=httpx.Timeout(5.0, read=1.0),
            )
        assert lock.acquire(timeout=3.0), "the abandoned EpiDoc restoration still holds the model"
        lock.release()
        n = len(passes)
        time.sleep(0.5)
        assert 0 < n == len(passes)
    finally:
        srv.should_exit = True
        thread.join(timeout=30)


def test_the_model_is_loaded_once(model, monkeypatch):
    """Requests use the model given to create_app; nothing loads another."""
    from stoicheia.inference import loading
    from stoicheia.serve.app import create_app

    def refuse(*a, **k):
        raise AssertionError("load_model called by a request")

    monkeypatch.setattr(loading, "load_model", refuse)
    app = create_app(model)
    assert app.state.model is model
    with TestClient(app) as c:
        assert c.post("/restore", json={"text": "καὶ [..]", "top_k": 1}).status_code == 200
        info = c.get("/model").json()
        assert info["source"] == model.source and info["shipped"] is False  # a user's own run


def test_schema_and_docs(client):
    schema = client.get("/openapi.json").json()
    assert set(schema["paths"]) >= {"/restore", "/restore-epidoc", "/model"}
    req = schema["components"]["schemas"]["RestoreRequest"]
    assert set(req["properties"]) == {
        "text",
        "top_k",
        "unknown_width",
        "about_margin",
        "respace",
        "accents",
        "supplements",
        "decoder",
    }
    assert "GapOut" in schema["components"]["schemas"]
    # no page that loads Swagger UI or ReDoc from a CDN (the page promises no outside resource)
    assert client.get("/docs").status_code == 404 and client.get("/redoc").status_code == 404


def test_the_page_needs_no_network(client):
    page = client.get("/")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    html = page.text
    refs = re.findall(r'(?:src|href)="([^"]+)"', html)
    assert refs and all(
        r.startswith("/") or r.startswith("http://sicily.classics") for r in refs
    ), refs
    for asset in ("/static/app.js", "/static/style.css", "/static/examples.json"):
        body = client.get(asset)
        assert body.status_code == 200, asset
        assert not re.search(r"https?://(?!sicily\.classics)", body.text), (
            asset
        )  # no CDN, no web font service
    css = client.get("/static/style.css").text
    for name in ("greek-serif.ttf", "greek-sans.ttf"):
        assert f'url("/static/fonts/{name}")' in css
        font = client.get(f"/static/fonts/{name}")
        assert (
            font.status_code == 200 and font.content[:4] == b"\x00\x01\x00\x00"
        )  # a TrueType font
    assert client.get("/static/fonts/LICENSE_DEJAVU.txt").status_code == 200


def test_the_font_has_polytonic_greek():
    from fontTools.ttLib import TTFont

    from stoicheia.serve.fonts import greek_fonts

    fonts, licence = greek_fonts()
    serif = TTFont(str(fonts["greek-serif.ttf"])).getBestCmap()
    sans = TTFont(str(fonts["greek-sans.ttf"])).getBestCmap()
    # every precomposed letter of Greek and Greek Extended in the serif (the page shows NFC)
    letters = [
        chr(c)
        for c in [*range(0x391, 0x3CA), *range(0x1F00, 0x2000)]
        if unicodedata.name(chr(c), "").startswith("GREEK")
    ]
    assert len(letters) > 280 and [c for c in letters if ord(c) not in serif] == []
    # text typed decomposed: the sans has them all
    marks = "\u0300\u0301\u0308\u0313\u0314\u0323\u0342\u0345"
    assert [c for c in marks if ord(c) not in sans] == []
    assert licence is not None and licence.is_file()


def test_restore_epidoc_missing_is_501(client, monkeypatch):
    from stoicheia.serve import epidoc_upload as app_module

    monkeypatch.setattr(app_module, "_restore_epidoc_function", lambda: None)
    r = client.post("/restore-epidoc", files={"file": ("a.xml", b"<TEI/>")})
    assert r.status_code == 501 and "stoicheia.restore_epidoc is missing" in r.json()["error"]
    assert client.get("/model").json()["epidoc_upload"] is False


def test_restore_epidoc_real_file(client, corpus_root):
    """An I.Sicily file in, the restored file out (once stoicheia.restore_epidoc exists)."""
    import stoicheia

    if not hasattr(stoicheia, "restore_epidoc"):
        pytest.skip(
            "stoicheia.restore_epidoc is not in this checkout yet (the endpoint answers 501)"
        )
    src = (corpus_root / "isicily" / "inscriptions" / "ISic003084.xml").read_bytes()
    r = client.post("/restore-epidoc", files={"file": ("ISic003084.xml", src)}, data={"top_k": "2"})
    assert r.status_code == 200, r.text
    # a name of its own (the original beside it is not overwritten), as the page downloads it
    assert r.headers["content-disposition"] == 'attachment; filename="ISic003084.restored.xml"'
    assert re.fullmatch(r"restored=[1-9]\d* left=\d+ refused=\d+", r.headers["x-stoicheia-gaps"])
    assert r.content != src and b'resp="#stoicheia"' in r.content
    assert client.get("/model").json()["epidoc_upload"] is True
    bad = client.post("/restore-epidoc", files={"file": ("x.xml", b"<notxml")})
    assert bad.status_code == 422 and "malformed XML" in bad.json()["error"]


def test_restore_epidoc_wiring(client, monkeypatch):
    import stoicheia

    seen = {}

    class Outcome:
        def __init__(self, status):
            self.status = status

    class Result:  # what restore_epidoc returns: the restored bytes and each gap's outcome
        def __init__(self, xml):
            self.xml = xml
            self.gaps = [Outcome("restored"), Outcome("left"), Outcome("restored")]

    def fake(
        model, xml, *, top_k, unknown_width, on_step, progress
    ):  # the endpoint passes the bytes and options on
        seen.update(xml=xml, top_k=top_k, unknown_width=unknown_width)
        progress(0, 3)  # the file's gaps to fill (GET /progress, tests/test_serve_progress.py)
        on_step(1, 3, 1, 1)  # a forward pass; the cancel check: the client is still there
        return Result(xml.replace(b"gap", b"supplied"))

    monkeypatch.setattr(stoicheia, "restore_epidoc", fake, raising=False)
    r = client.post(
        "/restore-epidoc", files={"file": ("ISic 1.xml", b"<ab><gap/></ab>")}, data={"top_k": "3"}
    )
    assert r.status_code == 200 and r.content == b"<ab><supplied/></ab>"
    assert r.headers["content-disposition"] == (
        "attachment; filename=\"ISic_1.restored.xml\"; filename*=UTF-8''ISic%201.restored.xml"
    )
    assert r.headers["x-stoicheia-gaps"] == "restored=2 left=1 refused=0"  # every count, 0 too
    assert seen == {"xml": b"<ab><gap/></ab>", "top_k": 3, "unknown_width": 20}
    r = client.post("/restore-epidoc", files={"file": ("a.xml", b"<ab/>")}, data={"top_k": "0"})
    assert r.status_code == 422 and r.json()["error"].startswith(
        "top_k: Input should be greater than or equal to 1"
    )

    def refuses(model, xml, **options):
        raise ValueError(
            "a.xml:1: root element is <x>, not a TEI P5 <TEI>. Fix: give an EpiDoc file\nmore"
        )

    monkeypatch.setattr(stoicheia, "restore_epidoc", refuses, raising=False)
    r = client.post("/restore-epidoc", files={"file": ("a.xml", b"<x/>")})
    assert r.status_code == 422 and r.json()["error"].endswith("Fix: give an EpiDoc file")


def test_serve_command_refusals(tmp_path, capsys):
    from stoicheia.cli import main

    assert main(["serve", str(tmp_path / "none.pt"), "--port", "0"]) == 2
    assert "argument --port: 0 is out of range" in capsys.readouterr().err
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        assert main(["serve", str(tmp_path / "none.pt"), "--port", str(port)]) == 2
    err = capsys.readouterr().err
    assert (
        err.count("\n") == 1
        and f"cannot listen on 127.0.0.1:{port} (in use by another program)" in err
    )
    assert main(["serve", str(tmp_path / "none.pt"), "--port", str(port)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("stoicheia serve: error: ") and "none.pt" in err and err.count("\n") == 1


def test_examples_are_the_scripts_output(tmp_path, corpus_root):
    """examples.json is what scripts/make_serve_examples.py writes from the shared I.Sicily
    files."""
    sys.path.insert(0, str(REPO / "scripts"))
    import make_serve_examples

    out = tmp_path / "examples.json"
    assert (
        make_serve_examples.main(
            ["--corpus", str(corpus_root / "isicily" / "inscriptions"), "--out", str(out)]
        )
        == 0
    )
    assert out.read_text(encoding="utf-8") == (STATIC / "examples.json").read_text(encoding="utf-8")
    data = json.loads(out.read_text(encoding="utf-8"))
    assert data["licence"] == "CC BY 4.0" and len(data["examples"]) == 3
    assert all(e["id"].endswith("4") and "[" in e["text"] for e in data["examples"])


def test_examples_show_lost_lines_as_leiden_and_offer_no_gap_for_them(client, corpus_root):
    """A ``<gap unit="line">`` of an example's edition is ``- - - - - -`` on a line of its own,
    not a lacuna: every lacuna of the example text is a ``<gap>`` of letters of its edition;
    the restorer leaves the lost line as it is, and "Copy as EpiDoc" writes it as a gap of a
    line."""
    from stoicheia.text.leiden import parse_leiden
    from stoicheia.text.leiden_segments import Lacuna

    data = json.loads((STATIC / "examples.json").read_text(encoding="utf-8"))
    lost_somewhere = False
    for e in data["examples"]:
        root = etree.parse(
            str(corpus_root / "isicily" / "inscriptions" / f"{e['id']}.xml")
        ).getroot()
        edition = next(d for d in root.iter(f"{TEI}div") if d.get("type") == "edition")
        gaps = list(edition.iter(f"{TEI}gap"))
        lines = sum(int(g.get("quantity") or 1) for g in gaps if g.get("unit") == "line")
        lost_somewhere |= lines > 0
        rows = e["text"].split("\n")
        assert sum(1 for r in rows if r == "- - - - - -") == lines, e["id"]
        assert sum(isinstance(x, Lacuna) for x in parse_leiden(e["text"])) == len(gaps) - sum(
            1 for g in gaps if g.get("unit") == "line"
        ), e["id"]
        if lines:
            body = client.post("/restore", json={"text": e["text"], "top_k": 1}).json()
            assert all("- - -" not in g["notation"] for g in body["gaps"])
            assert body["restorations"][0]["text"].endswith("\n- - - - - -")
            assert body["epidoc"][0].endswith(
                '<gap reason="lost" extent="unknown" unit="line"/></ab>'
            )
    assert lost_somewhere  # the examples hold a lost line (else this test tests nothing)


def test_fragment_writes_a_lost_line_as_a_gap_of_a_line():
    from stoicheia.serve.fragment import epidoc_ab

    data = {
        "input": "- - - - - -\nτῇ πρὸ [...] καλανδῶν\n------\nκαὶ - -",
        "gaps": [{"index": 0, "kind": "lacuna"}],
        "restorations": [{"fills": ["δεκ"]}],
    }
    ab = epidoc_ab(data)
    gap = '<gap reason="lost" extent="unknown" unit="line"/>'
    assert ab == (
        '<ab xml:space="preserve"><lb n="1"/>'
        + gap
        + '\n<lb n="2"/>τῇ πρὸ <supplied reason="lost" cert="low" '
        'resp="#stoicheia">δεκ</supplied> καλανδῶν\n<lb n="3"/>' + gap + '\n<lb n="4"/>καὶ - -</ab>'
    )
    etree.fromstring(ab)


def test_static_files_ship_with_the_package():
    """pyproject's package data covers every file of the page (a wheel holds them)."""
    import fnmatch

    line = re.search(
        r'^"stoicheia\.serve" = (\[.*\])$', (REPO / "pyproject.toml").read_text(), re.M
    )
    assert line, "pyproject.toml: no package data for stoicheia.serve"
    patterns = json.loads(line.group(1))
    files = [p.relative_to(STATIC.parent).as_posix() for p in STATIC.rglob("*") if p.is_file()]
    assert (
        files and [f for f in files if not any(fnmatch.fnmatch(f, pat) for pat in patterns)] == []
    )


class _AlwaysRho:
    """A stand-in encoder whose char head says ρ at every slot (every other head uniform)."""

    def __call__(self, batch):
        import torch

        from stoicheia.text import alphabet as A

        B, T = batch["chars"].shape
        out = {
            h: torch.zeros(B, T, n)
            for h, n in (("char", 27), ("boundary", 3), ("dia", 48), ("cap", 2), ("punct", 6))
        }
        out["char"][:, :, A.LETTERS.index("ρ")] = 8.0
        return out


def test_uncertain_letters_and_supplements_in_the_json():
    """An uncertain letter the model changes comes back as its fill; a kept supplement stays
    text."""
    from stoicheia.inference.loading import LoadedModel
    from stoicheia.inference.restore import restore

    class Loaded(LoadedModel):
        def __call__(self, batch):
            return self.encoder(batch)

    stub = Loaded(_AlwaysRho(), {"data": {"seq_len": 512}}, "stub", "checkpoint")
    text = "[καὶ] τ̣οῦ [..] α̣ὐτοῦ"
    data = restore(stub, text, top_k=1).to_json()
    assert [(g["kind"], g["notation"], text[g["start"] : g["end"]]) for g in data["gaps"]] == [
        ("uncertain", "τ̣", "τ̣"),
        ("lacuna", "[..]", "[..]"),
        ("uncertain", "α̣", "α̣"),
    ]
    # a capital, and accents before the dot: the notation as typed, where it was typed
    caps = "ΚΑΙ Ἀ̣ΥΤΟΥ [..] ὁ̣ δῆμος"
    data_caps = restore(stub, caps, top_k=1).to_json()
    assert [(g["notation"], caps[g["start"] : g["end"]]) for g in data_caps["gaps"]] == [
        ("Ἀ̣", "Ἀ̣"),
        ("[..]", "[..]"),
        ("ὁ̣", "ὁ̣"),
    ]
    # α̣ before ὐ stays a vowel: ρὐτοῦ is no Greek (a breathing on υ: the α is a diphthong's)
    assert [_strip(f) for f in data["restorations"][0]["fills"]] == ["ρ", "ρρ", "α"]
    assert [len(g["letter_probs"]) for g in data["gaps"]] == [1, 2, 1]
    assert _strip(data["restorations"][0]["text"]) == _strip("[καὶ] ρ̣οῦ [ρρ] α̣ὐτοῦ")
    repredicted = restore(stub, text, top_k=1, supplements="repredict").to_json()
    assert [g["kind"] for g in repredicted["gaps"]] == [
        "supplement",
        "uncertain",
        "lacuna",
        "uncertain",
    ]
    assert [_strip(f) for f in repredicted["restorations"][0]["fills"]] == ["ρρρ", "ρ", "ρρ", "α"]
    assert repredicted["gaps"][0]["notation"] == "[καὶ]" and repredicted["gaps"][0]["start"] == 0


def test_the_serve_command_serves(model, tmp_path):
    """``stoicheia serve EXPORT --port N`` in its own process: it loads the model, answers the
    page and /restore on 127.0.0.1, and Ctrl-C (SIGINT) stops it with status 0."""
    import os
    import signal
    import subprocess
    import time

    import httpx

    from stoicheia.inference.export.folder import export_model

    folder = export_model(model, tmp_path / "export")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "stoicheia",
            "serve",
            str(folder),
            "--port",
            str(port),
            "--device",
            "cpu",
        ],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 180
        while True:
            try:
                if httpx.get(base + "/model", timeout=5).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "stoicheia serve did not answer within 180 s"
            time.sleep(0.5)
        assert httpx.get(base + "/").text.startswith("<!doctype html>")
        r = httpx.post(base + "/restore", json={"text": "καὶ [..] τοῦ", "top_k": 1}, timeout=120)
        assert r.status_code == 200 and r.json()["gaps"][0]["notation"] == "[..]"
        # a client that half-closes after its request is answered (serve.half_close)
        with socket.create_connection(("127.0.0.1", port), timeout=120) as raw:
            raw.sendall(b"GET /model HTTP/1.1\r\nHost: x\r\n\r\n")
            raw.shutdown(socket.SHUT_WR)
            got = b""
            while chunk := raw.recv(65536):
                got += chunk
        assert got.startswith(b"HTTP/1.1 200 ") and b'"run_name"' in got, got[:200]
    finally:
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert out.startswith(
        f"serving {folder} (step 0) at http://127.0.0.1:{port}/ "
        "(API schema: /openapi.json); Ctrl-C stops"
    )


def test_spaced_unknown_lacuna_keeps_one_pair_of_brackets(client):
    """``[ - - - ]`` (blanks inside the brackets, as many editions print it): the gap's notation
    and span are the whole sign, the restored Leiden is ``[fill]`` (not ``[ [fill] ]``), and the
    fragment has no stray blanks where the brackets were."""
    text = "καὶ [ - - - ] τοῦ"
    data = client.post("/restore", json={"text": text, "top_k": 2, "unknown_width": 4}).json()
    (gap,) = data["gaps"]
    assert gap["notation"] == "[ - - - ]" and text[gap["start"] : gap["end"]] == "[ - - - ]"
    for rest, frag in zip(data["restorations"], data["epidoc"], strict=True):
        assert rest["text"] == f"καὶ [{rest['fills'][0]}] τοῦ"
        ab = etree.fromstring(frag)
        assert ab.find("supplied").text == rest["fills"][0]
        assert "καὶ <supplied" in frag and "</supplied> τοῦ" in frag


def test_fragment_line_division_and_vacat():
    """``|`` is a line division (``<lb/>``; ``break="no"`` inside a word), and a vacat keeps its
    size (EpiDoc Guidelines: ``<space quantity="N" unit="character"/>``)."""
    from stoicheia.serve.fragment import epidoc_ab

    data = {
        "input": "καὶ τοῦ | δή[..]|ου vac. 3 τ vac. ca. 2 κ vac. ω",
        "gaps": [{"index": 0, "kind": "lacuna"}],
        "restorations": [{"fills": ["μο"]}],
    }
    frag = epidoc_ab(data)
    assert frag == (
        '<ab xml:space="preserve"><lb n="1"/>καὶ τοῦ\n<lb n="2"/>δή'
        '<supplied reason="lost" cert="low" resp="#stoicheia">μο</supplied>'
        '<lb n="3" break="no"/>ου '
        '<space quantity="3" unit="character"/> τ '
        '<space quantity="2" unit="character" precision="low"/> κ '
        '<space extent="unknown" unit="character"/> ω</ab>'
    )
    assert "|" not in "".join(etree.fromstring(frag).itertext())


def test_the_frameworks_refusals_are_one_line_too(client):
    """A body that is not UTF-8, a path or a method the server does not have: ``{"error": ...}``
    like every other refusal, not the framework's ``{"detail": ...}``."""
    r = client.post(
        "/restore",
        content=b'{"text": "\xff\xfe [..]"}',
        headers={"content-type": "application/json"},
    )
    assert r.status_code == 400 and set(r.json()) == {"error"} and "UTF-8" in r.json()["error"]
    r = client.get("/restor")
    assert (
        r.status_code == 404 and set(r.json()) == {"error"} and "/openapi.json" in r.json()["error"]
    )
    r = client.get("/restore")
    assert r.status_code == 405 and set(r.json()) == {"error"}
    assert client.get("/static/nothing.js").json() == {
        "error": "no page or API at /static/nothing.js; the page is at /, "
        "the API is described at /openapi.json"
    }


def test_upload_errors_name_the_uploaded_file(client):
    import stoicheia

    if not hasattr(stoicheia, "restore_epidoc"):
        pytest.skip("stoicheia.restore_epidoc is not in this checkout")
    r = client.post(
        "/restore-epidoc", files={"file": ("ISic999999.xml", b"<TEI><text>caf\xe9</text></TEI>")}
    )
    assert r.status_code == 422
    assert r.json()["error"].startswith("ISic999999.xml:1: bytes are not UTF-8"), r.json()
    r = client.post("/restore-epidoc", files={"file": ("notes.xml", b"<root/>")})
    assert r.json()["error"].startswith("notes.xml: the root element is <root>"), r.json()


def test_schema_describes_the_real_responses(client):
    """The schema says what the server answers: the EpiDoc download is XML (not JSON) with its
    gap count header, and every refusal is an ErrorResponse."""
    paths = client.get("/openapi.json").json()["paths"]
    ok = paths["/restore-epidoc"]["post"]["responses"]["200"]
    assert set(ok["content"]) == {"application/xml"} and "X-Stoicheia-Gaps" in ok["headers"]
    error = {"$ref": "#/components/schemas/ErrorResponse"}
    for path, codes in (
        ("/restore", ("400", "413", "422")),
        ("/restore-epidoc", ("400", "413", "422", "501")),
    ):
        responses = paths[path]["post"]["responses"]
        for code in codes:
            assert responses[code]["content"]["application/json"]["schema"] == error, (path, code)


def test_a_body_that_is_not_json_is_said_so(client):
    """A body that is not JSON (or not a JSON object, or none): one line saying so and what to
    send, not FastAPI's "0: JSON decode error"."""
    for body, ctype, message in (
        (
            b"not json",
            "application/json",
            r"^the request body is not JSON: Expecting value at character 0; "
            r"send a JSON object such as \{\"text\": ",
        ),
        (
            b'{"text": "\xce\xb1 [..]",',
            "application/json",
            r"^the request body is not JSON: .* at character \d+; send ",
        ),
        (
            b"not json",
            "text/plain",
            r"^the request body is not a JSON object \(it is text\); send ",
        ),
        (
            b"[1]",
            "application/json",
            r"^the request body is not a JSON object \(it is list\); send ",
        ),
        (  # a JSON object sent as text (curl -d without -H, a form's default): its header said
            '{"text": "καὶ [..]"}'.encode(),
            "text/plain",
            r"^the request body is a JSON object sent as text, not as JSON; send it with the "
            r"header content-type: application/json$",
        ),
        (b"", "application/json", r"^the request body is empty; send "),
    ):
        r = client.post("/restore", content=body, headers={"content-type": ctype})
        assert r.status_code == 422 and set(r.json()) == {"error"}, r.text
        assert re.search(message, r.json()["error"]), r.json()["error"]
        assert "\n" not in r.json()["error"] and "JSON decode error" not in r.json()["error"]


def test_api_wording_names_the_fields():
    from stoicheia.serve.api_errors import api_wording

    assert api_wording("x; use --respace to predict word division") == (
        'x; send "respace": true to predict word division'
    )
    assert (
        api_wording("y; give --unknown-width 94 or less") == 'y; send "unknown_width": 94 or less'
    )
    assert api_wording("give a smaller --about-margin or a narrower lacuna") == (
        'give a smaller "about_margin" or a narrower lacuna'
    )
    # an option the API does not take is left as the command line says it
    assert api_wording("a larger window (--window)") == "a larger window (--window)"


def test_the_upload_says_why_gaps_were_left_with_the_counts(client, monkeypatch):
    """The page said "left 7" and no more; restore --epidoc's summary says why: the upload's
    answer counts the gaps left, and those refused, by reason (X-Stoicheia-Gaps-Left and
    -Refused, JSON lists the page reads), the most frequent first."""
    from types import SimpleNamespace

    import stoicheia

    floor = "below the confidence floor --min-probability 0.25, readings proposed"
    outcomes = [("restored", "")] * 2 + [("left", floor)] * 5 + [("left", "lines")] * 2
    outcomes += [("refused", "no Greek letter in 'ΧΙ' (the gap's part): nothing to restore")]

    def fake(model, xml, **options):
        gaps = [SimpleNamespace(status=s, reason=r) for s, r in outcomes]
        return SimpleNamespace(xml=xml, gaps=gaps)

    monkeypatch.setattr(stoicheia, "restore_epidoc", fake, raising=False)
    r = client.post("/restore-epidoc", files={"file": ("a.xml", b"<ab><gap/></ab>")})
    assert r.status_code == 200
    assert r.headers["x-stoicheia-gaps"] == "restored=2 left=7 refused=1"
    assert json.loads(r.headers["x-stoicheia-gaps-left"]) == [[floor, 5], ["lines", 2]]
    refused = json.loads(r.headers["x-stoicheia-gaps-refused"])
    assert refused == [[outcomes[-1][1], 1]] and r.headers["x-stoicheia-gaps-refused"].isascii()
    # the same reasons and order as restore --epidoc's summary line
    from stoicheia.inference.epidoc.corpus import CorpusSummary

    summary = CorpusSummary(left=7, left_reasons=Counter({floor: 5, "lines": 2}))
    assert f"7 left ({floor} 5, lines 2)" in summary.line()


def test_restored_name_and_gap_header():
    from types import SimpleNamespace

    from stoicheia.serve.epidoc_upload import gaps_header, restored_name

    assert restored_name("ISic001020.xml") == "ISic001020.restored.xml"
    assert restored_name("dir/Ἐπί 1.XML") == "Ἐπί 1.restored.xml"
    assert restored_name("C:\\texts\\a.xml") == "a.restored.xml"
    assert restored_name(None) == "inscription.restored.xml"
    assert restored_name("notes") == "notes.restored.xml"
    gaps = [SimpleNamespace(status=s) for s in ("restored", "restored")]
    assert gaps_header(gaps) == "restored=2 left=0 refused=0"
    assert gaps_header([]) == "restored=0 left=0 refused=0"


def test_a_greek_file_name_comes_back_as_it_was(client, monkeypatch):
    """An upload named in Greek is downloaded under its own name: ``filename*=UTF-8''`` with
    the name percent-encoded (RFC 6266, RFC 8187), which browsers and ``curl -OJ`` use, and an
    ASCII ``filename=`` for clients that read only that one (not ``________.restored.xml``)."""
    from urllib.parse import unquote

    import stoicheia
    from stoicheia.serve.epidoc_upload import ascii_name, content_disposition

    monkeypatch.setattr(stoicheia, "restore_epidoc", lambda model, xml, **kw: xml, raising=False)
    name = "Ἐπιγραφὴ Συρακουσῶν.xml"
    r = client.post("/restore-epidoc", files={"file": (name, b"<ab/>")})
    assert r.status_code == 200, r.text
    header = r.headers["content-disposition"]
    fallback, star = re.fullmatch(
        r'attachment; filename="([ -~]+)"; filename\*=(\S+)', header
    ).groups()
    assert fallback == "inscription.restored.xml"
    assert star.startswith("UTF-8''") and unquote(star[7:]) == "Ἐπιγραφὴ Συρακουσῶν.restored.xml"
    assert header.isascii()
    # Latin names keep what ASCII can say of them
    assert ascii_name("Ἰσίδωρος_ISic000154.restored.xml") == "ISic000154.restored.xml"
    assert ascii_name("café.restored.xml") == "cafe.restored.xml"
    assert content_disposition("ISic000154.restored.xml") == (
        'attachment; filename="ISic000154.restored.xml"'
    )


@pytest.mark.parametrize(
    "body, field",
    [
        ('{"text": "καὶ [..]", "top_k": 1, "top_k": 5}', '"top_k"'),
        ('{"text": "καὶ [..]", "text": "τοῦ [...]"}', '"text"'),
        ('{"text": "καὶ [..]", "respace": false, "respace": true}', '"respace"'),
    ],
)
def test_a_key_given_twice_is_refused(client, body, field):
    """JSON parsers keep the last of two equal keys without a word; the API says which key the
    request gives twice (422, one line), whatever the content-type says."""
    for headers in ({"content-type": "application/json"}, {}):
        r = client.post("/restore", content=body.encode(), headers=headers)
        assert r.status_code == 422, r.text
        assert r.json() == {
            "error": f"the request body gives {field} twice (JSON would keep only the last): "
            "send each field once"
        }
    from stoicheia.serve.api_errors import duplicate_key

    assert duplicate_key(b'{"a": {"b": 1, "b": 2}}') == "b"  # nested objects too
    assert duplicate_key(b'{"a": 1, "b": 1}') is None
    assert duplicate_key(b"not json") is None  # said by the framework


def test_head_answers_every_page_and_get(client):
    """``HEAD`` (link checkers, ``curl -I``) gets the headers of the ``GET``: 200, not 405."""
    for path in ("/", "/model", "/static/app.js", "/static/fonts/greek-serif.ttf", "/openapi.json"):
        get, head = client.get(path), client.head(path)
        assert get.status_code == 200 and head.status_code == 200, (path, head.status_code)
        assert head.content == b""
        assert head.headers["content-type"] == get.headers["content-type"], path
    # HEAD is not listed in the schema (each operation once)
    paths = client.get("/openapi.json").json()["paths"]
    assert "head" not in paths["/model"] and "get" in paths["/model"]


def test_model_says_which_experts_are_loaded(model, tmp_path):
    """``GET /model`` says whether a letter n-gram and a parallels index are fused in, with their
    weights, as ``POST /restore`` finds them, and never a path of the server's."""
    import shutil

    import numpy as np

    from stoicheia.inference.loading import LoadedModel
    from stoicheia.inference.ngram import LetterNgram, save_ngram
    from stoicheia.serve.app import create_app

    with TestClient(create_app(model)) as c:
        info = c.get("/model").json()
    assert (info["ngram"], info["ngram_weight"], info["parallels"], info["parallels_weight"]) == (
        False,
        0.0,
        False,
        0.0,
    )
    assert info["experts_error"] is None and info["readings"] is False
    # a checkpoint with its n-gram beside it
    run = tmp_path / "run"
    run.mkdir()
    ckpt = run / "best.pt"
    ckpt.write_bytes(b"")
    ngram = LetterNgram(order=3).fit([np.arange(40, dtype=np.uint8) % 24])
    save_ngram(ngram, run / "ngram.npz", weight=0.4, chosen_on="a test")
    beside = LoadedModel(model.encoder, model.config, str(ckpt), "checkpoint", step=0)
    with TestClient(create_app(beside)) as c:
        info = c.get("/model").json()
    assert info["ngram"] is True and info["ngram_weight"] == pytest.approx(0.4)
    assert info["parallels"] is False
    # a fusion file naming an index that is not there: said, with no path of the server's
    (run / "fusion.json").write_text(
        json.dumps({"parallels_index": str(tmp_path / "gone"), "parallels_weight": 0.5}),
        encoding="utf-8",
    )
    with TestClient(create_app(beside)) as c:
        info = c.get("/model").json()
    assert info["parallels"] is False
    # a note, not an error: restore goes on without the parallels (issue 33)
    assert info["experts_error"].startswith("no parallels: the index fusion.json names"), info
    assert "gone) is not there" in info["experts_error"]
    assert str(tmp_path) not in info["experts_error"]
    shutil.rmtree(run)


def test_the_docs_list_every_field_of_the_answer():
    """docs/restoration-page.md's outline of the answer names every field the schema has (a
    gap's ``parallels`` with its fills and passages included), and its text every field of
    ``GET /model``."""
    from stoicheia.serve import schemas

    page = (REPO / "docs" / "restoration-page.md").read_text(encoding="utf-8")
    outline = page[page.index('"input": str') : page.index('"respaced": [str] | null')]
    for model in (
        schemas.RestoreResponse,
        schemas.GapOut,
        schemas.RestorationOut,
        schemas.Alternative,
        schemas.EditorReading,
        schemas.FillParallelsOut,
        schemas.ParallelOut,
    ):
        missing = [f for f in model.model_fields if f'"{f}"' not in outline + '"respaced"']
        assert not missing, f"the outline of the answer lacks {model.__name__}'s {missing}"
    told = ("ngram", "ngram_weight", "parallels", "parallels_weight", "readings", "experts_error")
    assert set(told) <= set(schemas.ModelInfo.model_fields)
    assert all(f"`{f}`" in page for f in told)


def test_accents_keep_the_senders_word_division(client):
    """``"accents": true``: the model's accents, the text's own word division and punctuation
    (``respace`` would redivide it); the answer's ``respaced`` holds the accented text, and
    asking for both is refused with the one line."""

    def skeleton(s):
        s = re.sub(r"\[[^\]]*\]", "", s)
        s = "".join(c for c in unicodedata.normalize("NFD", s) if not unicodedata.combining(c))
        return s.lower().replace("ς", "σ")

    text = "και του δη[..] του εαυτου, χαιρε"
    data = client.post("/restore", json={"text": text, "top_k": 2, "accents": True}).json()
    assert [skeleton(r) for r in data["respaced"]] == [skeleton(text)] * 2, data["respaced"]
    assert any("--accents" in n for n in data["notes"])
    r = client.post("/restore", json={"text": text, "respace": True, "accents": True})
    assert r.status_code == 422 and "use one of them" in r.json()["error"]


def test_model_says_when_the_parallels_are_weighed_as_whole_readings(model, monkeypatch):
    """With an index and whole-reading weights (the fused decoder's way), ``GET /model`` says
    ``readings``: the page then says the parallels' fills are weighed as whole readings, not
    'listed, not fused' (their letter-by-letter weight is 0 then)."""
    from types import SimpleNamespace

    from stoicheia.inference.restore import fusion_file
    from stoicheia.inference.restore.whole_readings import ReadingWeights
    from stoicheia.serve.app import experts

    fusion = SimpleNamespace(
        ngram=object(),
        weight=0.6,
        parallels=object(),
        parallels_weight=0.0,
        readings=ReadingWeights(0.7, 1.0, 0.0),
    )
    monkeypatch.setattr(fusion_file, "find_fusion", lambda *a, **k: fusion)
    info = experts(model)
    assert info["parallels"] is True and info["readings"] is True
    assert info["parallels_weight"] == 0.0
    fusion.readings = None
    assert experts(model)["readings"] is False
    js = (REPO / "stoicheia" / "serve" / "static" / "app.js").read_text(encoding="utf-8")
    assert "m.readings ?" in js and "weighed as whole readings" in js
    # the default decoder parallels (chosen by the benchmark): their fills first, said so
    assert 'm.decoder === "parallels" ? "parallels: their fills first' in js


def test_model_names_its_checkpoint_without_the_servers_folders(model):
    """GET /model (and so the page's model line) names a local checkpoint by its folder and file
    name, never by the server's absolute path; an object-store URI as given."""
    from stoicheia.inference.loading import LoadedModel
    from stoicheia.serve.app import create_app

    for source, shown in (
        ("/srv/private/alice/runs/stoicheia-demo/best.pt", "stoicheia-demo/best.pt"),
        ("s3://bucket/runs/stoicheia-demo/best.pt", "s3://bucket/runs/stoicheia-demo/best.pt"),
    ):
        other = LoadedModel(model.encoder, model.config, source, "checkpoint", step=0)
        with TestClient(create_app(other)) as c:
            assert c.get("/model").json()["source"] == shown
