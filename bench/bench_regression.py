"""Regression-case build: spanguard vs trace2eval-cli 0.5.1 on the same synthetic logs.

Synthetic logs: a Zipf-distributed pool of questions (35 % Chinese), each asked in several
paraphrases, with 10 % long RAG inputs (a shared retrieved document plus the question), and
realistic feedback/retry/latency/cost. Each build runs in its own child process, which
reports its wall time, CPU time (user + system, from its start: imports included) and peak
RSS. The ratio is trace2eval's time over ours, same run; in brackets the same for CPU time,
the steadier figure on a shared machine.

    .venv/bin/python bench/bench_regression.py                 # 1k, 10k, 20k side by side
    .venv/bin/python bench/bench_regression.py --sizes 1000000 --ours-only   # the 1M build

It also checks, on a sample of the benchmark's distinct questions, that the indexed Jaccard
join finds exactly the pairs an all-pairs comparison finds.
"""

from __future__ import annotations

import argparse
import itertools
import json
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

EN_VERBS = [
    "reset",
    "change",
    "update",
    "cancel",
    "renew",
    "delete",
    "export",
    "verify",
    "recover",
    "upgrade",
    "download",
    "transfer",
    "link",
    "unlink",
    "refund",
]
EN_NOUNS = [
    "password",
    "account",
    "subscription",
    "invoice",
    "order",
    "email address",
    "phone number",
    "api key",
    "billing plan",
    "profile photo",
    "shipping address",
    "payment method",
    "team seat",
    "workspace",
    "two factor login",
]
EN_TAILS = [
    "",
    " today",
    " on mobile",
    " for my team",
    " without losing data",
    " after moving",
    " from the dashboard",
    " in the app",
    " quickly",
    " for a closed account",
]
ZH_VERBS = ["修改", "取消", "更新", "删除", "导出", "验证", "找回", "升级", "下载", "转移", "退款"]
ZH_NOUNS = [
    "密码",
    "账户",
    "订阅",
    "发票",
    "订单",
    "邮箱地址",
    "手机号",
    "密钥",
    "套餐",
    "头像",
    "收货地址",
    "支付方式",
    "团队席位",
    "工作区",
]
ZH_TAILS = [
    "",
    "今天",
    "在手机上",
    "给团队",
    "不丢数据",
    "搬家以后",
    "在控制台",
    "在应用里",
    "尽快",
]
EN_PARA = [
    ("how do i {q}", 1),
    ("how can i {q}?", 1),
    ("please help me {q}", 1),
    ("{q} - how?", 1),
    ("i want to {q}", 1),
    ("what is the way to {q}", 1),
]
ZH_PARA = ["怎么{q}", "如何{q}？", "请帮我{q}", "我想{q}", "{q}怎么弄", "{q}的方法"]
ANSWERS = [
    "You can do that from Settings > Account; it takes about two minutes and you will "
    "receive a confirmation email once it is complete.",
    "请在「设置 - 账户」中操作，完成后会收到确认邮件，整个过程大约两分钟。",
    "Sorry, I can't help with that.",
    "好的。",
    "",
    "Done.",
    "I don't have enough information to answer that.",
]


def _names(rng: random.Random, count: int) -> list[str]:
    """Product, place and plan names: the long tail of vocabulary real questions carry."""
    syllables = [
        "ka",
        "lo",
        "mi",
        "ter",
        "vex",
        "zor",
        "pla",
        "nu",
        "dri",
        "sol",
        "qua",
        "ber",
        "fin",
        "gal",
        "hop",
        "jet",
        "kin",
        "lum",
        "mor",
        "pix",
        "ran",
        "sup",
        "tor",
        "wiz",
    ]
    return ["".join(rng.choice(syllables) for _ in range(rng.randint(2, 4))) for _ in range(count)]


def _han(rng: random.Random, count: int) -> list[str]:
    return [
        "".join(chr(rng.randint(0x4E00, 0x9FA5)) for _ in range(rng.randint(2, 3)))
        for _ in range(count)
    ]


def _questions(rng: random.Random, count: int) -> list[str]:
    names, han = _names(rng, 3000), _han(rng, 3000)
    seen: dict[str, None] = {}
    while len(seen) < count:
        if rng.random() < 0.35:
            q = rng.choice(ZH_VERBS) + rng.choice(han) + rng.choice(ZH_NOUNS) + rng.choice(ZH_TAILS)
        else:
            q = (
                f"{rng.choice(EN_VERBS)} my {rng.choice(names)} {rng.choice(EN_NOUNS)}"
                f"{rng.choice(EN_TAILS)}"
            )
        if rng.random() < 0.3:
            q += f" #{rng.randint(1000, 99999)}"
        seen[q] = None
    return list(seen)


def _paraphrase(rng: random.Random, q: str) -> str:
    if any("\u4e00" <= ch <= "\u9fff" for ch in q):
        return rng.choice(ZH_PARA).format(q=q)
    text = rng.choice(EN_PARA)[0].format(q=q)
    return text.capitalize() if rng.random() < 0.5 else text


