"""Renderers, one module (or a few) per command: text, JSON, JUnit, SARIF, HTML files."""
