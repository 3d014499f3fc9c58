"""Paged attention for kvproof: reference, torch (CPU) and Triton (GPU) paths, owner-tag
guarded variants, the KV writer and per-page checksums.

Layout (NHD, as vLLM/SGLang): ``kv_pool[2, num_pages, page_size, num_kv_heads, head_dim]``
(0 = K, 1 = V), ``page_table int32 [num_seqs, max_pages]`` padded with -1. The Triton
modules are imported lazily; set ``TRITON_INTERPRET=1`` before the first Triton call to run
them on CPU tensors.
"""

from kvproof.kernels.api import (
    BACKENDS,
    Backend,
    paged_decode,
    paged_decode_guarded,
    paged_extend,
    paged_extend_guarded,
    resolve_backend,
)
from kvproof.kernels.checksum import page_checksum
from kvproof.kernels.guard import tag_mismatch
from kvproof.kernels.layout import KernelInputError, PoolShape, csr_to_page_table, make_tag
from kvproof.kernels.writer import write_kv

__all__ = [
    "BACKENDS",
    "Backend",
    "KernelInputError",
    "PoolShape",
    "csr_to_page_table",
    "make_tag",
    "page_checksum",
    "paged_decode",
    "paged_decode_guarded",
    "paged_extend",
    "paged_extend_guarded",
    "resolve_backend",
    "tag_mismatch",
    "write_kv",
]
