"""Operations: what an operator runs against a deployment, not verification.

``audit/`` reads a deployment's logs, ``/server_info`` and ``/metrics``; ``probe/`` probes any
OpenAI-compatible endpoint black-box; ``serve/`` serves the reference engine over HTTP.
Each room is a library call that returns a record, and a renderer that prints it; ``cli/``
holds their commands' thin modules.
"""
