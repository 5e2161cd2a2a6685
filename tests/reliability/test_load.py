"""Load on loopback for 30 s: 3 agent apps → rotel → one processor. Zero loss, bounded memory,
end-to-end latency percentiles (printed under "reliability figures"). The 60 s figures in
docs/reliability.md are `bench/load_rotel.py`'s."""

from __future__ import annotations

from pathlib import Path

import pytest

from .corpus import FIGURES
from .load import run_load

pytestmark = [pytest.mark.integration, pytest.mark.slow]

SECONDS = 30  # the whole suite keeps within ~10 minutes; bench/load_rotel.py runs longer
APPS = 3
RATE = 80  # requests a second per app, 4 spans each: ≈ 960 spans/s in all


def test_thirty_seconds_of_load_through_rotel_lose_nothing_in_bounded_memory(
    tmp_path: Path,
) -> None:
    report = run_load(tmp_path, seconds=SECONDS, apps=APPS, rate=RATE)
    FIGURES.append("load: " + report.summary())
    for app in report.apps:
        assert app["dropped"] == 0 and app["failed"] == 0, app
        assert app["exported"] == app["ended"] == app["requests"] * 4, app
    assert report.requests >= APPS * RATE * SECONDS * 0.9  # the apps kept their rate
    assert report.probe_lost == 0 and len(report.probes) >= SECONDS * 2
    assert report.stored_spans == report.ended + len(report.probes)  # zero loss, no duplicate
    assert report.pending_traces == 0
    assert report.released_traces == report.requests + len(report.probes)
    rss = report.rss_processor
    third = len(rss) // 3
    assert max(rss[-third:]) <= max(rss[:third]) * 1.5, rss  # memory levels off under load
    assert max(rss) < 512 * 1024
    assert report.percentile(0.99) < 5000, report.summary()
