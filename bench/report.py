"""The side-by-side tables (Markdown, so a run can be pasted into docs/performance.md),
every ratio, and the JSON written under bench/results/."""

from __future__ import annotations

import json
import socket
from datetime import UTC, datetime
from pathlib import Path

Row = tuple[str, str, str, str, str]
HEADER: Row = ("", "blogpublish", "bare Celery", "ratio", "target (issues 18, 9)")
TITLES = {"postgres": "PostgreSQL", "sqlite": "SQLite"}


def ratios(result: dict) -> dict[str, float | None]:
    """Every ratio of one database's run; None where a part is missing."""
    pipe, catch = result.get("pipeline", {}), result.get("catchup", {})
    out: dict[str, float | None] = {}
    if "bare" in pipe:
        bare, blog = pipe["bare"], pipe["blogpublish"]
        trip, idle = bare["round_trip"], blog["idle"]
        drain = blog["burst"]["per_second"] / bare["drain"]["per_second"]
        out["burst_drain_per_bare_drain"] = drain
        if "from_ready_per_second" in bare["drain"]:
            out["burst_from_ready_per_bare"] = (
                blog["burst"]["from_ready_per_second"] / bare["drain"]["from_ready_per_second"]
            )
        out["idle_p50_per_bare_p50"] = idle["p50_ms"] / trip["p50_ms"]
        out["idle_p99_per_bare_p99"] = idle["p99_ms"] / trip["p99_ms"]
        rss = blog["rss"]["rss_bytes"]
        out["rss_last_per_first"] = rss[1] / rss[0]
    imported = result.get("import", {})
    if "bare" in imported:
        out["import_publish_per_bare_drain"] = (
            imported["publish"]["per_second"] / imported["bare"]["per_second"]
        )
        if "end_to_end_per_second" in imported["publish"]:
            out["import_end_to_end_per_bare_drain"] = (
                imported["publish"]["end_to_end_per_second"] / imported["bare"]["per_second"]
            )
    live = result.get("import_live", {})
    if "bare" in live:
        out["import_live_per_bare_drain"] = (
            live["publish"]["per_second"] / live["bare"]["per_second"]
        )
    sizes = catch.get("catch_up", [])
    if len(sizes) > 1:
        out["catch_up_largest_per_smallest"] = sizes[-1]["median_s"] / sizes[0]["median_s"]
    return out


