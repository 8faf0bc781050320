"""Inline SVG figures, drawn in Python so the site needs no script library and works offline.

Every label goes through `escape`: a model named `<script>` is drawn as text. Values are numbers
(formatted here), never strings taken from a results file.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from markupsafe import Markup, escape

PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf")
GREY = "#888"


@dataclass(frozen=True)
class Series:
    """One model's values: label, whether it quotes the paper, and per x a (value, low, high)."""

    label: str
    points: dict[str, tuple[float, float | None, float | None]]
    reported: bool = False


def _svg(width: int, height: int, body: list[str], title: str) -> Markup:
    return Markup(
        f'<svg class="plot" role="img" viewBox="0 0 {width} {height}" width="{width}" height="{height}" '
        f'xmlns="http://www.w3.org/2000/svg"><title>{escape(title)}</title>{"".join(body)}</svg>'
    )


def _text(x: float, y: float, text: str, anchor: str = "middle", size: int = 11, extra: str = "") -> str:
    return f'<text x="{x:.1f}" y="{y:.1f}" text-anchor="{anchor}" font-size="{size}" {extra}>{escape(text)}</text>'


def _legend(series: Sequence[Series], x: float, y: float) -> list[str]:
    out = []
    for i, s in enumerate(series):
        colour = PALETTE[i % len(PALETTE)]
        dash = ' stroke-dasharray="4 3"' if s.reported else ""
        out.append(
            f'<line x1="{x}" y1="{y + 14 * i}" x2="{x + 18}" y2="{y + 14 * i}" stroke="{colour}" stroke-width="2"{dash}/>'
        )
        out.append(_text(x + 24, y + 14 * i + 4, s.label + (" (reported)" if s.reported else ""), "start", 10))
    return out


def line_chart(
    xs: Sequence[str],
    series: Sequence[Series],
    title: str,
    reference: dict[str, float] | None = None,
    ylim: tuple[float, float] = (0.0, 1.0),
    ylabel: str = "accuracy",
    reference_label: str = "chance",
) -> Markup:
    """Values per x category within `ylim`, with CI whiskers; `reference` drawn dashed grey
    (chance, or the oracle's value), labelled `reference_label`."""
    w, h, left, top, plot_w, plot_h = 640, 260 + 14 * len(series), 50, 20, 300, 200
    step = plot_w / max(len(xs) - 1, 1)
    xpos = {x: left + i * step for i, x in enumerate(xs)}
    low, high = ylim
    span = (high - low) or 1.0

    def ypos(v: float) -> float:
        return top + plot_h * (1 - (min(max(v, low), high) - low) / span)

    body = [
        f'<line x1="{left}" y1="{top + plot_h}" x2="{left + plot_w}" y2="{top + plot_h}" stroke="#333"/>',
        f'<line x1="{left}" y1="{top}" x2="{left}" y2="{top + plot_h}" stroke="#333"/>',
        _text(14, top + plot_h / 2, ylabel, extra=f'transform="rotate(-90 14 {top + plot_h / 2})"'),
    ]
    for k in range(5):
        tick = low + span * k / 4
        body.append(_text(left - 6, ypos(tick) + 4, f"{tick:.2f}", "end", 9))
    if low < 0 < high:  # a diverging axis: zero drawn across
        body.append(f'<line x1="{left}" y1="{ypos(0):.1f}" x2="{left + plot_w}" y2="{ypos(0):.1f}" stroke="#ccc"/>')
    for x in xs:
        body.append(_text(xpos[x], top + plot_h + 16, x))
    if reference:
        pts = " ".join(f"{xpos[x]:.1f},{ypos(v):.1f}" for x, v in reference.items() if x in xpos)
        body.append(f'<polyline points="{pts}" fill="none" stroke="{GREY}" stroke-dasharray="2 3"/>')
        last = list(reference)[-1]
        body.append(_text(xpos[last] + 6, ypos(reference[last]) + 4, reference_label, "start", 9, f'fill="{GREY}"'))
    for i, s in enumerate(series):
        colour = PALETTE[i % len(PALETTE)]
        dash = ' stroke-dasharray="4 3"' if s.reported else ""
        known = [(x, s.points[x]) for x in xs if x in s.points]
        pts = " ".join(f"{xpos[x] + 3 * i:.1f},{ypos(v):.1f}" for x, (v, _, _) in known)
        body.append(f'<polyline points="{pts}" fill="none" stroke="{colour}" stroke-width="2"{dash}/>')
        for x, (v, lo, hi) in known:
            cx = xpos[x] + 3 * i
            if lo is not None and hi is not None:
                body.append(
                    f'<line x1="{cx:.1f}" y1="{ypos(lo):.1f}" x2="{cx:.1f}" y2="{ypos(hi):.1f}" stroke="{colour}"/>'
                )
            body.append(
                f'<circle cx="{cx:.1f}" cy="{ypos(v):.1f}" r="3" fill="{colour}"><title>{escape(s.label)} {escape(x)}: {v:.3f}</title></circle>'
            )
    body += _legend(series, left + plot_w + 20, top + 10)
    return _svg(w, h, body, title)


