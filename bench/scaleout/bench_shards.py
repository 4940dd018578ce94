"""Pages per second of one N-task `scrape` run (default 10,000): unsharded, 1 shard and 2 shards
(multiprocess executor, embedded SQLite home), then 1 and 2 Celery workers (Postgres home,
Redis broker; skipped when either is missing). Prints the ratios, 2 vs 1, and the per-task
costs behind the README's "Scaling out" figures.

Then where the time of each run went, to tell what sharding can split from what it cannot:
- phases from the run's own event log (read after the command ended): CLI start to run created,
  the planned events, each step's launch (process start), set-up, work and asset events, the
  gaps where no step ran, and the end; the seconds in which the shard steps ran (the only part
  shards parallelise) against the rest, and what Amdahl's law then allows for 2 shards;
- CPU seconds per role (the CLI parent, the forkserver, each forked step process, the site,
  Celery workers, Postgres, Redis, this bench's sampler, and the rest of the machine) over the
  whole run, and before, while and after the shard steps ran, sampled from /proc every 0.1 s.

`python -m bench.scaleout.bench_shards [--tasks N] [--no-celery]`
"""

import argparse
import os
from collections.abc import Mapping, Sequence

from bench.lib.homes import temp_root
from bench.lib.report import print_table
from bench.lib.site import Site
from bench.scaleout.run_log import Breakdown, PhaseKey, StepTimes
from bench.scaleout.runs import SHARDED, UNSHARDED, Row, celery_run, sqlite_run
from bench.scaleout.sampling import (
    BENCH_ROLE,
    CELERY_ROLE,
    CLI_ROLE,
    FORKED_ROLE,
    FORKSERVER_ROLE,
    MACHINE_ROLE,
    OTHER_ROLE,
    POSTGRES_ROLE,
    REDIS_ROLE,
    SITE_ROLE,
    STEP_PREFIX,
)


def role_order(role: str) -> tuple[int, int, str]:
    """Roles in a fixed order: ours, each step's below the forked processes, the rest last."""
    fixed = [CLI_ROLE, FORKSERVER_ROLE, FORKED_ROLE, STEP_PREFIX, CELERY_ROLE, SITE_ROLE]
    fixed += [POSTGRES_ROLE, REDIS_ROLE, BENCH_ROLE]
    last = [OTHER_ROLE, MACHINE_ROLE]
    if role.startswith(STEP_PREFIX):
        name = role[len(STEP_PREFIX) :]
        return fixed.index(STEP_PREFIX), StepTimes(name).rank, name
    if role in fixed:
        return fixed.index(role), 0, ""
    if role in last:
        return len(fixed) + 1 + last.index(role), 0, ""
    return len(fixed), 0, role


def print_cpu_table(runs: Mapping[str, Breakdown], which: str, title: str) -> None:
    """CPU seconds per role of each run in one of its windows (roles under 0.01 s left out)."""
    cpu: dict[str, dict[str, float]] = {}
    spans: list[float | None] = []
    for label, b in runs.items():
        window = b.window(which)
        cpu[label] = b.cpu(window) if window else {}
        spans.append(window[1] - window[0] if window else None)
    roles = {role for found in cpu.values() for role in found}
    shown = [r for r in roles if max(abs(c.get(r, 0.0)) for c in cpu.values()) >= 0.01]
    table: list[list[str | float | None]] = [["(window, wall seconds)", *spans]]
    table += [[r, *[cpu[label].get(r) for label in runs]] for r in sorted(shown, key=role_order)]
    busy_cores = [
        None if not s or MACHINE_ROLE not in cpu[label] else cpu[label][MACHINE_ROLE] / s
        for label, s in zip(runs, spans, strict=True)
    ]
    table.append([f"(machine busy cores, of {os.cpu_count()})", *busy_cores])
    print_table(["CPU seconds per role", *runs], table, title=f"CPU, {title}")


