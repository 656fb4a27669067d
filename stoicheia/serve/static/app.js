// The restoration page: sends the text to POST /restore and draws the answer (the restore
// result JSON: input, gaps, restorations, notes; see docs/restoration-page.md).
"use strict";

const $ = (id) => document.getElementById(id);
let current = null;   // the last answer of /restore
let shown = 0;        // which whole-text restoration is drawn
// the request in flight (an AbortController): Cancel aborts its fetch, and the server, seeing
// the connection closed, stops decoding it (the next request does not wait for it)
let inflight = null;
let fileInflight = null;

function el(tag, attrs = {}, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === "class") e.className = v;
    else if (k === "style") e.style.cssText = v;
    else e.setAttribute(k, v);
  }
  for (const c of children) e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return e;
}

// a letter with its combining marks (accents, breathings, dot below) is one cluster
const clusters = (s) => s.normalize("NFC").match(/\P{M}\p{M}*/gu) || [];
const isLetter = (c) => /\p{L}/u.test(c);
const baseLetters = (s) => Array.from(s.normalize("NFD").toLowerCase()).filter((c) => /\p{L}/u.test(c)).join("");
// a probability as the command line prints it: 50%, <1%
const pct = (p) => (p >= 0.005 ? `${Math.round(100 * p)}%` : "<1%");
// a whole restoration's probability, as restore prints #k's: whole per cent from 1 %, two
// significant digits below (several gaps make small ones), "<0.0001%" below that
function readingPct(p) {
  const x = 100 * p;
  if (x >= 0.995) return `${Math.round(x)}%`;
  if (x >= 1e-4) return `${x.toFixed(1 - Math.floor(Math.log10(x)))}%`;
  return "<0.0001%";
}
// the API's offsets (gaps' start and end) count Unicode code points, as Python does; a
// JavaScript string counts UTF-16 units, two for a character outside the Basic Multilingual
// Plane (the acrophonic numerals, papyrus fractions such as 𐅵): slice by code points
const codePoints = (s) => Array.from(s);
const cut = (cps, a, b) => cps.slice(a, b).join("");

// whether the page draws a gap's fill in brackets of its own: only a gap typed with them
// ([....], [---], [καὶ] re-predicted); a gap inside an editor's brackets ([ι ---]: its notation
// is ---) is already in the typed text's, and ++ is printed as dotted letters, as restore prints
// them (ἀνέθηκε [ι ἀ], not [ι [ἀ]]); the dots of a ⟦ ⟧ or ⸢ ⸣ are filled in brackets inside
// them, as restore prints ⟦[ντε]⟧ ([καὶ ...]'s dots are in the typed [ ] already)
const ownBrackets = (g) =>
  g.kind !== "uncertain" && (g.notation.startsWith("[") || inDottedBrackets(g));
