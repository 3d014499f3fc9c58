"""The model: the DSL (``lang/``), the handoff in it (``handoff/``), its engines (``search/``)."""
