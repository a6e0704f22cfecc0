"""The one self-contained HTML page of `aligners show --html`: inline CSS and script, the view
(`view.corpus_view`) embedded as JSON with `<`, `>`, `&`, U+2028, U+2029 escaped (no word can
end the script or inject markup); a Content-Security-Policy forbids every fetch. The script
reads the embedded view, builds the score table, legend and searchable list of pairs, and
draws a pair's grids on selection; every word goes in with `textContent`, never as HTML.
"""

from __future__ import annotations

import html
import json

__all__ = ["embed_json", "render_page"]

_ESCAPES = str.maketrans({"<": "\\u003c", ">": "\\u003e", "&": "\\u0026",
                          "\u2028": "\\u2028", "\u2029": "\\u2029"})
_CSP = ("default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; "
        "img-src data:")


def embed_json(data) -> str:
    """`data` as JSON text safe inside an HTML `<script>` element (see the module docstring).
    Cost: O(size)."""
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"),
                      allow_nan=False).translate(_ESCAPES)


def render_page(view: dict, *, title: str) -> str:
    """The page's HTML text for a `view.corpus_view` dict; `title` is escaped."""
    safe = html.escape(title)
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="{_CSP}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<link rel="icon" href="data:,">
<title>{safe}</title>
<style>{CSS}</style>
</head>
<body>
<header>
<h1>{safe}</h1>
<div id="corpus"></div>
<div id="legend"></div>
</header>
<main>
<section id="list-pane">
<div class="controls">
<input id="search" type="search" placeholder="search words" aria-label="search words">
<label>AER &ge; <input id="min-aer" type="number" min="0" max="100" step="1">%</label>
<span id="shown" class="muted"></span>
</div>
<div id="list-wrap"><table class="pairs" id="pairs"><thead></thead><tbody></tbody></table></div>
</section>
<section id="detail-pane"><div id="detail"></div></section>
</main>
<script type="application/json" id="aligners-data">{embed_json(view)}</script>
<script>{SCRIPT}</script>
</body>
</html>
"""


CSS = r"""
:root { --hit:#1f9d55; --hitp:#7fd1a4; --false:#e3342f; --miss:#f6993f; --poss:#dcdcdc;
  --link:#3b6fd1; --sure:#444; --line:#e6e6e6; font-family: system-ui, sans-serif; }
body { margin:0; color:#222; }
header { padding:8px 14px; border-bottom:1px solid #ccc; background:#fafafa; }
h1 { font-size:1.15em; margin:0 0 6px 0; }
table.corpus { border-collapse:collapse; font-size:0.85em; }
table.corpus th, table.corpus td { padding:2px 7px; border-bottom:1px solid #ddd;
  text-align:right; }
table.corpus th:first-child, table.corpus td:first-child { text-align:left; }
details pre { font-size:0.8em; background:#fff; border:1px solid #ddd; padding:6px; }
#legend { margin-top:6px; font-size:0.85em; }
#legend span.sw { display:inline-block; width:12px; height:12px; vertical-align:middle;
  margin:0 4px 0 12px; border:1px solid #999; text-align:center; font-size:10px; line-height:12px; }
main { display:flex; height:calc(100vh - var(--head, 170px)); min-height:300px; }
#list-pane { width:38%; min-width:280px; display:flex; flex-direction:column;
  border-right:1px solid #ccc; }
.controls { padding:6px; border-bottom:1px solid #ddd; font-size:0.85em; }
.controls input[type=search] { width:55%; }
.controls input[type=number] { width:4.5em; }
#list-wrap { overflow:auto; flex:1; }
table.pairs { border-collapse:collapse; width:100%; font-size:0.8em; }
table.pairs th { position:sticky; top:0; background:#eee; cursor:pointer; user-select:none;
  padding:3px 5px; text-align:right; white-space:nowrap; }
table.pairs th.sorted-asc::after { content:" \25B2"; }
table.pairs th.sorted-desc::after { content:" \25BC"; }
table.pairs td { padding:2px 5px; border-bottom:1px solid #f0f0f0; text-align:right;
  white-space:nowrap; }
table.pairs th[data-key=words] { text-align:left; }
table.pairs td.words { text-align:left; max-width:0; width:60%; overflow:hidden;
  text-overflow:ellipsis; }
table.pairs tr { cursor:pointer; } table.pairs tbody tr:hover { background:#f3f7ff; }
table.pairs tr.selected { background:#dce8ff; }
#detail-pane { flex:1; overflow:auto; padding:8px 14px; }
#detail h2 { font-size:1em; margin:4px 0; }
#detail p.sent { margin:2px 0; font-size:0.85em; color:#444; }
.grids { display:flex; flex-wrap:wrap; gap:24px; align-items:flex-start; }
figure.grid { margin:8px 0; }
figure.grid figcaption { font-weight:600; font-size:0.85em; margin-bottom:4px; }
table.al { border-collapse:collapse; font-size:12px; }
table.al th { font-weight:normal; padding:0 4px; white-space:nowrap; }
table.al th.col { vertical-align:bottom; padding:4px 0; }
table.al th.col span { writing-mode:vertical-rl; transform:rotate(180deg); display:inline-block;
  max-height:12em; overflow:hidden; text-overflow:ellipsis; }
table.al th.row { text-align:right; max-width:14em; overflow:hidden; text-overflow:ellipsis; }
table.al th.hl { background:#fff3b0; } table.al th.match { color:#b00; font-weight:700; }
td.c { width:16px; height:16px; min-width:16px; padding:0; border:1px solid var(--line);
  text-align:center; font-size:10px; line-height:16px; color:#fff; }
.c.hit { background:var(--hit); border-color:var(--hit); }
.c.hit_possible { background:var(--hitp); border-color:var(--hitp); color:#124; }
.c.false { background:var(--false); border-color:var(--false); }
.c.miss { background:#fff; box-shadow:inset 0 0 0 3px var(--miss); color:#a55; }
.c.possible { background:var(--poss); border-color:var(--poss); color:#777; }
.c.link { background:var(--link); border-color:var(--link); }
.c.sure { background:var(--sure); border-color:var(--sure); }
.c.gold_possible { background:var(--poss); border-color:var(--poss); color:#777; }
td.c.gt { border-top:2px dashed #555; } td.c.gb { border-bottom:2px dashed #555; }
td.c.gl { border-left:2px dashed #555; } td.c.gr { border-right:2px dashed #555; }
td.c.bt { border-top:2px solid #111; } td.c.bb { border-bottom:2px solid #111; }
td.c.bl { border-left:2px solid #111; } td.c.br { border-right:2px solid #111; }
.scores { font-size:0.85em; margin-top:4px; }
.scores b { font-weight:600; }
.muted { color:#777; }
"""

SCRIPT = r"""
"use strict";
(function () {
const DATA = JSON.parse(document.getElementById("aligners-data").textContent);
const PAIRS = DATA.pairs, SYSTEMS = DATA.systems, GOLD = DATA.has_gold;
const TEXT = {}, SYMBOL = {};  // class -> legend text / cell symbol (view.CLASSES)
DATA.legend.forEach(([c, symbol, text]) => { TEXT[c] = text; SYMBOL[c] = symbol; });
const $ = (id) => document.getElementById(id);
function el(tag, attrs, text) {
  const e = document.createElement(tag);
  for (const k in attrs || {}) e.setAttribute(k, attrs[k]);
  if (text !== undefined && text !== null) e.textContent = String(text);
  return e;
}
const pct = (x) => (100 * x).toFixed(1);
const names = SYSTEMS.length ? SYSTEMS.map((s) => s.name) : ["gold"];

function corpusTable() {
  const box = $("corpus");
  if (!GOLD || !SYSTEMS.length) {
    box.appendChild(el("p", {class: "muted"}, PAIRS.length + " pairs" +
      (GOLD ? " (gold only)" : " (no gold: no scores)")));
    return;
  }
  const t = el("table", {class: "corpus", id: "corpus-scores"});
  const head = ["system", "pairs", "P%", "R%", "F1%", "AER%", "AER", "macro P%", "macro R%",
    "macro F1%", "macro AER%", "exact match", "predicted", "sure", "hit sure", "hit possible"];
  const hr = el("tr"); head.forEach((h) => hr.appendChild(el("th", {}, h))); t.appendChild(hr);
  SYSTEMS.forEach((s, k) => {
    const r = s.report, tr = el("tr", {"data-system": k});
    [s.name, r.pairs, pct(r.micro.precision), pct(r.micro.recall), pct(r.micro.f1),
      pct(r.micro.aer), r.micro.aer.toFixed(4), pct(r.macro.precision), pct(r.macro.recall),
      pct(r.macro.f1), pct(r.macro.aer), r.exact_matches + "/" + r.pairs, r.counts.predicted,
      r.counts.sure, r.counts.hit_sure, r.counts.hit_possible
    ].forEach((v) => tr.appendChild(el("td", {}, v)));
    t.appendChild(tr);
  });
  box.appendChild(t);
  SYSTEMS.forEach((s) => {
    const d = el("details"); d.appendChild(el("summary", {}, "aligners evaluate: " + s.name));
    d.appendChild(el("pre", {}, s.report.text)); box.appendChild(d);
  });
}

function legend() {
  const box = $("legend");
  DATA.legend.forEach(([c, symbol, text]) => {
    box.appendChild(el("span", {class: "sw c " + c}, symbol));
    box.appendChild(document.createTextNode(text));
  });
  const outlines = (SYSTEMS.length ? ["solid outline: predicted phrase block"] : [])
    .concat(GOLD ? ["dashed outline: gold phrase block"] : []);
  box.appendChild(el("span", {class: "muted"}, "   " + outlines.join("; ")));
}

// ---- the list of pairs
const columns = [{key: "n", label: "#", get: (p) => p.n}];
const hasIds = PAIRS.some((p) => p.id !== null && p.id !== String(p.n));
if (hasIds) columns.push({key: "id", label: "id", get: (p) => p.id || ""});
columns.push({key: "len", label: "I\u00d7J", get: (p) => p.src.length * p.tgt.length,
  show: (p) => p.src.length + "\u00d7" + p.tgt.length});
columns.push({key: "words", label: "source", get: (p) => p.src.join(" "), cls: "words"});
if (GOLD && SYSTEMS.length) {
  SYSTEMS.forEach((s, k) => {
    const tag = SYSTEMS.length > 1 ? " " + s.name : "";
    ["precision", "recall", "aer"].forEach((m) => columns.push({
      key: m + k, label: {precision: "P", recall: "R", aer: "AER"}[m] + tag,
      title: s.name, get: (p) => p.grids[k].scores[m], show: (p) => pct(p.grids[k].scores[m])}));
  });
  if (SYSTEMS.length === 2) columns.push({key: "daer", label: "\u0394AER",
    title: "AER of system 2 minus AER of system 1",
    get: (p) => p.grids[1].scores.aer - p.grids[0].scores.aer,
    show: (p) => pct(p.grids[1].scores.aer - p.grids[0].scores.aer)});
} else {
  names.forEach((nm, k) => columns.push({key: "links" + k, label: "links" +
    (names.length > 1 ? " " + nm : ""), title: nm,
    get: (p) => Object.values(p.grids[k].cells).reduce((a, c) => a + c.length, 0)}));
}
let sortKey = "n", sortDir = 1, selected = null, visible = [];
const lower = PAIRS.map((p) => (p.src.join(" ") + " \u0001 " + p.tgt.join(" ")).toLowerCase());

function buildHead() {
  const tr = el("tr");
  columns.forEach((c) => {
    const th = el("th", {"data-key": c.key, title: c.title || "sort by " + c.label}, c.label);
    th.addEventListener("click", () => {
      sortDir = sortKey === c.key ? -sortDir : (c.key === "n" || c.key === "words" ? 1 : -1);
      sortKey = c.key; renderList();
    });
    tr.appendChild(th);
  });
  $("pairs").querySelector("thead").appendChild(tr);
}

function renderList() {
  const q = $("search").value.trim().toLowerCase();
  const minAer = parseFloat($("min-aer") ? $("min-aer").value : "");
  const col = columns.find((c) => c.key === sortKey);
  visible = PAIRS.filter((p, n) => (!q || lower[n].includes(q)) && (isNaN(minAer) ||
    !GOLD || !SYSTEMS.length || p.grids.some((g) => 100 * g.scores.aer >= minAer)));
  visible.sort((a, b) => {
    const x = col.get(a), y = col.get(b);
    return (x < y ? -1 : x > y ? 1 : 0) * sortDir || a.n - b.n;
  });
  const body = $("pairs").querySelector("tbody"), frag = document.createDocumentFragment();
  visible.forEach((p) => {
    const tr = el("tr", {"data-n": p.n});
    if (selected === p.n) tr.className = "selected";
    columns.forEach((c) => tr.appendChild(el("td", c.cls ? {class: c.cls} : {},
      c.show ? c.show(p) : c.get(p))));
    tr.addEventListener("click", () => select(p.n));
    frag.appendChild(tr);
  });
  body.replaceChildren(frag);
  $("pairs").querySelectorAll("th").forEach((th) => th.className =
    th.dataset.key === sortKey ? (sortDir > 0 ? "sorted-asc" : "sorted-desc") : "");
  $("shown").textContent = visible.length + " of " + PAIRS.length + " pairs";
  if (!visible.length) {  // nothing matches: no old pair left on show
    selected = null;
    $("detail").replaceChildren(el("p", {class: "muted"}, "no pair matches the filter"));
  } else if (!visible.some((p) => p.n === selected)) select(visible[0].n);
}

// ---- one pair's grids, drawn on demand
function matches(word, query) {  // one searched word: a part of it; a phrase: its words
  const w = word.toLowerCase(), parts = query.split(/\s+/).filter((x) => x);
  return parts.length === 1 ? w.includes(parts[0]) : parts.includes(w);
}

function gridTable(p, grid, query) {
  const I = p.src.length, J = p.tgt.length, cls = new Map(), post = new Map();
  for (const c in grid.cells) grid.cells[c].forEach(([i, j]) => cls.set(i * J + j, c));
  (grid.posteriors || []).forEach(([i, j, v]) => post.set(i * J + j, v));
  const edges = new Map();
  const mark = (blocks, e) => blocks.forEach(([i0, i1, j0, j1]) => {
    for (let i = i0; i <= i1; i++) for (let j = j0; j <= j1; j++) {
      const s = edges.get(i * J + j) || [];
      if (i === i0) s.push(e[0]); if (i === i1) s.push(e[1]);
      if (j === j0) s.push(e[2]); if (j === j1) s.push(e[3]);
      edges.set(i * J + j, s);
    }
  });
  mark(p.gold_blocks, ["gt", "gb", "gl", "gr"]);
  mark(grid.blocks, ["bt", "bb", "bl", "br"]);
  const t = el("table", {class: "al"}), head = el("tr");
  head.appendChild(el("th", {class: "corner"}));
  p.tgt.forEach((w, j) => {
    const th = el("th", {class: "col", title: j + ": " + w});
    th.appendChild(el("span", {}, w));
    if (matches(w, query)) th.classList.add("match");
    head.appendChild(th);
  });
  t.appendChild(el("thead")).appendChild(head);
  const body = el("tbody");
  p.src.forEach((w, i) => {
    const tr = el("tr"), th = el("th", {class: "row", title: i + ": " + w}, w);
    if (matches(w, query)) th.classList.add("match");
    tr.appendChild(th);
    for (let j = 0; j < J; j++) {
      const c = cls.get(i * J + j), td = el("td");
      if (c) td.textContent = SYMBOL[c];
      td.className = "c" + (c ? " " + c : "") +
        (edges.has(i * J + j) ? " " + edges.get(i * J + j).join(" ") : "");
      td.dataset.i = i; td.dataset.j = j;
      let tip = i + "-" + j + "  " + w + " \u2194 " + p.tgt[j] + (c ? ": " + TEXT[c] : "");
      if (post.has(i * J + j)) tip += " (p=" + post.get(i * J + j).toFixed(3) + ")";
      td.title = tip;
      tr.appendChild(td);
    }
    body.appendChild(tr);
  });
  t.appendChild(body);
  t.addEventListener("mouseover", (ev) => {
    const td = ev.target.closest("td.c");
    t.querySelectorAll("th.hl").forEach((h) => h.classList.remove("hl"));
    if (!td) return;
    t.tBodies[0].rows[td.dataset.i].cells[0].classList.add("hl");
    t.tHead.rows[0].cells[1 + Number(td.dataset.j)].classList.add("hl");
  });
  return t;
}

function scoreLine(s) {
  const c = s.counts, d = el("div", {class: "scores"});
  d.appendChild(el("b", {}, "P " + pct(s.precision) + "%  R " + pct(s.recall) + "%  F1 " +
    pct(s.f1) + "%  AER " + pct(s.aer) + "%"));
  d.appendChild(el("br"));
  const part = (cls, label, v) => { d.appendChild(document.createTextNode(label));
    d.appendChild(el("span", {class: "count-" + cls}, v)); };
  part("hit", "hits ", c.hit_sure);
  part("hit_possible", " (+ possible ", c.hit_possible - c.hit_sure);
  part("miss", "), misses ", c.sure - c.hit_sure);
  part("false", ", false links ", c.predicted - c.hit_possible);
  return d;
}

function select(n) {
  const p = PAIRS[n - 1];
  if (!p) return;
  selected = n;
  document.querySelectorAll("table.pairs tr.selected")
    .forEach((r) => r.classList.remove("selected"));
  const row = document.querySelector('table.pairs tr[data-n="' + n + '"]');
  if (row) { row.classList.add("selected"); row.scrollIntoView({block: "nearest"}); }
  const box = $("detail"), q = $("search").value.trim().toLowerCase();
  box.replaceChildren();
  box.appendChild(el("h2", {}, "pair " + p.n + "/" + PAIRS.length +
    (p.id !== null && p.id !== String(p.n) ? " (id " + p.id + ")" : "") + ": " +
    p.src.length + " source \u00d7 " + p.tgt.length + " target words"));
  box.appendChild(el("p", {class: "sent"}, p.src.join(" ")));
  box.appendChild(el("p", {class: "sent"}, p.tgt.join(" ")));
  const grids = el("div", {class: "grids"});
  p.grids.forEach((g, k) => {
    const fig = el("figure", {class: "grid", "data-system": k});
    fig.appendChild(el("figcaption", {}, names[k]));
    fig.appendChild(gridTable(p, g, q));
    if (g.scores) fig.appendChild(scoreLine(g.scores));
    grids.appendChild(fig);
  });
  box.appendChild(grids);
  if (location.hash !== "#" + n) history.replaceState(null, "", "#" + n);
}

function step(delta) {
  if (!visible.length) return;
  const k = visible.findIndex((p) => p.n === selected);
  const next = visible[Math.min(visible.length - 1, Math.max(0, (k < 0 ? 0 : k + delta)))];
  select(next.n);
}

function init() {
  corpusTable(); legend(); buildHead();
  document.documentElement.style.setProperty("--head",
    document.querySelector("header").offsetHeight + "px");
  $("search").addEventListener("input", () => {
    const before = selected;
    renderList();
    if (selected && selected === before) select(selected);  // the matches highlighted anew
  });
  $("min-aer").addEventListener("input", renderList);
  if (!GOLD || !SYSTEMS.length) $("min-aer").parentNode.style.display = "none";
  document.addEventListener("keydown", (ev) => {
    if (ev.target.tagName === "INPUT") return;
    if (ev.key === "ArrowDown" || ev.key === "j") { step(1); ev.preventDefault(); }
    if (ev.key === "ArrowUp" || ev.key === "k") { step(-1); ev.preventDefault(); }
  });
  renderList();
  const start = parseInt(location.hash.slice(1), 10);
  if (PAIRS.length) select(start >= 1 && start <= PAIRS.length ? start : 1);
}
init();
})();
"""