def _documents(rng: random.Random, count: int) -> list[str]:
    words = (
        EN_NOUNS
        + EN_VERBS
        + [
            "policy",
            "section",
            "customer",
            "within",
            "days",
            "support",
            "request",
            "processed",
            "eligible",
            "window",
            "statement",
        ]
    )
    return [" ".join(rng.choice(words) for _ in range(rng.randint(60, 140))) for _ in range(count)]


def make_log(path: Path, rows: int, seed: int = 7, questions: int | None = None) -> None:
    rng = random.Random(seed)
    pool = _questions(rng, questions or max(50, min(rows // 4, 50000)))
    weights = list(itertools.accumulate(1 / (i + 1) ** 1.05 for i in range(len(pool))))
    docs = _documents(rng, 40)
    with path.open("w", encoding="utf-8") as out:
        for i in range(rows):
            q = _paraphrase(rng, rng.choices(pool, cum_weights=weights)[0])
            if rng.random() < 0.10:
                q = f"Context:\n{rng.choice(docs)}\n\nQuestion: {q}"
            row = {
                "id": f"req-{i:07d}",
                "input": q,
                "output": rng.choices(ANSWERS, [60, 25, 3, 4, 2, 3, 3])[0],
                "latency_ms": round(rng.lognormvariate(6.6, 0.5), 1),
                "cost_usd": round(rng.lognormvariate(-8.5, 0.4), 7),
                "feedback": rng.choices([None, "negative", "positive"], [90, 5, 5])[0],
                "retried": rng.random() < 0.03,
            }
            out.write(json.dumps(row, ensure_ascii=False) + "\n")


def _child(tool: str, log: str, out: str) -> None:
    start, cpu = time.perf_counter(), time.process_time()
    if tool == "ours":
        from spanguard_processor.regression.mine.build import BuildOptions, build_evalset

        build_evalset([Path(log)], BuildOptions(out=Path(out)))
    else:
        from trace2eval.cli import main

        with open("/dev/null", "w") as sink:
            saved, sys.stdout = sys.stdout, sink
            try:
                main(["build", log, "-o", out])
            finally:
                sys.stdout = saved
    elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"seconds": elapsed, "cpu_seconds": cpu, "peak_rss_mb": rss_mb}))


def _measure(tool: str, log: Path, out: Path, timeout: float) -> dict[str, float] | None:
    cmd = [sys.executable, __file__, "--child", tool, str(log), str(out)]
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=True)
    except subprocess.TimeoutExpired:
        return None
    result: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def _exactness(log: Path, sample: int) -> tuple[int, int, bool]:
    from spanguard_processor.regression.mine.dedup import brute_force_pairs, similar_pairs
    from spanguard_processor.regression.textnorm import fold, shingles

    keys: dict[str, None] = {}
    with log.open(encoding="utf-8") as handle:
        for line in handle:
            keys[fold(json.loads(line)["input"])] = None
            if len(keys) >= sample:
                break
    sets = [shingles(k) for k in keys]
    fast, slow = similar_pairs(sets, 0.6), brute_force_pairs(sets, 0.6)
    return len(sets), len(slow), fast == slow


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--child", nargs=3)
    parser.add_argument("--sizes", default="1000,10000,20000")
    parser.add_argument("--ours-only", action="store_true")
    parser.add_argument("--timeout", type=float, default=600)
    parser.add_argument(
        "--questions",
        type=int,
        help="distinct questions in the pool (default: rows / 4, at most 50,000)",
    )
    args = parser.parse_args()
    if args.child:
        _child(*args.child)
        return
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        print(
            "| rows | spanguard s (CPU s) | spanguard MB | trace2eval s (CPU s) | trace2eval MB "
            "| ratio (CPU ratio) |"
        )
        print("| --- | --- | --- | --- | --- | --- |")
        for size in (int(s) for s in args.sizes.split(",")):
            log = work / f"log_{size}.jsonl"
            make_log(log, size, questions=args.questions)
            ours = _measure("ours", log, work / f"ours_{size}", args.timeout)
            theirs = (
                None if args.ours_only else _measure("t2e", log, work / f"t2e_{size}", args.timeout)
            )
            assert ours is not None, f"spanguard did not finish {size} rows in {args.timeout}s"
            t_s = (
                f"{theirs['seconds']:.2f} ({theirs['cpu_seconds']:.2f})"
                if theirs
                else ("—" if args.ours_only else "timeout")
            )
            t_mb = f"{theirs['peak_rss_mb']:.0f}" if theirs else "—"
            ratio = (
                f"{theirs['seconds'] / ours['seconds']:.1f}× "
                f"({theirs['cpu_seconds'] / ours['cpu_seconds']:.1f}×)"
                if theirs
                else "—"
            )
            print(
                f"| {size:,} | {ours['seconds']:.2f} ({ours['cpu_seconds']:.2f}) | "
                f"{ours['peak_rss_mb']:.0f} | {t_s} | {t_mb} | {ratio} |",
                flush=True,
            )
        if not args.ours_only:
            n, pairs, same = _exactness(work / f"log_{size}.jsonl", 2000)
            print(
                f"\nexactness: {n} distinct questions, {pairs} pairs at J>=0.6 by all-pairs; "
                f"indexed join finds the same set: {same}"
            )


if __name__ == "__main__":
    main()
