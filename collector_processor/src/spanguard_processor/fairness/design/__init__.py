"""Before any app call: the suite (:mod:`.suite`: syntax, validation, variants), the starter
suite ``spanguard init`` writes (:mod:`.starter`), the suite's expected variants for coverage
(:mod:`.coverage`) and its power (:mod:`.power`: design MDE, seeds needed; :mod:`.plan`: the
table ``spanguard suite plan`` prints)."""
