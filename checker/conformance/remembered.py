"""The single node's answers, remembered per prompt for the walks of one fuzz batch.

The oracle (``refimpl/oracle.py``) asks the single-node engine what a correct engine says
for each prompt that got a 200. In a batch the same prompts come back walk after walk (a
request's prompt depends only on its reservation and its canary), and generating them
again was about a twelfth of a walk's time (issue 30, cProfile of a batch). The single
node writes every position before it reads it, so its answer depends only on the prompt
and the length asked: a remembered answer is the answer it would give again.
"""

from __future__ import annotations

from kvproof.refimpl.single_node import SingleNode


class RememberedAnswers:
    """A ``SingleNode`` that generates each (prompt, length) once."""

    def __init__(self, node: SingleNode) -> None:
        self.node = node
        self._answers: dict[tuple[tuple[int, ...], int], list[int]] = {}

    def generate(self, prompt: list[int] | tuple[int, ...], max_new_tokens: int) -> list[int]:
        key = (tuple(prompt), max_new_tokens)
        hit = self._answers.get(key)
        if hit is None:
            hit = self._answers[key] = self.node.generate(prompt, max_new_tokens)
        return list(hit)
