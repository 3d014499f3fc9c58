"""One run object per command: the library call a CLI module makes, and its renderers."""
