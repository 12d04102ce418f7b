# Peer tools used as test oracles (tests/oracles/test_peer_oracles.py): Holistic Trace Analysis and
# msprof-analyze, in their own venv so that their pins never touch .venv. The lead includes this
# file from the Makefile and makes `test` depend on `peers`. Idempotent: pip runs only when this
# file changed since the last install (stamp .venv-peers/.installed).
# Versions: the ones the oracle tests were verified with (HTA 0.5.0 is the last release under
# this name; msprof-analyze 26.2.0 as in reference/ascend-format.md §4.4). pandas/numpy are
# pinned too because HTA 0.5.0 only says pandas>=1.5.2 and its numbers were checked on these; pandas stays
# below 3 because HTA 0.5.0's critical-path analysis fails on pandas 3 ("Cannot specify both 'axis' and
# 'columns'"), and tests/oracles/test_critical_path_peer.py needs it (every oracle passed on both).
PEERS_PYTHON ?= python3
PEERS_VENV   := .venv-peers
PEERS_PINS   := holistictraceanalysis==0.5.0 msprof-analyze==26.2.0 pandas==2.2.3 numpy==2.1.3

.PHONY: peers clean-peers

peers: $(PEERS_VENV)/.installed
$(PEERS_VENV)/.installed: peers.mk
	test -x $(PEERS_VENV)/bin/python || $(PEERS_PYTHON) -m venv $(PEERS_VENV)
	$(PEERS_VENV)/bin/python -m pip install -q --upgrade pip
	$(PEERS_VENV)/bin/python -m pip install -q $(PEERS_PINS)
	$(PEERS_VENV)/bin/python -c "import hta.trace_analysis, msprof_analyze"
	touch $@

clean-peers:
	rm -rf $(PEERS_VENV)
