"""The operator commands' CLI modules (``kvproof advise|audit|probe|serve``), one per command.

They follow ``checker/cli/``'s convention (``configure(parser)``, ``run(args) -> int``: parse,
one library call, one render) and are registered by its parser. They sit here, not in their
products' packages, because the parser imports every command module on each run: importing
``ops/serve/`` loads torch, and ``ops/audit/`` and ``ops/probe/`` their parsers and HTTP
client, which ``kvproof check`` and ``kvproof --help`` must not pay for.
"""
