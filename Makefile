# One command each, from a fresh machine: `make serve` (the gallery), `make test` (the suite).
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: serve test bench lint images system clean

serve: $(STAMP) system
	$(BIN)/python -m torchvista_dash serve --port 8050

test: $(STAMP) system
	$(BIN)/python -m ruff check .
	$(BIN)/python -m pytest -q

bench: $(STAMP) system
	$(BIN)/python -m bench.run_all

images: $(STAMP) system
	$(BIN)/python docs/make_images.py

lint: $(STAMP)
	$(BIN)/python -m ruff check .

# Graphviz (dot) and Chromium (browser tests, screenshots) from the system's packages, when missing.
system:
	@if ! command -v dot >/dev/null 2>&1 || ! command -v chromium >/dev/null 2>&1; then \
		echo "Installing Graphviz and Chromium with apt-get"; \
		$(SUDO) apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq graphviz chromium chromium-driver fonts-dejavu-core >/dev/null; \
	fi
	@command -v dot >/dev/null && command -v chromium >/dev/null

$(STAMP): requirements-dev.txt pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q -r requirements-dev.txt
	$(BIN)/pip install -q --no-deps -e .
	touch $(STAMP)

clean:
	rm -rf $(VENV) .pytest_cache build *.egg-info
