"""`aligners show`: look at alignments. `view` decides the class of every grid cell and the
scores (through `aligners.metrics`); `grid` draws a pair as terminal text; `page` writes
the one self-contained HTML page (with its inline CSS and script). No torch import."""

__all__ = ["grid", "page", "view"]
