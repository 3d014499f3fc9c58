from kvproof.checker.cli import entry

entry()
