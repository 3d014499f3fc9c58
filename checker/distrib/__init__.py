"""Where work units run: in this process, a local process pool, or a Ray cluster.

The callers (``check --all``'s pool, fuzz's batch runner, ``prove --all``) cut their work
into units and merge the results in unit order, so a run's result is the same whichever
executor ran it. Nothing here imports Ray unless a Ray executor is asked for (``--ray``).
"""
