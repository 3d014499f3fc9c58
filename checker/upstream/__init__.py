"""Conformance against the real SGLang release code (``kvproof conform``).

The release's own decision modules (decode queues, receivers, abort) run real; every other
``sglang.*`` module is a stand-in; the model's walks drive them, and after each step the
pages the code freed or held are compared with the model's state.
"""
