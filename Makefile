# Two commands do all the set-up on a fresh machine:
#   make serve   create .venv, install, build the index if missing, serve the UI on 127.0.0.1:7860
#   make test    create .venv, install with test extras (and Debian's chromium for browser tests), run the suite
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: install serve index test bench browser

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[ui,test]'
	touch $(STAMP)

install: $(STAMP)

index: $(STAMP)
	$(BIN)/assistant index

serve: $(STAMP)
	$(BIN)/assistant serve

browser:
	@command -v chromium >/dev/null 2>&1 || { \
	  echo "installing Debian's chromium for the browser tests"; \
	  SUDO=$$(test "$$(id -u)" = 0 || echo sudo); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq chromium >/dev/null; }

test: $(STAMP) browser
	$(BIN)/python -m pytest

bench: $(STAMP)
	$(BIN)/python -m benchmarks.run_all
