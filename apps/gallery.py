"""The gallery of built-in demo models, as a standalone Dash app.

    python apps/gallery.py                          # http://127.0.0.1:8050
    gunicorn --chdir apps gallery:server -w 1 --threads 8 -b 127.0.0.1:8050

(``python -m torchvista_dash serve`` runs the same app.) Traces live in the process's registry, so use
one worker process with threads, or one registry per worker (each worker traces the demos itself).
"""

from __future__ import annotations

import os

from torchvista_dash.app.server.server import make_app

app = make_app(gallery=True, title="torchvista_dash gallery")
server = app.server  # the Flask app, for gunicorn / any WSGI server

if __name__ == "__main__":
    app.run(host=os.environ.get("HOST", "127.0.0.1"), port=int(os.environ.get("PORT", "8050")), debug=False)