def print_breakdowns(rows: Sequence[Row]) -> None:
    """The phases of each run, its CPU per role, and what Amdahl's law allows 2 shards."""
    runs = {r.label: r.breakdown for r in rows if r.breakdown is not None}
    if not runs:
        return
    phases = {label: b.phases() for label, b in runs.items()}
    names: dict[PhaseKey, str] = {}
    for found in phases.values():
        names.update({key: name for key, (name, _) in found.items() if key not in names})
    print_table(
        ["phase (seconds; steps at the same time overlap)", *runs],
        [[names[k], *[p.get(k, ("", None))[1] for p in phases.values()]] for k in sorted(names)],
        title="Where the time went: phases from each run's own event log",
    )
    for title, which in (
        ("whole run: from just before the CLI started to just after it ended", "whole"),
        ("before the shard steps: CLI start to the first shard's STEP_START", "before"),
        ("while the shard steps ran: first STEP_START to last step end", "during"),
        ("after the shard steps: to the CLI's exit", "after"),
    ):
        print_cpu_table(runs, which, title)
    cores = os.cpu_count() or 1
    for label, b in runs.items():
        whole = b.window("whole")
        other = b.cpu(whole).get(OTHER_ROLE) if whole else None
        if whole and other is not None and other / (whole[1] - whole[0]) > 0.1:
            print(
                f"(noise: during '{label}' processes not ours used {other:.1f} CPU s, "
                f"{other / (whole[1] - whole[0]):.2f} cores on average)"
            )
    for two, one in (
        ("2 shards", "1 shard"),
        ("celery, 2 worker(s), 2 shards", "celery, 1 worker(s), 2 shards"),
    ):
        b1, b2 = runs.get(one), runs.get(two)
        if b1 is None or b2 is None or b1.parallel_seconds is None or b2.parallel_seconds is None:
            continue
        t1, p1, t2, p2 = b1.seconds, b1.parallel_seconds, b2.seconds, b2.parallel_seconds
        s1, s2 = t1 - p1, t2 - p2
        ours1, ours2 = b1.our_cpu("during"), b2.our_cpu("during")
        floor = ours1 / cores
        print(f"\n{one} -> {two}:")
        print(
            f"  {one}: {t1:.1f} s = P {p1:.1f} s shard steps running + S {s1:.1f} s the rest "
            f"(P {p1 / t1:.0%} of the run)"
        )
        print(
            f"  Amdahl, P split in 2: S + P/2 = {s1 + p1 / 2:.1f} s -> at most "
            f"{t1 / (s1 + p1 / 2):.2f}x (P split in infinitely many: {t1 / s1:.2f}x); "
            f"1.6x needs S <= P/3 = {p1 / 3:.1f} s"
        )
        print(
            f"  CPU budget: while {one}'s shard steps ran our processes used {ours1:.1f} CPU s "
            f"({ours1 / p1:.2f} cores); on {cores} cores that needs >= {floor:.1f} s -> at most "
            f"{t1 / (s1 + max(p1 / 2, floor)):.2f}x"
        )
        print(
            f"  {two}: {t2:.1f} s = P {p2:.1f} s + S {s2:.1f} s; P {p1 / p2:.2f}x shorter, "
            f"S {s2 - s1:+.1f} s; our processes used {ours2:.1f} CPU s ({ours2 / p2:.2f} cores) "
            f"while its shard steps ran; measured {t1 / t2:.2f}x"
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=10_000)
    parser.add_argument("--page-bytes", type=int, default=20_000)
    parser.add_argument("--no-celery", action="store_true", help="only the SQLite rows")
    parser.add_argument("--only-celery", action="store_true", help="only the Celery rows")
    parser.add_argument("--tmp-dir", default=None, help="where homes and data go (default /tmp)")
    args = parser.parse_args(argv)
    rows: list[Row] = []
    with (
        temp_root("sfbench-shards-", args.tmp_dir) as root,
        Site(args.tasks, args.page_bytes) as site,
    ):
        if not args.only_celery:
            for label, module, shards in (
                ("unsharded", UNSHARDED, None),
                ("1 shard", SHARDED, 1),
                ("2 shards", SHARDED, 2),
            ):
                rows.append(sqlite_run(label, module, shards, site, args.tasks, root))
                print(rows[-1], flush=True)  # each figure as soon as it is measured
        if not args.no_celery:
            for workers in (1, 2):
                row = celery_run(workers, site, args.tasks, root)
                if row is not None:
                    rows.append(row)
                    print(rows[-1], flush=True)
    print_table(
        ["run", "tasks", "seconds", "pages/s", "ok", "per task"],
        [[r.label, r.tasks, r.seconds, r.pages_per_second, r.ok, r.extra] for r in rows],
        title=f"scrape over {args.tasks:,} tasks, one run each ({os.cpu_count()} cores)",
    )
    by_label = {r.label: r for r in rows}
    for two, one in (
        ("2 shards", "1 shard"),
        ("celery, 2 worker(s), 2 shards", "celery, 1 worker(s), 2 shards"),
    ):
        if two in by_label and one in by_label:
            ratio = by_label[two].pages_per_second / by_label[one].pages_per_second
            print(f"{two} / {one}: {ratio:.2f}x pages/s (target >= 1.6)")
    print_breakdowns(rows)
    return 0 if all(r.ok for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
