# The two commands: `make demo` and `make test`. Both install what they need on a fresh
# machine (Debian, Python >= 3.10, Node >= 18): a venv in .venv, the frontend bundle, and
# Debian's chromium for the browser tests.
PYTHON ?= python3
# Each module compiled once: Python's bytecode and pytest's rewritten test modules kept in __pycache__ (gitignored).
# An environment that turns that off (PYTHONDONTWRITEBYTECODE, set on this project's machines) made every collection
# of the suite rewrite its 344 test modules again (19 s of 20, each pytest process) and every child process compile
# the package.
unexport PYTHONDONTWRITEBYTECODE
VENV   := .venv
BIN    := $(VENV)/bin
PORT   ?= 6006
TORCH  ?= torch==2.13.0
BUNDLE := src/canning_tb/plugin/static/index.js
FRONTEND := src/canning_tb/frontend

.PHONY: setup venv frontend typecheck chromium test test-nocc test-fast demo bench bench-timeline screenshots proto clean mutants

# .venv-peers: HTA and msprof-analyze, the peer tools our numbers are checked against
include peers.mk

setup: venv frontend

# pip installs only when pyproject.toml, setup.py or a C source changed since the last install (pip compiles
# the two _scan.c, _sweep.c and _tree.c, all optional: trace_scan.py, kineto/scan.py, kineto/stacks.py,
# analysis/common.py)
venv: $(VENV)/.installed
$(VENV)/.installed: pyproject.toml setup.py src/canning_tb/ingest/native/ascend_scan.c \
		src/canning_tb/ingest/native/kineto_sweep.c src/canning_tb/ingest/native/kineto_scan.c src/canning_tb/ingest/native/json_lex.h \
		src/canning_tb/ingest/native/tree.c
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q "$(TORCH)" grpcio-tools
	$(BIN)/python -m pip install -q -e ".[test]"  # setup.py builds the frontend bundle if missing
	touch $@

