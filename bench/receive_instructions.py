"""Instructions per span of the OTLP receive path, counted by valgrind's callgrind.

CPU seconds on a shared 2-core machine move by ±20 % between runs (bench_ingest.py's rounds),
which hides any change worth less than that; callgrind counts the instructions a process
executes, the same for the same binary and input whatever else the machine is doing. Each
stage runs the bench's requests (40,000 spans, 512 per request) twice in one process and once
not at all; the difference, per span, is the stage's cost without the interpreter's start:

* ``parse`` — ``ExportTraceServiceRequest.ParseFromString`` (upb), the floor;
* ``count`` — the exact span count from the wire format (``count_spans``);
* ``receive`` — what ``Receiver.receive`` does to a body but admission and the hand-over to
  the writer: the span count (framing the spans, where the code has ``span_frames``), the
  parse, then limits and grouping by trace (``Codec.count`` and ``Codec.decode``), i.e. everything
  the HTTP thread does to a request body but HTTP itself.

With ``--source SRC`` (another checkout's ``collector_processor/src``) the same is counted
for that code: an A/B of a change that noise would hide. Needs ``valgrind`` (Debian's
package); about 2 minutes on 2 cores.

    .venv/bin/python bench/receive_instructions.py
"""

from __future__ import annotations

import argparse
import os
import pickle
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
STAGES = ("parse", "count", "receive")
REPEAT = 2


def _run_stage(stage: str, repeat: int, bodies_file: str) -> None:
    """In the measured process: run ``stage`` over the pickled bodies ``repeat`` times."""
    from spanguard_processor.collector.limits import Shaper
    from spanguard_processor.ingest import otlp_proto
    from spanguard_processor.ingest.otlp_proto import parse_request

    try:  # older code shapes in Shaper.shape_and_decode, without a codec
        from spanguard_processor.ingest.codec_protobuf import PROTOBUF_CODEC as codec
        from spanguard_processor.ingest.otlp_columns import count_spans
    except ImportError:
        from spanguard_processor.ingest.otlp_proto import count_spans  # type: ignore[no-redef]

        codec = None
    bodies = pickle.loads(Path(bodies_file).read_bytes())
    shaper: Any = Shaper()
    frame = getattr(otlp_proto, "span_frames", None)  # older code counts without framing
    for _ in range(repeat):
        for body in bodies:
            if stage == "parse":
                parse_request(body)
            elif stage == "count":
                count_spans(body, 50_000)
            elif codec is not None:
                codec.decode(body, codec.count(body, 50_000), shaper.shaping)
            elif frame is not None:
                frames = frame(body)
                shaper.shape_and_decode(parse_request(body), body, frames)
            else:
                count_spans(body, 50_000)
                shaper.shape_and_decode(parse_request(body), body)


def _instructions(stage: str, repeat: int, bodies_file: str, source: Path, folder: Path) -> int:
    out = folder / f"callgrind.{stage}.{repeat}"
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(source), os.environ.get("PYTHONPATH")])),
    }
    done = subprocess.run(
        [
            "valgrind",
            "--tool=callgrind",
            f"--callgrind-out-file={out}",
            sys.executable,
            __file__,
            "--stage",
            stage,
            "--times",
            str(repeat),
            "--bodies",
            bodies_file,
        ],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    found = re.search(r"Collected : (\d+)", done.stderr)
    if found is None:
        raise SystemExit(f"callgrind printed no count:\n{done.stderr[-2000:]}")
    return int(found.group(1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--source",
        type=Path,
        default=None,
        metavar="SRC",
        help="also count another checkout's collector_processor/src",
    )
    parser.add_argument("--stage", choices=STAGES, help=argparse.SUPPRESS)
    parser.add_argument("--times", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--bodies", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.stage:
        _run_stage(args.stage, args.times, args.bodies)
        return
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not installed (Debian: apt-get install valgrind)")

    sys.path.insert(0, str(ROOT))
    sys.path.insert(0, str(ROOT / "bench"))
    from bench_ingest import make_spans
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    spans = make_spans(8000)
    bodies = [
        encode_spans(spans[i : i + 512]).SerializeToString() for i in range(0, len(spans), 512)
    ]
    sources = [("this code", ROOT / "collector_processor" / "src")]
    if args.source is not None:
        sources.append((f"{args.source}", args.source.resolve()))
    with tempfile.TemporaryDirectory() as tmp:
        bodies_file = str(Path(tmp) / "bodies.pkl")
        Path(bodies_file).write_bytes(pickle.dumps(bodies))
        print(
            f"{len(spans)} spans in {len(bodies)} requests; instructions per span "
            f"(callgrind, {REPEAT} passes minus none)"
        )
        print(f"{'stage':10} " + " ".join(f"{name[-24:]:>24}" for name, _ in sources))
        for stage in STAGES:
            counts = []
            for _, source in sources:
                base = _instructions(stage, 0, bodies_file, source, Path(tmp))
                full = _instructions(stage, REPEAT, bodies_file, source, Path(tmp))
                counts.append((full - base) / (REPEAT * len(spans)))
            print(f"{stage:10} " + " ".join(f"{count:24,.0f}" for count in counts))


if __name__ == "__main__":
    main()
