# The two set-up commands of the README, and a few conveniences.
VENV ?= .venv
PY := $(VENV)/bin/python
OUT ?= out
export HIP_PLATFORM := amd

.PHONY: emit test bench check fuzz screenshot docs clean

# Main job: install what emitting needs, then transpile every example to all four targets
# (out/<example>/<target>/, one process).
emit:
	scripts/setup.sh base
	$(PY) cli.py emit examples/*.py --target all -o $(OUT)

# Install every toolchain the tests drive (apt packages and pip wheels), then run the suite on
# every core (pytest-xdist; worksteal hands each worker a contiguous share, so a module's fixtures
# are set up about once per worker, and moves tests to whoever finishes first). JOBS=0: one process.
JOBS ?= auto
test:
	scripts/setup.sh toolchains
	$(PY) -m pytest -q -n $(JOBS) --dist worksteal

# Compile every example with the real toolchains.
check:
	scripts/setup.sh toolchains
	$(PY) cli.py check examples/*.py --target all -j 2

# The toolchain set-up, done once per version of scripts/setup.sh for the targets that name this
# stamp as a prerequisite: its name holds the script's hash, so a changed script (or a new venv)
# runs it again, and a failed set-up writes none. `rm $(VENV)/.setup-toolchains-*` forces a new one.
SETUP_STAMP := $(VENV)/.setup-toolchains-$(shell sha256sum scripts/setup.sh | cut -c1-16)
$(SETUP_STAMP):
	scripts/setup.sh toolchains
	rm -f $(VENV)/.setup-toolchains-*
	touch $@

# Benchmark tables and bench/report.json; BENCH_ARGS=--with-competitors adds cupyx.jit and Warp.
# Quadrants 1.3.3 goes into bench/.venv-quadrants, for bench/vs_quadrants.py and bench/algorithms.py.
bench: $(SETUP_STAMP)
	$(PY) bench/quadrants_venv.py
	$(PY) bench/run.py $(BENCH_ARGS)

# The differential fuzzer (tests/fuzz): N random kernels on every target and executor against
# its reference interpreter; failing kernels land in fuzz-failures/<class>/<seed>/, each one named
# with its reproduction command as it fails, under a progress line.
N ?= 200
fuzz: $(SETUP_STAMP)
	PYTHONPATH=tests:. $(PY) -m fuzz.drive -n $(N) $(FUZZ_ARGS)

# docs/inspect.png, the README's picture of `inspect --html`: the browser test's page for
# examples/lookback_scan.py with a Python line clicked (headless Chromium, from the toolchains).
screenshot:
	scripts/setup.sh toolchains
	INSPECT_SCREENSHOT=docs/inspect.png $(PY) -m pytest -q tests/test_inspect_html.py -k browser

# The documentation site (MkDocs Material, API pages by mkdocstrings) into site/; strict: a broken
# link, a page missing from the nav or an unresolved reference fails the build.
docs:
	scripts/setup.sh docs
	NO_MKDOCS_2_WARNING=1 $(PY) -m mkdocs build --strict --site-dir site

clean:
	rm -rf $(OUT) build .pytest_cache fuzz-failures site
