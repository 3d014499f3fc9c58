"""Admission limits of one node, derived from its own pool as SGLang derives them."""

from __future__ import annotations

from dataclasses import dataclass

from kvproof.spec.errors import KvproofInputError

# SGLang keeps a few tokens of headroom below max_req_len for the reply's first tokens.
INPUT_HEADROOM = 5


@dataclass(frozen=True)
class Limits:
    max_req_len: int
    max_req_input_len: int

    @staticmethod
    def derive(context_len: int, pool_tokens: int, where: str = "sizes") -> Limits:
        """``max_req_len = min(context_len - 1, pool_tokens - 1)``; input = that - 5.

        The silent cap at the pool size is the incident's misconfiguration: a node whose
        pool is smaller than the advertised context accepts less than the API promises.
        """
        max_req_len = min(context_len - 1, pool_tokens - 1)
        max_input = max_req_len - INPUT_HEADROOM
        if max_input < 1:
            raise KvproofInputError(
                f"pool of {pool_tokens} tokens admits no prompt (max_req_input_len {max_input})",
                where,
            )
        return Limits(max_req_len, max_input)

    def admits(self, prompt_len: int) -> bool:
        return prompt_len <= self.max_req_input_len
