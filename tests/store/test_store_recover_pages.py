"""``store recover`` on stores cut short or partly overwritten (issue 49 item 3): the pages are
scanned without SQLite, so every batch whose pages survive is kept, checked against its CRC."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from spanguard_processor.cli import cli
from spanguard_processor.collector.limits import Shaper
from spanguard_processor.collector.salvage import recover_store
from spanguard_processor.ingest.codec_protobuf import PROTOBUF_CODEC
from spanguard_processor.store.schema import PAGE_SIZE, DamagedStore
from spanguard_processor.store.span_store import SpanStore

from ..reliability.hostile import tiny_spans_request

BATCHES, SPANS = 24, 300  # each body (≈ 12 KiB) and its index row: some overflow a page


@pytest.fixture(scope="module")
def intact(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("recover") / "spans.db"
    shaping = Shaper().shaping
    with SpanStore(path) as store:
        for seed in range(BATCHES):
            body = tiny_spans_request(SPANS + seed * 10, seed=seed)
            store.put_batches([PROTOBUF_CODEC.decode(body, None, shaping)])
    return path


def _spans(path: Path) -> set[tuple[str, str]]:
    with SpanStore(path, readonly=True) as store:
        return set(store.span_ids())


def _cut(intact: Path, folder: Path, keep: int) -> Path:
    damaged = folder / "damaged.db"
    damaged.write_bytes(intact.read_bytes()[:keep])
    return damaged


def test_a_store_cut_to_90_percent_keeps_at_least_80_percent(intact: Path, tmp_path: Path) -> None:
    size = intact.stat().st_size
    damaged = _cut(intact, tmp_path, size * 9 // 10)
    salvage = recover_store(damaged, tmp_path / "new.db")
    everything, kept = _spans(intact), _spans(tmp_path / "new.db")
    assert kept <= everything  # nothing made up
    assert len(kept) >= 0.8 * len(everything), (len(kept), len(everything))
    assert salvage.spans == len(kept)
    result = CliRunner().invoke(cli, ["store", "recover", str(damaged), str(tmp_path / "cli.db")])
    assert result.exit_code == 0, result.output
    assert f"recovered {len(kept)} span(s)" in result.output
    assert "its pages are read one by one instead" in result.output


def test_a_store_cut_in_half_keeps_what_survives(intact: Path, tmp_path: Path) -> None:
    salvage = recover_store(_cut(intact, tmp_path, intact.stat().st_size // 2), tmp_path / "n.db")
    kept = _spans(tmp_path / "n.db")
    assert len(kept) > 0 and kept <= _spans(intact)
    assert salvage.batches > 0


def test_a_store_with_pages_overwritten_in_the_middle(intact: Path, tmp_path: Path) -> None:
    data = bytearray(intact.read_bytes())
    middle = len(data) // 2 // PAGE_SIZE * PAGE_SIZE
    data[middle : middle + PAGE_SIZE] = bytes(PAGE_SIZE)  # one page zeroed
    damaged = tmp_path / "damaged.db"
    damaged.write_bytes(bytes(data))
    salvage = recover_store(damaged, tmp_path / "n.db")
    kept, everything = _spans(tmp_path / "n.db"), _spans(intact)
    assert kept <= everything and len(kept) >= 0.75 * len(everything)
    # the index rows that survived the pages of the batches lost tell what was lost
    assert 0 < salvage.lost_spans <= len(everything) - len(kept), salvage


def test_a_store_cut_to_4_kib_says_so(intact: Path, tmp_path: Path) -> None:
    with pytest.raises(DamagedStore, match="4096 bytes, less than one 16384-byte page"):
        recover_store(_cut(intact, tmp_path, 4096), tmp_path / "n.db")
    assert not (tmp_path / "n.db").exists()
