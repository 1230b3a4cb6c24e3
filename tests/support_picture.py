"""Reading what the picture draws, in the browser: its labels' on-screen boxes at the current zoom.

The figure's text lives in an SVG drawn as a plotly layout image, where the DOM cannot reach it.
``drawn_labels`` loads that same SVG document into a same-origin frame exactly the size the image is drawn at
(so its level-of-detail media queries see the same viewport) and reads every drawn text element's box, in
page coordinates. Same browser, same document, same size: the geometry is what the image shows.
"""

from __future__ import annotations

from typing import Any

from support_app import _GD

# the labels a set of images (plotly's <image> tiles, or the first picture's <img>s) draws, in page pixels,
# and the
# plot area
_IMAGES_LABELS = """async (imgs, plotArea) => {
  let f = document.getElementById('tvd-test-replica');
  if (!f) {
    f = document.createElement('iframe'); f.id = 'tvd-test-replica';
    f.style.cssText = 'position:absolute;left:0;top:0;border:0;visibility:hidden;pointer-events:none';
    document.body.appendChild(f);
  }
  const out = [], seen = new Map(); let scale = null;
  for (const img of imgs) {
    const r = img.getBoundingClientRect();
    // a data URI (a standalone figure) or the URL of the app's picture route (app/pictures.py)
    const href = img.getAttribute('src') || img.getAttribute('href') || img.getAttribute('xlink:href');
    const svg = await (await fetch(href)).text();
    f.style.width = r.width + 'px'; f.style.height = r.height + 'px';
    const loaded = new Promise(ok => { f.onload = ok; });
    f.srcdoc = '<html><body style="margin:0;overflow:hidden">'
      + svg.replace('<svg ', '<svg style="display:block;width:100%;height:100%" ') + '</body></html>';
    await loaded;
    const doc = f.contentDocument;
    const vb = doc.querySelector('svg').viewBox.baseVal;
    scale = r.width / vb.width;
    for (const t of doc.querySelectorAll('text')) {
      if (doc.defaultView.getComputedStyle(t).display === 'none') continue;
      const b = t.getBoundingClientRect();
      if (b.width === 0 && b.height === 0) continue;
      const l = {text: t.textContent, cls: t.getAttribute('class') || '',
                 x0: b.left + r.left, x1: b.right + r.left, y0: b.top + r.top, y1: b.bottom + r.top,
                 size: parseFloat(doc.defaultView.getComputedStyle(t).fontSize) * scale};
      // a label near a tile's border is drawn by both tiles, in the same place (to a pixel's rounding of
      // each replica's size): one label
      const key = l.text + '|' + l.cls, same = seen.get(key) || [];
      if (same.some(o => Math.abs(o.x0 - l.x0) < 2 && Math.abs(o.y0 - l.y0) < 2)) continue;
      same.push(l); seen.set(key, same); out.push(l);
    }
  }
  const pr = plotArea.getBoundingClientRect();
  return {labels: out, scale, images: imgs.length,
          plot: {x0: pr.left, x1: pr.right, y0: pr.top, y1: pr.bottom}};
}"""

_LABELS = f"""async (domId) => {{
  const gd = ({_GD})(domId);
  return await ({_IMAGES_LABELS})(Array.from(gd.querySelectorAll('.imagelayer image')),
                                  gd.querySelector('.nsewdrag'));
}}"""

# the first picture's images: those the browser has loaded (a lazy one far off screen is not drawn yet)
_FIRST_LABELS = f"""async (sel) => {{
  const imgs = Array.from(document.querySelectorAll(sel + ' img'));
  const deadline = Date.now() + 20000;
  while (imgs.some(i => i.loading !== 'lazy' && !i.complete) && Date.now() < deadline)
    await new Promise(ok => setTimeout(ok, 50));
  return await ({_IMAGES_LABELS})(imgs.filter(i => i.complete && i.naturalWidth > 0),
                                  document.querySelector(sel + ' .tvd-plot'));
}}"""

_BOXES = f"""(a) => {{
  const gd = ({_GD})(a[0]); const fl = gd._fullLayout, r = gd.getBoundingClientRect();
  const t = gd.data.find(t => t.name === a[1]); if (!t) return [];
  const X = v => r.left + fl._size.l + fl.xaxis.l2p(v), Y = v => r.top + fl._size.t + fl.yaxis.l2p(v);
  return Array.from(t.customdata).map((id, i) => ({{id,
    x0: X(t.x[i] - t.width[i] / 2), x1: X(t.x[i] + t.width[i] / 2),
    y0: Y(t.base[i] + t.y[i]), y1: Y(t.base[i])}}));
}}"""


def drawn_labels(page: Any, dom_id: str) -> dict[str, Any]:
    """``{"labels": [{text, cls, x0, x1, y0, y1, size}], "scale": px per point, "images": how many, "plot":
    the plot area}``: every label the picture of the graph in element ``dom_id`` draws at the current zoom
    (all its tiles: on screen or not), boxes in page pixels, ``size`` the drawn font size in px."""
    return page.evaluate(_LABELS, dom_id)


