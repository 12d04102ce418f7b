# The two commands: `make demo` and `make test`. Both install what they need on a fresh
# machine (Debian, Python >= 3.10, Node >= 18): a venv in .venv, the frontend bundle, and
# Debian's chromium for the browser tests.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
PORT   ?= 6006
TORCH  ?= torch==2.13.0
BUNDLE := src/canning_tb/plugin/static/index.js
FRONTEND := src/canning_tb/frontend

.PHONY: setup venv frontend typecheck chromium test test-fast demo bench bench-timeline screenshots proto clean mutants

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
# The slow ones (real multi-process jobs whose timings decide what they check) run after, alone.
test: setup typecheck chromium peers
	$(BIN)/python -m pytest -q -ra -n auto --maxprocesses=4 --dist loadfile -m "not slow"
	$(BIN)/python -m pytest -q -ra -m slow

test-fast: setup
	$(BIN)/python -m pytest -q -m "not browser and not slow"

demo: setup
	rm -rf log/demo
	$(BIN)/python -m torch.distributed.run --standalone --nproc_per_node=2 examples/train_ddp.py log/demo
	@echo
	@echo "TensorBoard with the canning profiler tab: http://127.0.0.1:$(PORT)/#canning"
	@echo "(report in the terminal: $(BIN)/canning-prof --mode=view --input=log/demo)"
	$(BIN)/tensorboard --logdir log --host 127.0.0.1 --port $(PORT)

# refresh the README's screenshots from the browser tests
screenshots: setup chromium
	CANNING_SCREENSHOTS=docs/screenshots $(BIN)/python -m pytest -q -m browser -n auto --maxprocesses=4 --dist loadfile

bench: setup
	bash benchmarks/run.sh

# the timeline's tiles, bytes per view, first paint and heap (medium trace; SIZE=long for ~1 GB)
bench-timeline: setup chromium
	$(BIN)/python benchmarks/bench_timeline.py --size $(or $(SIZE),medium) --browser --tbprof \
	  $(if $(RANKS),--ranks-dir $(RANKS),--ranks 16)

# mutation testing of analysis/, ingest/, timeline/, store/ and plugin/ (slow; not part of `make test`): docs/mutants.md.
# MUTANTS narrows the run to mutant names, e.g. MUTANTS='canning_tb.analysis.ops*'. The tests run inside mutants/:
# the peer oracles find the peers' interpreter by CANNING_PEERS_PYTHON (else they would skip there).
MUTMUT   := mutmut==3.8.1
MUTANTS  ?=
mutants: venv peers
	$(BIN)/python -m pip install -q "$(MUTMUT)"
	CANNING_FIXTURES=$${CANNING_FIXTURES:-$(CURDIR)/../shared/fixtures} \
	  CANNING_PEERS_PYTHON=$${CANNING_PEERS_PYTHON:-$(CURDIR)/.venv-peers/bin/python} $(BIN)/mutmut run $(MUTANTS)
	$(BIN)/mutmut results

# regenerate the digest schema's Python module after editing digest.proto
proto:
	cd src/canning_tb/analysis && ../../../$(BIN)/python -m grpc_tools.protoc -I. --python_out=. digest.proto

clean: clean-peers
	rm -rf $(VENV) $(FRONTEND)/node_modules $(BUNDLE) build dist log