def heatmap(
    rows: Sequence[str],
    cols: Sequence[str],
    cells: dict[tuple[str, str], tuple[float, str]],
    title: str,
    vmin: float,
    vmax: float,
    diverging: bool = False,
) -> Markup:
    """`cells[(row, col)] = (value, annotation)`; white at vmin (or 0 when diverging)."""
    cw, ch, left, top = 70, 18, 150, 70
    w, h = left + cw * max(len(cols), 1) + 20, top + ch * len(rows) + 10
    body = []
    for j, col in enumerate(cols):
        x = left + cw * j + cw / 2
        body.append(_text(x, top - 8, col[:14], "start", 10, f'transform="rotate(-30 {x:.1f} {top - 8})"'))
    for i, row in enumerate(rows):
        y = top + ch * i
        body.append(_text(left - 6, y + ch - 5, row, "end", 10))
        for j, col in enumerate(cols):
            x = left + cw * j
            if (row, col) not in cells:
                body.append(f'<rect x="{x}" y="{y}" width="{cw - 2}" height="{ch - 2}" fill="#f4f4f4"/>')
                continue
            value, note = cells[(row, col)]
            body.append(
                f'<rect x="{x}" y="{y}" width="{cw - 2}" height="{ch - 2}" fill="{_colour(value, vmin, vmax, diverging)}">'
                f"<title>{escape(row)} / {escape(col)}: {value:+.3f}</title></rect>"
            )
            body.append(_text(x + cw / 2, y + ch - 5, note, size=10))
    return _svg(w, h, body, title)


def _colour(value: float, vmin: float, vmax: float, diverging: bool) -> str:
    if diverging:
        bound = max(abs(vmin), abs(vmax)) or 1.0
        t = max(-1.0, min(1.0, value / bound))
        r, g, b = (
            (255, int(255 * (1 - t)), int(255 * (1 - t))) if t >= 0 else (int(255 * (1 + t)), int(255 * (1 + t)), 255)
        )
        return f"rgb({r},{g},{b})"
    t = 0.0 if vmax == vmin else max(0.0, min(1.0, (value - vmin) / (vmax - vmin)))
    return f"rgb({int(255 - 225 * t)},{int(255 - 130 * t)},{int(255 - 45 * t)})"