def first_picture_labels(page: Any, picture_selector: str) -> dict[str, Any]:
    """``drawn_labels`` of the page's first picture (firstpaint.py: ``<img>``s in its plot area), as painted
    before Dash has drawn (the page's scripts must run for the reading, so a test keeps Dash's from
    loading)."""
    return page.evaluate(_FIRST_LABELS, picture_selector)


def target_boxes(page: Any, dom_id: str, trace_name: str = "nodes:labels") -> list[dict[str, Any]]:
    """The click targets (box or header row) of one trace, in page pixels: ``[{id, x0, x1, y0, y1}]``."""
    return page.evaluate(_BOXES, [dom_id, trace_name])


def in_plot(item: dict[str, Any], plot: dict[str, Any]) -> bool:
    return (
        item["x0"] >= plot["x0"]
        and item["x1"] <= plot["x1"]
        and item["y0"] >= plot["y0"]
        and item["y1"] <= plot["y1"]
    )


def overlaps(a: dict[str, Any], b: dict[str, Any], tol: float = 0.5) -> bool:
    return (
        a["x0"] < b["x1"] - tol
        and b["x0"] < a["x1"] - tol
        and a["y0"] < b["y1"] - tol
        and b["y0"] < a["y1"] - tol
    )


def overlapping_pairs(items: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """Pairs of boxes that overlap (sweep over x, so thousands of labels stay cheap)."""
    items = sorted(items, key=lambda i: i["x0"])
    out: list[tuple[str, str]] = []
    active: list[dict[str, Any]] = []
    for it in items:
        active = [a for a in active if a["x1"] > it["x0"]]
        out.extend((a["text"], it["text"]) for a in active if overlaps(a, it))
        active.append(it)
    return out


# Rows of a screenshot (PNG, base64) that hold dark pixels (text: every other line or fill is lighter),
# decoded in the page itself (no image library needed).
_DARK_ROWS = """async (b64) => {
  const img = new Image(); img.src = 'data:image/png;base64,' + b64; await img.decode();
  const c = document.createElement('canvas'); c.width = img.width; c.height = img.height;
  const ctx = c.getContext('2d'); ctx.drawImage(img, 0, 0);
  const d = ctx.getImageData(0, 0, c.width, c.height).data; const rows = [];
  for (let y = 0; y < c.height; y++) {
    for (let x = 0; x < c.width; x++) {
      const i = 4 * (y * c.width + x);
      if (Math.max(d[i], d[i + 1], d[i + 2]) < 90) { rows.push(y); break; }
    }
  }
  return rows;
}"""


def dark_rows(page: Any, clip: dict[str, float]) -> list[int]:
    """Rows (pixels from the clip's top) of a screenshot of ``clip`` in which something dark (text) is
    drawn."""
    import base64

    shot = page.screenshot(clip=clip)
    return page.evaluate(_DARK_ROWS, base64.b64encode(shot).decode())


def _inside(a: dict[str, Any], b: dict[str, Any], tol: float = 1.0) -> bool:
    return (
        b["x0"] - tol <= a["x0"]
        and a["x1"] <= b["x1"] + tol
        and b["y0"] - tol <= a["y0"]
        and a["y1"] <= b["y1"] + tol
    )


def label_faults(page: Any, dom_id: str) -> list[Any]:
    """What breaks the picture's label rules at the current zoom, among the labels in the plot (empty: none):
    two labels that overlap; an overview label that covers a box without lying inside it (a closed module's
    name lies inside its own box, or centred on it and spilling over it onto no other); a box's own text that
    leaves its box."""
    drawn = drawn_labels(page, dom_id)
    labels = [lab for lab in drawn["labels"] if in_plot(lab, drawn["plot"])]
    boxes = target_boxes(page, dom_id, "nodes:labels")
    faults: list[Any] = [("overlap", a, b) for a, b in overlapping_pairs(labels)]
    for lab in labels:
        if lab["cls"].startswith("ov"):
            if not any(_inside(lab, b) for b in boxes):
                # a closed box too small for its name: the name spills over it, onto no other box
                on = [b for b in boxes if overlaps(lab, b)]
                cx, cy = (lab["x0"] + lab["x1"]) / 2, (lab["y0"] + lab["y1"]) / 2
                spill = len(on) == 1 and on[0]["x0"] <= cx <= on[0]["x1"] and on[0]["y0"] <= cy <= on[0]["y1"]
                if not spill:
                    faults += [("overview over a box", lab["text"], b["id"]) for b in on]
        elif lab["cls"].startswith(("t ", "s ")):
            cx, cy = (lab["x0"] + lab["x1"]) / 2, (lab["y0"] + lab["y1"]) / 2
            own = next((b for b in boxes if b["x0"] <= cx <= b["x1"] and b["y0"] <= cy <= b["y1"]), None)
            if own is None or not _inside(lab, own, 0.5):
                faults.append(("out of its box", lab["text"], own and own["id"]))
    return faults
