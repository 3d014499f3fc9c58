"""Traces, conformance replay, fuzzing, deployment audit and the CLI."""