def bar_chart(categories: Sequence[str], series: Sequence[Series], title: str) -> Markup:
    """Grouped bars in [0, 1] with CI whiskers: one group per category, one bar per series."""
    left, top, plot_h = 50, 20, 200
    group_w = max(40, 14 * len(series) + 16)
    plot_w = group_w * len(categories)
    w, h = left + plot_w + 220, top + plot_h + 40 + 14 * max(0, len(series) - 12)
    bar = (group_w - 16) / max(len(series), 1)

    def ypos(v: float) -> float:
        return top + plot_h * (1 - max(0.0, min(1.0, v)))

    body = [
        f'<line x1="{left}" y1="{top + plot_h}" x2="{left + plot_w}" y2="{top + plot_h}" stroke="#333"/>',
        _text(14, top + plot_h / 2, "donor-follow rate", extra=f'transform="rotate(-90 14 {top + plot_h / 2})"'),
    ]
    for tick in (0, 0.5, 1):
        body.append(_text(left - 6, ypos(tick) + 4, f"{tick:.1f}", "end", 9))
    for g, cat in enumerate(categories):
        gx = left + g * group_w + 8
        body.append(_text(gx + (group_w - 16) / 2, top + plot_h + 16, cat))
        for i, s in enumerate(series):
            if cat not in s.points:
                continue
            v, lo, hi = s.points[cat]
            colour = PALETTE[i % len(PALETTE)]
            x = gx + i * bar
            fill = f'fill="white" stroke="{colour}" stroke-dasharray="3 2"' if s.reported else f'fill="{colour}"'
            body.append(
                f'<rect x="{x:.1f}" y="{ypos(v):.1f}" width="{bar - 1:.1f}" height="{top + plot_h - ypos(v):.1f}" {fill}>'
                f"<title>{escape(s.label)} {escape(cat)}: {v:.3f}</title></rect>"
            )
            if lo is not None and hi is not None:
                cx = x + (bar - 1) / 2
                body.append(
                    f'<line x1="{cx:.1f}" y1="{ypos(lo):.1f}" x2="{cx:.1f}" y2="{ypos(hi):.1f}" stroke="#222"/>'
                )
    body += _legend(series, left + plot_w + 20, top + 10)
    return _svg(w, h, body, title)


def forest(rows: Sequence[tuple[str, float, float | None, float | None, bool]], title: str, band: float) -> Markup:
    """One row per (label, estimate, low, high, reported) on a shared axis with the equivalence
    band [-band, +band] shaded and zero marked."""
    left, top, plot_w, rh = 230, 20, 300, 20
    values = [v for _, e, lo, hi, _ in rows for v in (e, lo, hi) if v is not None] + [band, -band]
    span = max(abs(v) for v in values) * 1.15
    w, h = left + plot_w + 30, top + rh * len(rows) + 40

    def xpos(v: float) -> float:
        return left + plot_w * (v + span) / (2 * span)

    body = [
        f'<rect x="{xpos(-band):.1f}" y="{top}" width="{xpos(band) - xpos(-band):.1f}" height="{rh * len(rows)}" fill="#e8f3e8"/>',
        f'<line x1="{xpos(0):.1f}" y1="{top}" x2="{xpos(0):.1f}" y2="{top + rh * len(rows)}" stroke="#333"/>',
        _text(xpos(0), top + rh * len(rows) + 30, f"harv - iso (band ±{band})", size=10),
    ]
    for tick in (-band, band):
        body.append(_text(xpos(tick), top + rh * len(rows) + 14, f"{tick:+.2f}", size=9))
    for i, (label, est, lo, hi, reported) in enumerate(rows):
        y = top + rh * i + rh / 2
        body.append(_text(left - 8, y + 4, label + (" (reported)" if reported else ""), "end", 10))
        if lo is not None and hi is not None:
            body.append(
                f'<line x1="{xpos(lo):.1f}" y1="{y:.1f}" x2="{xpos(hi):.1f}" y2="{y:.1f}" stroke="#222" stroke-width="2"/>'
            )
        mark = 'fill="white" stroke="#222"' if reported else 'fill="#222"'
        body.append(
            f'<circle cx="{xpos(est):.1f}" cy="{y:.1f}" r="4" {mark}><title>{escape(label)}: {est:+.3f}</title></circle>'
        )
    return _svg(w, h, body, title)
