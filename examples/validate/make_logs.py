"""Write sample engine event logs for ``kvproof validate`` (the incident's workload).

``python examples/validate/make_logs.py [FOLDER]``: runs the reference engine of
``sglang-0.5.19-pd`` and ``sglang-0.5.22-pd`` on four prompts, the last one over prefill's
limit, and writes ``<variant>.log.jsonl`` for each. Then:

    kvproof validate examples/validate/sglang-0.5.22-pd.log.jsonl   # exit 0
    kvproof validate examples/validate/sglang-0.5.19-pd.log.jsonl   # exit 1: isolation
    kvproof validate examples/validate/sglang-0.5.19-pd.log.jsonl --variant sglang-0.5.22-pd
"""

from __future__ import annotations

import sys
from pathlib import Path

from kvproof.checker.conformance.validate import write_event_log
from kvproof.refimpl.cluster import Cluster
from kvproof.spec.variant import Sizes, load_variant

SIZES = Sizes(context_len=128, prefill_pool_tokens=64, decode_pool_tokens=128, page_size=8)


def main(folder: Path) -> None:
    for name in ("sglang-0.5.19-pd", "sglang-0.5.22-pd"):
        cluster = Cluster(load_variant(name), sizes=SIZES, seed=1)
        for i in range(4):
            cluster.submit("t", "x" * (10 + 20 * i), 4)  # the last is over prefill's limit
        cluster.run()
        path = folder / f"{name}.log.jsonl"
        write_event_log(cluster, path)
        print(path)


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).parent)