// the last bracket opened before gap g (and not closed) is a ⟦ ⟧, ⸢ ⸣ or [[ ]]
function inDottedBrackets(g) {
  const before = codePoints(current.input).slice(0, g.start).join("");
  const m = before.match(/(\[\[|[\[⟦〚⸢⌈⸤⌊˹])[^\[\]⟦⟧〚〛⸢⸣⌈⌉⸤⸥⌊⌋˹˺]*$/u);
  return Boolean(m) && m[1] !== "[" && /^\.[.\s]*$/.test(g.notation);
}

// a letter with one dot below (the fill of an uncertain letter may already carry it)
const dotted = (s) => (s.normalize("NFD").includes("\u0323") ? s : s + "\u0323");

// the message under the text area; `field`, the box it is about, gets a red border
function showError(message, field = $("text")) {
  $("result").hidden = true;  // the last restoration belonged to another text
  const box = $("error");
  box.textContent = message;
  box.hidden = false;
  field.classList.add("bad");
}

function clearError() {
  $("error").hidden = true;
  $("error").textContent = "";
  for (const id of ["text", "top-k", "unknown-width"]) $(id).classList.remove("bad");
}

// the options' boxes checked before anything is sent, said in the page's words (the API's own
// line names its fields: "top_k: Input should be less than or equal to 20; see /openapi.json"):
// null when both hold a whole number in range, else [message, the box]
function optionError() {
  const boxes = [["top-k", "top-k", 1, 20, "restorations"],
    ["unknown-width", "unknown width ≤", 1, 10000, "letters"]];
  for (const [id, name, lo, hi, unit] of boxes) {
    const raw = $(id).value.trim();   // "" too for what a number box cannot read
    if (/^\d+$/.test(raw) && Number(raw) >= lo && Number(raw) <= hi) continue;
    const was = raw ? `, not ${raw}` : "; the box is empty";
    return [`${name}: give a whole number of ${unit} from ${lo} to ${hi.toLocaleString("en")}${was}`, $(id)];
  }
  return null;
}

async function errorOf(resp) {
  try {
    const body = await resp.json();
    if (body && typeof body.error === "string") return body.error;
  } catch (_) { /* not JSON */ }
  return `the server answered HTTP ${resp.status}; see the console where stoicheia serve runs`;
}

// the API names the request's fields ("respace": true); on the page, the options' labels
function pageWording(message) {
  return message
    .replaceAll('send "respace": true', "tick respace")
    .replace(/(send )?"accents": true/g, "tick accents")
    .replaceAll('send "supplements": "repredict"', "tick re-predict supplements")
    .replace(/send "unknown_width": (\d+)/g, "set unknown width ≤ $1")
    .replaceAll('"unknown_width"', "unknown width")
    // an EpiDoc document pasted in the text area: the page restores files itself
    .replace(/save the document to a file and run: stoicheia restore --epidoc FILE --out FOLDER \([^)]*\)/,
      "save the document as an .xml file and restore it under An EpiDoc file below (Restore and download)");
}

// a note of the answer (the command line's, word for word) with the options the page has named
// as its boxes are ("respace", not "--respace") and "the planes" (the model's output heads for
// letters, word division, accents and punctuation) said as what they are
function noteWording(note) {
  return pageWording(note)
    .replace(/(^|[\s(])--respace(?![\w-])/g, "$1respace")
    .replace(/(^|[\s(])--accents(?![\w-])/g, "$1accents")
    .replace(/(^|[\s(])--repredict-supplements(?![\w-])/g, "$1re-predict supplements")
    .replace(/\(--decoder (\w+)\)/g, "(decoder $1)")
    .replace("rebuilds the text from the planes", "rebuilds the text from the model's predictions");
}

// a text over the server's limit for one request (256 KiB, HTTP 413: "request body over
// 262,144 bytes"), said in letters, the unit an epigrapher counts
function tooLong(payload) {
  const chars = Array.from(payload.text).length.toLocaleString("en");
  const kb = Math.ceil(new TextEncoder().encode(JSON.stringify(payload)).length / 1024).toLocaleString("en");
  return `the text is ${chars} characters (${kb} KB as sent): one restoration takes at most 256 KB, ` +
    "about 100,000 Greek letters; restore it in parts";
}

// the probabilities of the letters of gap g as filled by restoration r
function letterProbs(g, r) {
  const fill = current.restorations[r].fills[g.index];
  if (fill === g.fill) return g.letter_probs;
  const alt = g.alternatives.find((a) => a.fill === fill);
  const p = alt ? alt.prob : 0;
  return Array.from(baseLetters(fill)).map(() => p);
}

// with respace the model rewrites every letter: draw its text, shading the [ ] runs by the
// gaps' letter probabilities when they line up with the gaps (else plain)
function drawRespaced(box) {
  const text = current.respaced[shown].normalize("NFC");
  const own = current.gaps.filter(ownBrackets).sort((a, b) => a.start - b.start);
  const runs = text.split(/(\[[^\[\]]*\])/);
  const bracketed = runs.filter((_, i) => i % 2 === 1);
  if (bracketed.length !== own.length) { box.append(text); return; }
  runs.forEach((piece, i) => {
    if (i % 2 === 0) { box.append(piece); return; }
    const g = own[(i - 1) / 2];
    const probs = letterProbs(g, shown);
    box.append(el("span", { class: "bracket" }, "["));
    let li = 0;
    for (const c of clusters(piece.slice(1, -1))) {
      if (!isLetter(c)) { box.append(c); continue; }
      const p = probs[li] ?? 0;
      li += 1;
      box.append(el("span", { class: "fill", style: `--p:${p.toFixed(3)}`, "data-p": p.toFixed(4),
        "data-gap": String(g.index), title: `gap ${g.index + 1}: ${c} ${pct(p)}` }, c));
    }
    box.append(el("span", { class: "bracket" }, "]"));
  });
}

function drawRestored() {
  const box = $("restored");
  box.replaceChildren();
  if (current.respaced) {
    drawRespaced(box);
    $("shown-rank").textContent = `#${shown + 1} of ${current.restorations.length}, ${current.rebuilt} by the model`;
    for (const [i, li] of Array.from($("restorations").children).entries()) li.classList.toggle("shown", i === shown);
    return;
  }
  const text = codePoints(current.input);
  const fills = current.restorations[shown].fills;
  const gaps = [...current.gaps].sort((a, b) => a.start - b.start);
  let at = 0;
  for (const g of gaps) {
    if (g.end <= g.start) continue;
    box.append(cut(text, at, g.start).normalize("NFC"));  // the fonts hold the precomposed letters
    const fill = fills[g.index];
    const probs = letterProbs(g, shown);
    const uncertain = g.kind === "uncertain";
    const bracketed = ownBrackets(g);
    if (bracketed) box.append(el("span", { class: "bracket" }, "["));
    let li = 0;
    for (const c of clusters(fill)) {
      if (!isLetter(c)) { box.append(c); continue; }
      const p = probs[li] ?? 0;
      li += 1;
      const span = el("span", { class: "fill", style: `--p:${p.toFixed(3)}`, "data-p": p.toFixed(4),
        "data-gap": String(g.index), title: `gap ${g.index + 1}: ${c} ${pct(p)}` }, uncertain ? dotted(c) : c);
      if (uncertain && baseLetters(c) !== baseLetters(g.notation)) span.classList.add("changed");
      box.append(span);
    }
    if (bracketed) box.append(el("span", { class: "bracket" }, "]"));
    at = g.end;
  }
  box.append(cut(text, at).normalize("NFC"));
  $("shown-rank").textContent = current.restorations.length > 1
    ? `#${shown + 1} of ${current.restorations.length}` : "";
  for (const [i, li] of Array.from($("restorations").children).entries()) li.classList.toggle("shown", i === shown);
}

// restoration i as text, its fills in colour (the Leiden text itself is what Copy gives)
function withFills(i) {
  const out = el("span", { class: "greek" });
  const text = codePoints(current.input);
  let at = 0;
  for (const g of [...current.gaps].sort((a, b) => a.start - b.start)) {
    if (g.end <= g.start) continue;
    out.append(cut(text, at, g.start).normalize("NFC"));
    const fill = current.restorations[i].fills[g.index];
    out.append(g.kind === "uncertain" ? el("span", { class: "alt-fill" }, dotted(fill))
      : ownBrackets(g) ? el("span", {}, "[", el("span", { class: "alt-fill" }, fill), "]")
      : el("span", { class: "alt-fill" }, fill));
    at = g.end;
  }
  out.append(cut(text, at).normalize("NFC"));
  return out;
}

function drawRestorations() {
  const list = $("restorations");
  list.replaceChildren();
  current.restorations.forEach((r, i) => {
    const shownText = current.respaced ? el("span", { class: "greek" }, current.respaced[i].normalize("NFC")) : withFills(i);
    // a button for the keyboard too: Tab reaches it, Enter or Space shows it
    const li = el("li", { title: "show this restoration above", tabindex: "0", role: "button" }, shownText,
      el("span", { class: "score", title: "the probability of this whole restoration" }, readingPct(Math.exp(r.logprob))));
    li.addEventListener("click", () => { shown = i; drawRestored(); });
    li.addEventListener("keydown", (e) => {
      if (e.key === "Enter" || e.key === " ") { e.preventDefault(); shown = i; drawRestored(); }
    });
    list.append(li);
  });
}

function widthChart(wp) {
  const entries = Object.entries(wp).map(([n, p]) => [Number(n), p]).sort((a, b) => a[0] - b[0]);
  const max = Math.max(...entries.map((e) => e[1]), 1e-9);
  const box = el("div", { class: "widths", title: "probability of each width in letters" });
  const [lo, hi] = [entries[0][0], entries[entries.length - 1][0]];
  const top = entries.reduce((a, b) => (b[1] > a[1] ? b : a));
  for (const [n, p] of entries) {
    // labels where they may fit: the ends, every fifth width and the likeliest (thinLabels
    // hides those that would overlap in the width the chart has); every column has its label
    // line, empty or not, so that the bars stand on one line
    const label = entries.length <= 10 || n === lo || n === hi || n % 5 === 0 || n === top[0] ? String(n) : "";
    const rank = n === top[0] ? 0 : n === lo || n === hi ? 1 : n % 5 === 0 ? 2 : 3;
    box.append(el("div", { class: "col", title: `${n} letters: ${pct(p)}` },
      el("span", { class: "v", style: `height:${Math.max(2, Math.round(26 * p / max))}px` }),
      el("span", { class: "n", "data-rank": String(rank) }, label)));
  }
  // the width's probability is its readings' together, so the best reading may be of another
  // width (πρ first, "likeliest 1 letter" from ν, σ, ρ... summed): said, not left to look wrong
  const likeliest = `likeliest ${top[0]} letter${top[0] === 1 ? "" : "s"} (${pct(top[1])}, its readings together)`;
  return el("div", {}, box, el("span", { class: "muted" }, likeliest));
}

// hide the width labels that would overlap another in the width each chart has now (a phone's
// column is narrow): the likeliest first, then the ends, every fifth width, the others
function thinLabels() {
  for (const chart of document.querySelectorAll("#gaps .widths")) {
    const labels = [...chart.querySelectorAll(".n")].filter((l) => l.textContent);
    labels.forEach((l) => { l.style.visibility = ""; });
    const kept = [];
    labels.sort((a, b) => Number(a.dataset.rank) - Number(b.dataset.rank));
    for (const l of labels) {
      const r = l.getBoundingClientRect();
      if (kept.some((k) => r.left < k.right + 3 && k.left < r.right + 3)) l.style.visibility = "hidden";
      else kept.push(r);
    }
  }
}

function drawGaps() {
  const body = $("gaps").querySelector("tbody");
  body.replaceChildren();
  for (const g of current.gaps) {
    const letters = g.min_letters === g.max_letters ? String(g.min_letters) : `${g.min_letters}–${g.max_letters}`;
    const alts = el("td");
    for (const a of g.alternatives) {
      alts.append(el("span", { class: "alt" }, el("span", { class: "greek" }, a.fill),
        el("span", { class: "bar", style: `width:${Math.max(2, Math.round(48 * a.prob))}px` }),
        el("span", { class: "p" }, pct(a.prob))));
    }
    const width = el("td");
    if (g.width_probs && Object.keys(g.width_probs).length) width.append(widthChart(g.width_probs));
    else width.append(el("span", { class: "muted" }, "fixed"));
    // a notation without a blank ([-ca.12-]) is one token: never broken inside
    body.append(el("tr", {}, el("td", {}, String(g.index + 1)),
      el("td", { class: /\s/.test(g.notation) ? "greek notation" : "greek notation whole" }, g.notation),
      el("td", {}, letters), alts, width));
  }
  thinLabels();
  const notes = $("notes");
  notes.replaceChildren(...current.notes.map((n) => el("li", {}, noteWording(n))));
  drawParallels();
}

// where a gap's parallels matched letters, from the letters of context searched on each side
// ([before, after]): one side only at a stone's edge (as matched_where in
// stoicheia/inference/parallels/display.py says it on the console)
function matchedWhere(ctx) {
  const [before, after] = Array.isArray(ctx) ? ctx : [1, 1];
  if (before && !after) return "before the gap; nothing after it to match";
  if (after && !before) return "after the gap; nothing before it to match";
  return "on both sides";
}

// the parallels of each gap (docs/parallels.md): a section per gap, each passage linking to its
// record (/source/ROW) and to the edition's own page where there is one
function drawParallels() {
  const box = $("parallels");
  box.replaceChildren();
  const withIndex = current.gaps.filter((g) => Array.isArray(g.parallels));
  $("parallels-title").hidden = withIndex.length === 0;
  for (const g of withIndex) {
    const where = matchedWhere(g.parallels_context);
    const sec = el("section", { class: "gap-parallels" },
      el("h4", {}, `Gap ${g.index + 1} `, el("span", { class: "greek" }, g.notation),
        el("span", { class: "muted" }, ` · same letters ${where}`)));
    if (!g.parallels.length) {
      sec.append(el("p", { class: "muted" }, `no passage of the corpus has the same letters ${where}`));
    }
    for (const f of g.parallels) {
      const shown = f.parallels.length ? f.parallels[0].supplies : f.fill;
      const list = el("ul", { class: "passages" });
      for (const p of f.parallels) {
        const [before, left, fill, right, after] = p.pieces;
        const src = el("a", { href: `/source/${p.record_index}?start=${p.at[0]}&end=${p.at[1]}`,
          title: `${p.tier} · ${p.work}` }, p.label);
        const li = el("li", {}, src);
        if (p.url) li.append(" ", el("a", { href: p.url, class: "muted", title: "the edition's page" }, "↗"));
        li.append(": ", el("span", { class: "greek" }, before, el("mark", {}, left),
          el("b", { class: "fill" }, fill), el("mark", {}, right), after));
        list.append(li);
      }
      sec.append(el("p", {}, el("span", { class: "greek fill" }, shown),
        el("span", { class: "muted" }, ` ${f.letters_matched} letters matched (${f.sides[0]} before, ${f.sides[1]} after), ` +
          `${f.sources} source${f.sources === 1 ? "" : "s"}, ${pct(f.prob)} of the parallels`)), list);
    }
    box.append(sec);
  }
}

async function restoreText() {
  // one request at a time: Ctrl-Enter pressed again while the answer is coming (the button is
  // disabled, the keys are not) would send a second one whose answer could arrive first
  if ($("restore").disabled) return;
  clearError();
  const payload = {
    text: $("text").value,
    top_k: parseInt($("top-k").value, 10),
    unknown_width: parseInt($("unknown-width").value, 10),
    respace: $("respace").checked,
    accents: $("accents").checked,
    supplements: $("repredict").checked ? "repredict" : "keep",
    decoder: $("decoder").value,
  };
  if (!payload.text.trim()) { showError("type a Greek text with its lacunae, e.g. καὶ τοῦ δή[5±3] τοῦ ἑαυτοῦ"); return; }
  const bad = optionError();
  if (bad) { showError(...bad); return; }
  $("restore").disabled = true;
  $("busy").hidden = false;
  $("run-status").textContent = "";
  inflight = new AbortController();
  $("cancel").hidden = false;
  const ticket = progressId();
  const poller = followProgress(ticket);
  try {
    const resp = await fetch("/restore", { method: "POST",
      headers: { "Content-Type": "application/json", "X-Stoicheia-Progress": ticket },
      body: JSON.stringify(payload), signal: inflight.signal });
    if (resp.status === 413) { showError(tooLong(payload)); return; }
    if (!resp.ok) { showError(pageWording(await errorOf(resp))); return; }
    current = await resp.json();
    current.rebuilt = payload.accents ? "accented" : "respaced";
    shown = 0;
    $("result").hidden = false;
    drawRestorations();
    drawRestored();
    drawGaps();
    $("copy-status").textContent = "";
  } catch (err) {
    if (err.name === "AbortError") $("run-status").textContent = "cancelled";
    else showError(`no answer from the server (${err.message}); is stoicheia serve still running?`);
  } finally {
    poller.stop();
    inflight = null;
    $("cancel").hidden = true;
    $("restore").disabled = false;
    $("busy").hidden = true;
  }
}

// a random token naming this request's progress on the server (GET /progress/ID); crypto's
// randomUUID exists only on a secure page (localhost, https), so a page opened over the network
// makes its token from getRandomValues
function progressId() {
  if (crypto.randomUUID) return crypto.randomUUID();
  return Array.from(crypto.getRandomValues(new Uint8Array(16)), (b) => b.toString(16).padStart(2, "0")).join("");
}

// while a restoration runs: ask the server how far it is every 400 ms and show it on the bar
// `barId` and in `textId` beside the Cancel button (progressWords); a missed or failed answer
// leaves the last one shown
function followProgress(ticket, barId = "busy-bar", textId = "busy-text") {
  const bar = $(barId);
  const text = $(textId);
  bar.removeAttribute("value");   // an indeterminate bar until the server has counted
  text.textContent = "restoring…";
  let stopped = false;
  let timer = null;
  const ask = async () => {
    try {
      const resp = await fetch(`/progress/${ticket}`);
      if (stopped || !resp.ok) return;
      const said = progressWords(await resp.json());
      if (said) {
        text.textContent = said.text;
        if (said.max) { bar.max = said.max; bar.value = said.value; }
      }
    } catch (_) { /* the answer to the restoration itself says what went wrong */ }
    finally { if (!stopped) timer = setTimeout(ask, 400); }
  };
  timer = setTimeout(ask, 200);
  return { stop() { stopped = true; clearTimeout(timer); } };
}

// what GET /progress/ID says, in words and on a bar ({text, value, max}; max 0: the bar stays
// as it is), or null when there is nothing new to say. A text: "pass 3 of 9". An EpiDoc file
// (gaps_total given once it is read): its gaps decided of those to fill, the piece being decoded
// when there are several, and that piece's passes; the bar moves by pieces and passes
function progressWords(p) {
  if (p.state === "waiting") return { text: "waiting for another restoration to finish…", max: 0 };
  const pct = (f) => `${Math.round(100 * f)} %`;
  if (!("gaps_total" in p)) {   // a text
    if (!(p.total > 0)) return null;
    return { text: `restoring… pass ${p.done} of ${p.total} (${pct(p.done / p.total)})`, value: p.done, max: p.total };
  }
  if (p.gaps_total == null) return { text: "reading the file…", max: 0 };
  if (p.gaps_done >= p.gaps_total) return { text: `writing the restored file… ${p.gaps_total} of ${p.gaps_total} gaps done`, value: 1, max: 1 };
  const pieces = p.pieces || 1;
  const within = p.total > 0 ? p.done / p.total : 0;
  const share = p.piece ? (p.piece - 1 + within) / pieces : p.gaps_done / p.gaps_total;
  let text = `restoring… ${p.gaps_done} of ${p.gaps_total} gaps done`;
  if (pieces > 1 && p.piece) text += ` · piece ${p.piece} of ${pieces}`;
  if (p.total > 0) text += `${pieces > 1 && p.piece ? "," : " ·"} pass ${p.done} of ${p.total}`;
  return { text: `${text} (${pct(share)})`, value: share, max: 1 };
}

async function copyText(text, what) {
  const box = $("copied");
  box.value = text;   // what was copied, also readable by a test or a screen reader
  let ok = false;
  try {
    await navigator.clipboard.writeText(text);
    ok = true;
  } catch (_) {
    box.select();   // a page not served from localhost or https has no navigator.clipboard
    try { ok = document.execCommand("copy"); } catch (_) { ok = false; }
  }
  $("copy-status").textContent = ok ? `copied ${what}` : `select and copy by hand: ${what} below`;
  if (!ok) { box.style.cssText = "position:static;width:100%;height:4rem"; }
}

// the file's gaps by outcome (X-Stoicheia-Gaps), and why those left or refused were so, counted
// (X-Stoicheia-Gaps-Left/-Refused: [[reason, count], ...]), as restore --epidoc's summary says
function gapsSaid(headers) {
  const counts = headers.get("X-Stoicheia-Gaps");
  if (!counts) return "";
  const why = (name) => {
    try {
      const pairs = JSON.parse(headers.get(name) || "[]");
      // the page has no --min-probability: the floor's value is what it says; the plan's short
      // reasons for a gap not filled ("lines": <gap unit="line"/>) said in the field's words
      const said = (r) => r.replace("--min-probability ", "")
        .replace(/^lines$/, "lost lines, not letters")
        .replace(/^unit (.+)$/, "measured in $1, not letters")
        .replace(/^too wide$/, "wider than the model's window");
      return pairs.length ? ` (${pairs.map(([r, n]) => `${said(r)}: ${n}`).join("; ")})` : "";
    } catch { return ""; }
  };
  const parts = counts.split(" ").map((kv) => {
    const [k, n] = kv.split("=");
    const reasons = k === "left" ? why("X-Stoicheia-Gaps-Left") : k === "refused" ? why("X-Stoicheia-Gaps-Refused") : "";
    return `${k} ${n}${reasons}`;
  });
  return ` (gaps: ${parts.join(", ")})`;
}

async function restoreFile() {
  const status = $("epidoc-status");
  const err = $("epidoc-error");
  err.hidden = true;
  const file = $("epidoc-file").files[0];
  if (!file) { err.textContent = "choose an EpiDoc .xml file first"; err.hidden = false; return; }
  const bad = optionError();
  for (const id of ["top-k", "unknown-width"]) $(id).classList.remove("bad");
  if (bad) { err.textContent = bad[0]; err.hidden = false; status.textContent = ""; bad[1].classList.add("bad"); return; }
  const form = new FormData();
  form.append("file", file);
  form.append("top_k", $("top-k").value);
  form.append("unknown_width", $("unknown-width").value);
  // the confidence floor (restore --epidoc --min-probability): empty, the model's own floors
  const floor = $("epidoc-floor").value.trim();
  $("epidoc-floor").classList.remove("bad");
  const unread = $("epidoc-floor").validity.badInput;   // typed, but not a number: value ""
  if (unread || (floor && !(Number(floor) >= 0 && Number(floor) <= 1))) {
    err.textContent = "confidence floor: give a probability from 0 to 1 (such as 0.1), or leave " +
      `the box empty for the model's own floors${floor ? `; not ${floor}` : ""}`;
    err.hidden = false;
    $("epidoc-floor").classList.add("bad");
    return;
  }
  if (floor) form.append("min_probability", floor);
  status.textContent = "";
  fileInflight = new AbortController();
  $("epidoc-cancel").hidden = false;
  $("epidoc-restore").disabled = true;
  $("epidoc-busy").hidden = false;
  const ticket = progressId();
  const poller = followProgress(ticket, "epidoc-bar", "epidoc-busy-text");
  try {
    const resp = await fetch("/restore-epidoc", { method: "POST", body: form,
      headers: { "X-Stoicheia-Progress": ticket }, signal: fileInflight.signal });
    const said = resp.status === 413
      ? `${file.name} is ${(file.size / 2 ** 20).toFixed(1)} MB: the page restores EpiDoc files of at most 8 MB (8,388,608 bytes)`
      : resp.ok ? "" : await errorOf(resp);
    if (said) { err.textContent = said; err.hidden = false; status.textContent = ""; return; }
    const blob = await resp.blob();
    const a = el("a", { href: URL.createObjectURL(blob), download: file.name.replace(/\.xml$/i, "") + ".restored.xml" });
    document.body.append(a);
    a.click();
    a.remove();
    status.textContent = `downloaded${gapsSaid(resp.headers)}`;
  } catch (e) {
    if (e.name === "AbortError") { status.textContent = "cancelled"; return; }
    err.textContent = `no answer from the server (${e.message}); is stoicheia serve still running?`;
    err.hidden = false;
    status.textContent = "";
  } finally {
    poller.stop();
    $("epidoc-busy").hidden = true;
    fileInflight = null;
    $("epidoc-cancel").hidden = true;
    $("epidoc-restore").disabled = false;
  }
}

async function loadExamples() {
  try {
    const resp = await fetch("/static/examples.json");
    const data = await resp.json();
    for (const ex of data.examples) {
      const b = el("button", { type: "button", class: "example", title: `${ex.title} (${ex.id}, ${data.licence})` }, ex.id);
      b.addEventListener("click", () => {
        $("text").value = ex.text;
        clearError();
        const src = $("example-source");
        src.replaceChildren(el("a", { href: ex.url }, ex.id), ` · ${ex.title} · ${ex.date} · edition text of ${data.source}, ${data.licence}`);
        src.hidden = false;
      });
      $("examples").append(b);
    }
  } catch (_) { /* the page works without them */ }
}

// what GET /model says of the letter n-gram and the parallels fused with the model
// (what is loaded is said even where a part could not be: the shipped model without its
// parallels index still has its n-gram)
function experts(m) {
  const ngram = m.ngram ? `letter n-gram: weight ${m.ngram_weight}` : "letter n-gram: none";
  const parallels = m.parallels ? (m.decoder === "parallels" ? "parallels: their fills first (the default decoder, the best on the report half of the dev set)"
      : m.readings ? "parallels: their fills weighed as whole readings"
      : m.parallels_weight > 0 ? `parallels: weight ${m.parallels_weight}`
      : "parallels: listed, not fused") : "parallels: no index";
  const line = `${ngram}; ${parallels}`;
  return m.experts_error ? `${line} (${m.experts_error})` : line;
}

// the decoders whose parts are loaded (GET /model's decoders), the server's default chosen;
// "parallels" without an index is offered (the server answers with the n-gram's readings and
// a note), and its option says so before it is chosen
function offerDecoders(m) {
  const offered = m.decoders || [];
  for (const opt of [...$("decoder").options]) {
    opt.disabled = offered.length > 0 && !offered.includes(opt.value);
    if (opt.value === "parallels") {
      opt.textContent = m.parallels ? "parallels" : "parallels (no index here: n-gram alone)";
    }
  }
  if (m.decoder) $("decoder").value = m.decoder;
}

async function loadModel() {
  try {
    const m = await (await fetch("/model")).json();
    // the shipped model by what it is (its card says the rest), a user's own by run and file
    const which = m.shipped
      ? `the base model shipped with Stoicheia (run ${m.run_name || "unnamed"}, ${(m.step ?? 0).toLocaleString("en")} training steps; docs/model-card.md)`
      : `${m.run_name || "unnamed run"} after ${(m.step ?? "?").toLocaleString("en")} steps (${m.kind}: ${m.source})`;
    $("model-line").textContent = `model: ${which}; reads up to ${m.seq_len} letters around each gap; ${experts(m)}`;
    offerDecoders(m);
    if (!m.epidoc_upload) {
      $("epidoc-restore").disabled = true;
      $("epidoc-file").disabled = true;
      $("epidoc-status").textContent = "not available in this installation (stoicheia.restore_epidoc is missing)";
    }
  } catch (_) {
    $("model-line").textContent = "";
  }
}

document.addEventListener("DOMContentLoaded", () => {
  $("restore").addEventListener("click", restoreText);
  // respace predicts the word division that accents keeps: one of them at a time
  $("respace").addEventListener("change", () => { if ($("respace").checked) $("accents").checked = false; });
  $("accents").addEventListener("change", () => { if ($("accents").checked) $("respace").checked = false; });
  $("text").addEventListener("keydown", (e) => { if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) restoreText(); });
  $("text").addEventListener("input", () => { $("example-source").hidden = true; });
  $("copy-leiden").addEventListener("click", () => copyText(
    current.respaced ? current.respaced[shown] : current.restorations[shown].text, "Leiden"));
  $("copy-epidoc").addEventListener("click", () => copyText(current.epidoc[shown], "EpiDoc"));
  $("epidoc-restore").addEventListener("click", restoreFile);
  $("cancel").addEventListener("click", () => { if (inflight) inflight.abort(); });
  $("epidoc-cancel").addEventListener("click", () => { if (fileInflight) fileInflight.abort(); });
  window.addEventListener("resize", thinLabels);
  loadExamples();
  loadModel();
});
