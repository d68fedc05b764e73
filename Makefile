# Two commands do all the set-up on a fresh machine:
#   make serve   create .venv, install, build the index if missing, serve the UI on 127.0.0.1:7860
#   make test    create .venv, install with test extras (and Debian's chromium for browser tests), run the suite
#   make test-fast  the suite without its slow, browser and evaluation tests
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# llama-cpp-python's default build crashes on these CPUs (AMX reported but not allowed):
# build it once without AMX/native tuning, keep the wheel in .wheels/, never take pip's cached build.
LLAMA_VERSION := 0.3.36
WHEELS := .wheels
LLAMA_CMAKE_ARGS := -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_AVX512=OFF \
	-DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF

.PHONY: install serve index test test-fast bench browser llama-wheel

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(MAKE) llama-wheel
	$(BIN)/python -m pip install -q "$$(ls $(WHEELS)/llama_cpp_python-$(LLAMA_VERSION)-*.whl)[server]"
	$(BIN)/python -m pip install -q -e '.[ui,eval,test,local,rerank]'
	touch $(STAMP)

llama-wheel:
	@ls $(WHEELS)/llama_cpp_python-$(LLAMA_VERSION)-*.whl >/dev/null 2>&1 || { \
	  echo "building llama-cpp-python $(LLAMA_VERSION) for this CPU (about 4 minutes, once)"; \
	  CMAKE_BUILD_PARALLEL_LEVEL=2 CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" \
	  $(BIN)/python -m pip wheel -q --no-cache-dir --no-deps -w $(WHEELS) llama-cpp-python==$(LLAMA_VERSION); }

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

# The edit loop: everything but the slow, browser and evaluation tests.
test-fast: $(STAMP)
	$(BIN)/python -m pytest -m "not slow and not browser and not eval"

bench: $(STAMP)
	$(BIN)/python -m benchmarks.run_all
