"""The DSL and its interpreters: concrete (Python values), symbolic (Z3 terms), unrolling."""
