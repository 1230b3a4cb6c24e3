"""The gallery of built-in demo models, as a standalone Dash app.

    python apps/gallery.py                          # http://127.0.0.1:8050
    TVD_STORE=redis://127.0.0.1:6379/0 gunicorn --chdir apps gallery:server -w 4 --threads 8 -b 127.0.0.1:8050

(``python -m torchvista_dash serve --workers 4`` runs the same app.) Workers share no memory: with
``TVD_STORE`` (a Redis URL, or ``file:///path`` for one host) a trace, layout or picture one worker makes is
read by the others, and a link opens on any of them. Without it each worker keeps its own.
"""

from __future__ import annotations

import os

from torchvista_dash.app.server.server import make_app

app = make_app(gallery=True, title="torchvista_dash gallery")
server = app.server  # the Flask app, for gunicorn / any WSGI server

if __name__ == "__main__":
    app.run(host=os.environ.get("HOST", "127.0.0.1"), port=int(os.environ.get("PORT", "8050")), debug=False)
