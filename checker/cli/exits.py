"""The exit-code contract, written once: ``--help``, the README and every command follow it.

A command's ``run`` returns one of these; ``checker.cli.main`` maps bad input
(``KvproofInputError``, argparse usage errors) to ``BAD_INPUT`` and one line on stderr.
"""

from __future__ import annotations

OK = 0  # holds / proved / clean / every verdict matches its expectation (--all)
FOUND = 1  # a violation, a leak, a finding, not proved, a mismatch (--all), inconclusive probe
BAD_INPUT = 2  # bad input or usage: one line naming the file, line, key or flag
INTERNAL = 3  # a bug in kvproof itself: one line; KVPROOF_DEBUG=1 shows the traceback
INTERRUPTED = 130  # Ctrl-C

CONTRACT = """\
exit codes (every command):
  0  holds / proved / clean (check --all, prove --all: every verdict matches its expectation)
  1  a violation, leak or finding; not proved; a mismatch with expectations (--all);
     probe: a finding, or an inconclusive probe (budget spent before a verdict)
  2  bad input or usage: one line on stderr naming the file, line, key or flag
  3  a bug in kvproof (one line; set KVPROOF_DEBUG=1 for the traceback)
  130 interrupted"""
