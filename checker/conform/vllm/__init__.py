"""Conformance against vLLM's release code (``kvproof conform VARIANT --vllm VERSION|PATH``).

The release's scheduler (``Scheduler``, ``KVCacheManager``/``BlockPool``), the NIXL
connector's scheduler side (pull and push) and the worker's transfer decisions run real;
the NIXL agent, the clock, the model runner and third-party packages the decision path
never calls stand in (docs/conform-vllm.md lists each, with the function it stands in for).
"""
