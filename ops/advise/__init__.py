"""``kvproof advise ENGINE==VERSION``: a release and its settings, answered for an operator."""