def short(n: int) -> str:
    for unit, size in (("M", 1_000_000), ("k", 1_000)):
        if n >= size and n % (size // 10) == 0:
            return f"{n / size:g}{unit}"
    return f"{n:,}"


def pipeline_rows(pipe: dict, r: dict) -> list[Row]:
    bare, blog = pipe["bare"], pipe["blogpublish"]
    burst, idle, trip = blog["burst"], blog["idle"], bare["round_trip"]
    lag, lag_newest = burst["pages_lag_ms"], burst.get("pages_lag_after_newest_ms")
    rss_after, rss = blog["rss"]["after"], blog["rss"]["rss_bytes"]
    mb = [f"{b / 2**20:,.0f} MB" for b in rss]
    return [
        (
            f"drain: {burst['n']:,} saved / {bare['drain']['n']:,} sent, worker stopped",
            f"{burst['per_second']:,.1f} /s",
            f"{bare['drain']['per_second']:,.0f} /s",
            f"{r['burst_drain_per_bare_drain']:.3f}×",
            "≥ 0.60× (1.0× stretch)",
        ),
        *(
            [
                (
                    "drain from the worker ready: n / (ready → last)",
                    f"{burst['from_ready_per_second']:,.1f} /s",
                    f"{bare['drain']['from_ready_per_second']:,.0f} /s",
                    f"{r['burst_from_ready_per_bare']:.3f}×",
                    "",
                )
            ]
            if "burst_from_ready_per_bare" in r
            else []
        ),
        (
            f"idle p50 over {idle['n']} (save→published / send→runs)",
            f"{idle['p50_ms']:.1f} ms",
            f"{trip['p50_ms']:.2f} ms",
            f"{r['idle_p50_per_bare_p50']:.1f}×",
            "≤ 5×",
        ),
        (
            "idle p99",
            f"{idle['p99_ms']:.1f} ms",
            f"{trip['p99_ms']:.2f} ms",
            f"{r['idle_p99_per_bare_p99']:.1f}×",
            "",
        ),
        ("save p50 (save() with its dispatch)", f"{idle['save_p50_ms']:.1f} ms", "", "", ""),
        (
            "front page + feed list the burst's newest, after its last publish",
            "not within 30 s" if lag is None else f"{lag:,.0f} ms",
            "",
            "",
            "≤ 1,000 ms",
        ),
        (
            "the same, after the newest's own publish",
            "-" if lag_newest is None else f"{lag_newest:,.0f} ms",
            "",
            "",
            "",
        ),
        (f"worker RSS after {short(rss_after[0])} publishes", mb[0], "", "", ""),
        (
            f"worker RSS after {short(rss_after[1])} publishes",
            mb[1],
            "",
            f"{r['rss_last_per_first']:.2f}× ({short(rss_after[1])}/{short(rss_after[0])})",
            "≤ 1.1×",
        ),
    ]


def import_rows(imported: dict, r: dict) -> list[Row]:
    bare, files, publish = imported["bare"], imported["import"], imported["publish"]
    return [
        (
            f"import: {files['files']:,} Markdown files → pending rows (no worker)",
            f"{files['files_per_second']:,.0f} files/s",
            "",
            "",
            "≥ 2,000 files/s (issue 9)",
        ),
        (
            f"import → published: {publish['n']:,} by batches / {bare['n']:,} no-ops sent"
            " (n / worker ready → last)",
            f"{publish['per_second']:,.1f} /s",
            f"{bare['per_second']:,.0f} /s",
            f"{r['import_publish_per_bare_drain']:.3f}×",
            "≥ 1.0× (1.3× stretch)",
        ),
        (
            "import → published: worker ready → last published / last no-op run",
            f"{publish['worker_ready_to_last_s']:,.1f} s",
            f"{bare['worker_ready_to_last_s']:,.1f} s",
            "",
            "",
        ),
        *(
            [
                (
                    "import → published, end to end: n / (import's wall time + the above)",
                    f"{publish['end_to_end_per_second']:,.1f} /s",
                    f"{bare['per_second']:,.0f} /s",
                    f"{r['import_end_to_end_per_bare_drain']:.3f}×",
                    "≥ 1.3× (issue 18)",
                )
            ]
            if "end_to_end_per_second" in publish
            else []
        ),
    ]


def import_live_rows(live: dict, r: dict) -> list[Row]:
    bare, publish = live["bare"], live["publish"]
    return [
        (
            f"import beside a running worker: {publish['n']:,} files, n / (the import's"
            " start → last published)",
            f"{publish['per_second']:,.1f} /s",
            f"{bare['per_second']:,.0f} /s",
            f"{r['import_live_per_bare_drain']:.3f}×",
            "≥ 1.3× (issue 18)",
        ),
        (
            "  the import's start → last published / worker ready → last no-op run",
            f"{publish['worker_ready_to_last_s']:,.1f} s",
            f"{bare['worker_ready_to_last_s']:,.1f} s",
            "",
            "",
        ),
    ]


def catch_up_rows(sizes: list[dict], r: dict) -> list[Row]:
    rows: list[Row] = []
    for n, size in enumerate(sizes):
        last = n == len(sizes) - 1 and n > 0
        runs = ", ".join(f"{s:.2f}" for s in size["runs_s"])
        rows.append(
            (
                f"catch-up + reconcile, {size['articles']:,} articles"
                f" (first pass {size['first_pass_s']:.2f} s; runs {runs})",
                f"{size['median_s']:.3f} s",
                "",
                f"{r['catch_up_largest_per_smallest']:.2f}×"
                f" ({short(size['articles'])}/{short(sizes[0]['articles'])})"
                if last
                else "",
                "≤ 1.2× (1M/10k)" if last else "",
            )
        )
    return rows


def table(rows: list[Row]) -> str:
    widths = [max(len(row[i]) for row in [HEADER, *rows]) for i in range(len(HEADER))]

    def line(row: Row) -> str:
        cells = [row[0].ljust(widths[0])] + [
            c.rjust(w) for c, w in zip(row[1:], widths[1:], strict=True)
        ]
        return "| " + " | ".join(cells) + " |"

    rule = "|" + "|".join("-" * (w + 2) for w in widths[:1]) + "|"
    rule += "|".join("-" * (w + 1) + ":" for w in widths[1:]) + "|"
    return "\n".join([line(HEADER), rule, *(line(row) for row in rows)])


def database_report(database: str, result: dict) -> str:
    r = ratios(result)
    rows: list[Row] = []
    notes = []
    for part in ("pipeline", "import", "import_live", "catchup"):
        got = result.get(part, {})
        if "skipped" in got or "failed" in got:
            notes.append(f"{part}: {got.get('skipped') or got.get('failed')}")
    if "bare" in result.get("pipeline", {}):
        rows += pipeline_rows(result["pipeline"], r)
    if "bare" in result.get("import", {}):
        rows += import_rows(result["import"], r)
    if "bare" in result.get("import_live", {}):
        rows += import_live_rows(result["import_live"], r)
    if result.get("catchup", {}).get("catch_up"):
        rows += catch_up_rows(result["catchup"]["catch_up"], r)
    out = [f"\n{TITLES.get(database, database)}\n"]
    if rows:
        out.append(table(rows))
    out += [f"  {note}" for note in notes]
    return "\n".join(out)


def write_results(directory: Path, document: dict) -> Path:
    """<UTC timestamp>-<host>.json, and the same as latest.json."""
    directory.mkdir(parents=True, exist_ok=True)
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    path = directory / f"{stamp}-{socket.gethostname()}.json"
    text = json.dumps(document, indent=2, sort_keys=True) + "\n"
    path.write_text(text)
    (directory / "latest.json").write_text(text)
    return path
