# One command each, from a fresh machine: `make serve` (the gallery), `make test` (the suite).
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
# Where pip finds torch: empty for pip's default index, or the URL of another wheel index (e.g. a CPU-only one,
# since on a plain machine torch==X resolves to a multi-GB CUDA build): `make test TORCH_INDEX=<url>`.
TORCH_INDEX ?=
TORCH_PIN = $(shell grep -E '^torch==' requirements-dev.txt)

.PHONY: serve test bench lint images system plotly-basic clean

# plotly's own scatter-only bundle, at the plotly.js version the installed plotly ships (render/plotlyjs.py says why).
PLOTLY_BASIC := torchvista_dash/render/assets/plotly-basic.min.js

serve: $(STAMP) system $(PLOTLY_BASIC)
	$(BIN)/python -m torchvista_dash serve --port 8050

test: $(STAMP) system $(PLOTLY_BASIC)
	$(BIN)/python -m ruff check .
	$(BIN)/python -m ruff format --check .
	$(BIN)/python -m mypy
	$(BIN)/python -m pytest -q

bench: $(STAMP) system $(PLOTLY_BASIC)
	$(BIN)/python -m bench.run_all

images: $(STAMP) system $(PLOTLY_BASIC)
	$(BIN)/python docs/make_images.py

lint: $(STAMP)
	$(BIN)/python -m ruff check .
	$(BIN)/python -m ruff format --check .
	$(BIN)/python -m mypy

# Graphviz (dot), Chromium (browser tests, screenshots) and redis-server (the shared trace store's tests) from
# the system's packages, when missing.
system:
	@if ! command -v dot >/dev/null 2>&1 || ! command -v chromium >/dev/null 2>&1 || ! command -v redis-server >/dev/null 2>&1; then \
		echo "Installing Graphviz, Chromium and redis-server with apt-get"; \
		$(SUDO) apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq graphviz chromium chromium-driver fonts-dejavu-core redis-server >/dev/null; \
	fi
	@command -v dot >/dev/null && command -v chromium >/dev/null && command -v redis-server >/dev/null

$(STAMP): requirements-dev.txt pyproject.toml
	$(PY) -m venv $(VENV)
	$(if $(TORCH_INDEX),$(BIN)/pip install -q --index-url "$(TORCH_INDEX)" "$(TORCH_PIN)")
	$(BIN)/pip install -q -r requirements-dev.txt
	$(BIN)/pip install -q --no-deps -e .
	touch $(STAMP)

plotly-basic: $(PLOTLY_BASIC)

$(PLOTLY_BASIC): $(STAMP)
	@v=$$($(BIN)/python -c "import plotly.offline as o; print(o.get_plotlyjs_version())"); d=$$(mktemp -d); \
	if command -v npm >/dev/null && (cd $$d && npm pack --silent plotly.js-basic-dist-min@$$v >/dev/null && \
	    tar xzf plotly.js-basic-dist-min-$$v.tgz); then \
		mkdir -p $(dir $@) && cp $$d/package/plotly-basic.min.js $@ && echo "plotly.js-basic $$v installed"; \
	else \
		echo "warning: could not fetch plotly.js-basic-dist-min@$$v with npm; pages use the full plotly.js (slower first draw)"; \
	fi; rm -rf $$d

clean:
	rm -rf $(VENV) .pytest_cache build *.egg-info