frontend: $(BUNDLE)
$(BUNDLE): $(wildcard $(FRONTEND)/src/*.ts $(FRONTEND)/src/*.css $(FRONTEND)/src/views/*.ts) \
          $(FRONTEND)/build.mjs $(FRONTEND)/package.json $(FRONTEND)/package-lock.json
	cd $(FRONTEND) && npm ci --no-audit --no-fund && npm run build

# tsc --noEmit over the frontend: the response types in api.ts and every view that uses them
typecheck: $(BUNDLE)
	cd $(FRONTEND) && { test -d node_modules || npm ci --no-audit --no-fund; } && npm run typecheck

chromium:
	@command -v chromium >/dev/null 2>&1 || { \
	  echo "installing Debian's chromium for the browser tests"; \
	  apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium; }

# the suite in as many processes as there are cores (at most 4), each test file in one process
# (its module fixtures, a TensorBoard or a gloo run, are made once): most tests wait on a child
# process, a browser or a server, so two processes on 2 cores take about two thirds of the time.
# The timed ones (real jobs whose step times decide what they check) run after, alone; the other slow ones
# (real training, S3, 64 ranks) with the rest.
test: setup typecheck chromium clang peers test-nocc
	$(BIN)/python -m pytest -q -ra -n auto --maxprocesses=4 --dist loadfile -m "not timed"
	$(BIN)/python -m pytest -q -ra -m timed

# The suite as a machine without a C compiler runs it: the package installed into .venv-nocc with
# CANNING_NO_C=1 (setup.py then builds none of the C parts), not editable: an editable install would import
# the .so files that `make venv` compiled in place under src/. Each run reinstalls the package alone (the
# sources change; the dependencies only with pyproject.toml), checks that no compiled part imports, and runs
# what needs none: the tests marked `compiled` skip, the browser and slow ones run in `make test`. The folders
# where a C part stands in for Python: the readers (ingest/native's scanners: all of tests/ingest) and the events'
# tree (analysis/common: its numpy path against a per-event reference and hand-worked cases, and the real fixtures'
# digests end to end); the rest of the analysis, the store and the timeline take the digests those make (the same
# with C and without, as the tree's tests show), so they run with C alone and `make test` stays within its time
# here. So do the *_mutants.py files (hand-made digests, tables and small files for mutation testing; those of the
# readers read each small file with the scanners on and off, so the Python paths run in `make test` too).
# `NOCC_TESTS=tests` runs the whole suite without C.
NOCC_TESTS ?= tests/ingest tests/analysis/test_common_nest_edges.py tests/analysis/test_tree_sweeps.py \
  tests/analysis/test_digest_fast_paths.py tests/analysis/test_analysis_fixtures.py --ignore-glob='*_mutants.py'
NOCC := .venv-nocc
NATIVE := _ascend_scan _kineto_scan _kineto_sweep _tree
$(NOCC)/.installed: pyproject.toml setup.py
	test -x $(NOCC)/bin/python || $(PYTHON) -m venv $(NOCC)
	$(NOCC)/bin/python -m pip install -q --upgrade pip
	$(NOCC)/bin/python -m pip install -q "$(TORCH)" grpcio-tools
	rm -rf build  # a build/lib of an earlier build with C would carry its .so files into the wheel
	CANNING_NO_C=1 $(NOCC)/bin/python -m pip install -q ".[test]"
	touch $@

test-nocc: $(NOCC)/.installed $(BUNDLE)
	rm -rf build
	CANNING_NO_C=1 $(NOCC)/bin/python -m pip install -q --no-deps --force-reinstall .
	cd /tmp && env -u PYTHONPATH $(CURDIR)/$(NOCC)/bin/python -c 'import importlib.util, canning_tb; \
	  assert canning_tb.__file__.startswith("$(CURDIR)/$(NOCC)/"), canning_tb.__file__; \
	  built = [n for n in "$(NATIVE)".split() if importlib.util.find_spec("canning_tb.ingest.native." + n)]; \
	  assert not built, f"compiled parts in the no-compiler venv: {built}"'
	env -u PYTHONPATH $(NOCC)/bin/python -m pytest -q -ra -n auto --maxprocesses=4 --dist loadfile \
	  -m "not compiled and not browser and not slow" $(NOCC_TESTS)

test-fast: setup
	$(BIN)/python -m pytest -q -m "not browser and not slow"

# The port first, before minutes of setup and training: PORT (6006) when free, else the next free one
# (examples/free_port.py, standard library: no venv yet); chosen again just before TensorBoard starts, in
# case something took it meanwhile, and the address printed is the one served. `setup` is made from the
# recipe, after the check (a line of its own: `make -n demo` then only prints).
demo:
	@port=$$($(PYTHON) examples/free_port.py "$(PORT)") && echo "the demo will serve on http://127.0.0.1:$$port/#canning"
	@$(MAKE) --no-print-directory setup
	rm -rf log/demo
	$(BIN)/python -m torch.distributed.run --standalone --nproc_per_node=2 examples/train_ddp.py log/demo
	@port=$$($(BIN)/python examples/free_port.py "$(PORT)") && echo && \
	  echo "TensorBoard with the canning profiler tab: http://127.0.0.1:$$port/#canning" && \
	  echo "(report in the terminal: $(BIN)/canning-prof --mode=view --input=log/demo)" && \
	  exec $(BIN)/tensorboard --logdir log --host 127.0.0.1 --port $$port

# refresh the README's screenshots from the browser tests
screenshots: setup chromium
	CANNING_SCREENSHOTS=docs/screenshots $(BIN)/python -m pytest -q -m browser -n auto --maxprocesses=4 --dist loadfile

bench: setup
	bash benchmarks/run.sh

# the timeline's tiles, bytes per view, first paint and heap (medium trace; SIZE=long for ~1 GB)
bench-timeline: setup chromium
	$(BIN)/python benchmarks/bench_timeline.py --size $(or $(SIZE),medium) --browser --tbprof \
	  $(if $(RANKS),--ranks-dir $(RANKS),--ranks 16)

# fuzz every compiled entry point (src/canning_tb/ingest/native/fuzz, docs/fuzzing.md) FUZZ_SECONDS each (default
# 60) against the modules built by clang with ASan + UBSan; per target the runs done and any crash, its input
# and log kept under fuzz-out/ (gitignored; the corpus found there is the next run's start). Not part of
# `make test`, which runs the short version (tests/ingest/test_native_fuzz.py). FUZZ_TARGETS narrows it.
.PHONY: fuzz clang
FUZZ_SECONDS ?= 60
FUZZ_TARGETS ?=
fuzz: venv clang
	PYTHONPATH=$(CURDIR)/src CANNING_FIXTURES=$${CANNING_FIXTURES:-$(CURDIR)/tests/fixtures} \
	  $(BIN)/python -m canning_tb.ingest.native.fuzz.run --seconds $(FUZZ_SECONDS) $(FUZZ_TARGETS)

clang:
	@command -v clang >/dev/null 2>&1 || { \
	  echo "installing Debian's clang for the fuzz targets"; \
	  apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q clang; }

# mutation testing of analysis/, ingest/, timeline/, store/ and plugin/ (slow; not part of `make test`): docs/mutants.md.
# MUTANTS narrows the run to mutant names, e.g. MUTANTS='canning_tb.analysis.ops*'. The tests run inside mutants/:
# the peer oracles find the peers' interpreter by CANNING_PEERS_PYTHON (else they would skip there).
MUTMUT   := mutmut==3.8.1
MUTANTS  ?=
mutants: venv peers
	$(BIN)/python -m pip install -q "$(MUTMUT)"
	CANNING_FIXTURES=$${CANNING_FIXTURES:-$(CURDIR)/tests/fixtures} \
	  CANNING_PEERS_PYTHON=$${CANNING_PEERS_PYTHON:-$(CURDIR)/.venv-peers/bin/python} $(BIN)/mutmut run $(MUTANTS)
	$(BIN)/mutmut results

# regenerate the digest schema's Python module after editing digest.proto
proto:
	cd src/canning_tb/analysis && ../../../$(BIN)/python -m grpc_tools.protoc -I. --python_out=. digest.proto

clean: clean-peers
	rm -rf $(VENV) $(NOCC) $(FRONTEND)/node_modules $(BUNDLE) build dist log
