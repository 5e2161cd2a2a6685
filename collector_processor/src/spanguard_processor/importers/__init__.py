"""Importers: other tools' test files → a spanguard suite of explicit variants.

=======================  =========================================================
source                   reads
=======================  =========================================================
``promptfoo``            promptfoo test files (YAML/JSON/CSV) and configs, ``vars``
``deepeval``             DeepEval goldens as ``EvaluationDataset.save_as`` writes them
``fairtrace-promptfoo``  fairtrace 0.1.0's promptfoo import shape (migration)
``fairtrace-deepeval``   fairtrace 0.1.0's deepeval import shape (migration)
=======================  =========================================================

Every importer keeps the source's ids and counterfactual groups (``seed_id``) and returns
:class:`ImportedVariant` objects; :func:`import_suite` builds the suite
``{"dataset": {"variants": [...]}, "metrics": [{"type": T}, ...]}`` and validates it with the
same loader ``spanguard run`` uses, so an imported suite always loads.
"""

from __future__ import annotations

from ._common import ImportedVariant, write_records, write_suite
from .deepeval import load_deepeval
from .fairtrace import load_fairtrace_deepeval, load_fairtrace_promptfoo
from .promptfoo import load_promptfoo
from .sources import SOURCES, import_suite, import_variants, suite_of

__all__ = [
    "SOURCES",
    "ImportedVariant",
    "import_suite",
    "import_variants",
    "load_deepeval",
    "load_fairtrace_deepeval",
    "load_fairtrace_promptfoo",
    "load_promptfoo",
    "suite_of",
    "write_records",
    "write_suite",
]
