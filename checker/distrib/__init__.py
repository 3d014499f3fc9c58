"""Where work units run (``executor.py``): this process, local forks or a pool, or Ray."""
