"""What an evaluation becomes: report.json, Markdown and JUnit (:mod:`.reports`), HTML
(:mod:`.report_html`, evidence cards in :mod:`.evidence_report`), the wording of every verdict
(:mod:`.verdict_text`), fairtrace-shaped details (:mod:`.details`), the counterfactual pairs
behind a gap (:mod:`.evidence`), redaction (:mod:`.redaction`), two reports compared
(:mod:`.compare`) and the run history (:mod:`.history`)."""
