"""``kvproof.model.dsl``: the documented import path of the DSL, kept for user protocols.

The DSL lives in ``model/lang/dsl.py``; this name is the same module object (not a copy), so
``isinstance`` checks and identity agree whichever path a user imports.
"""

import sys

from kvproof.model.lang import dsl as _dsl

sys.modules[__name__] = _dsl
