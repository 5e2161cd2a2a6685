"""Stage 4, reporting: a run or a gate verdict rendered (console, Markdown, JUnit, HTML).

:mod:`.render` (console, Markdown, JUnit), :mod:`.report_html` (the HTML check report) and
:mod:`.diff_report` (the per-case diffs) for trace2eval's rules; :mod:`.verdict_report` for the
four-outcome verdict from repeats. Nothing here decides; everything here renders.
"""
