"""The one self-contained HTML page of `aligners show --html`: inline CSS and script, the view
(`view.corpus_view`) embedded as JSON with `<`, `>`, `&`, U+2028, U+2029 escaped (no word can
end the script or inject markup); a Content-Security-Policy forbids every fetch.
"""

from __future__ import annotations

import html
import json

from aligners.show.assets import CSS, SCRIPT

__all__ = ["embed_json", "render_page"]

_ESCAPES = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028",
            "\u2029": "\\u2029"}
_CSP = ("default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; "
        "img-src data:")


def embed_json(data) -> str:
    """`data` as JSON text safe inside an HTML `<script>` element (see the module docstring).
    Cost: O(size)."""
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return "".join(_ESCAPES.get(ch, ch) for ch in text)


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

