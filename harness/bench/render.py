"""``bench.md``: the benchmark's figures as one Markdown section (``## Benchmarks``, subsections ``###``),
rendered from the ``bench.json`` document alone, so a report can embed it or re-render it.
"""

from __future__ import annotations

from typing import Any

from specproof.harness.files.number_text import fmt as _num

__all__ = ["render_markdown", "member_rows", "goal_lines", "MEMBER_COLUMNS"]


def _seed_range(seeds: list[int]) -> str:
    """``0-29`` for consecutive seeds, else the list."""
    consecutive = len(seeds) > 2 and list(seeds) == list(range(seeds[0], seeds[-1] + 1))
    return f"{seeds[0]}-{seeds[-1]}" if consecutive else str(list(seeds))


def _method_cell(method: dict[str, Any]) -> str:
    """Median rows; for a miss, the largest test tried and what stopped the schedule."""
    seeds = list(method["per_seed"].values())
    if method["caught"]:
        raised = any((s.get("flag") or {}).get("how", "").startswith("raised") for s in seeds)
        return f"{method['median_rows']:,}" + (" (raised)" if raised else "")
    largest = max((s["largest_rows_tried"] for s in seeds), default=0)
    timed = any((s.get("stopped") or "").startswith("time limit") for s in seeds)
    return f"not caught (up to {largest:,} rows{', time limit' if timed else ''})"


def _goal(goal: dict[str, Any]) -> str:
    met = goal["met"]
    return "not measured in this mode" if met is None else ("met" if met else "NOT met")


def _reference(data: dict[str, Any]) -> list[str]:
    ref = data["exact_reference"]
    lines = ["### Exact reference: fast path vs plain Fractions", "",
             "| V | fast s (best) | plain s | speedup | outputs agree exactly |", "|---:|---:|---:|---:|:--|"]
    for row in sorted(ref["rows"].values(), key=lambda r: r["vocab"]):
        lines.append(f"| {row['vocab']:,} | {row['fast_seconds']:.4f} | {row['plain_seconds']:.3f} | "
                     f"{row['speedup']:.1f}x | {_num(row['outputs_agree_exactly'])} |")
    lines += ["", f"Growth: fast ~ V^{_num(ref.get('fast_seconds_exponent'))}, "
                  f"plain ~ V^{_num(ref.get('plain_seconds_exponent'))}.", ""]
    return lines


def _ratio(value: Any) -> str:
    return "-" if value is None else f"{value:.3g}"


def _n_star(oracle: dict[str, Any] | None) -> str:
    if oracle is None:
        return "no model"
    mark = "" if oracle["in_goals"] else " (model)"
    return f"{_num(oracle['n_star'], 4)} ({oracle['via']}, '{oracle['scenario']}'){mark}"


def _n_star_good(oracle: dict[str, Any] | None) -> str:
    """N* against P_good alone, and whether P_good is the projection in N*'s scenario."""
    if oracle is None:
        return "-"
    same = oracle["scenarios"][oracle["scenario"]]["p_good_is_projection"]
    return (f"{_num(oracle['n_star_vs_p_good'], 4)} ('{oracle['scenario_vs_p_good']}'"
            f"{'; Q* = P_good' if same else '; Q* != P_good'})")


def member_rows(det: dict[str, Any]) -> list[tuple[str, ...]]:
    """Per member: N* (how, scenario), specproof rows, test rows, chi-square rows, runtime rows, and the
    three ratios to N* (the columns of the detection table, and of the CLI's summary)."""
    out = []
    for member, rec in det["members"].items():
        r = rec.get("ratios_to_n_star") or {}
        ours = rec["methods"]["specproof"]
        test = ours.get("median_test_rows")
        limit = rec.get("event_limit")  # files written before the event limit had none
        out.append((member, _n_star(rec.get("oracle")), _n_star_good(rec.get("oracle")), _method_cell(ours),
                    "-" if test is None else f"{test:,}",
                    _method_cell(rec["methods"]["chi-square-first-token"]),
                    _method_cell(rec["methods"]["runtime-distribution-test"]),
                    _ratio(r.get("specproof")), _ratio(r.get("specproof_test")),
                    _ratio(r.get("chi-square-first-token")), _ratio(r.get("runtime-distribution-test")),
                    "-" if not limit else f"{_num(limit['rows'], 4)} ('{limit['scenario']}')",
                    _ratio(r.get("event_limit")),
                    "-" if not limit or test is None else _ratio(test / limit["rows"])))
    return out


MEMBER_COLUMNS = ("member", "N* (how, scenario)", "N* vs P_good", "specproof rows", "test rows", "chi-square rows", "runtime rows",
                  "specproof/N*", "test/N*", "chi-square/N*", "runtime/N*", "best event rows (scenario)",
                  "best event/N*", "test/best event")


def goal_lines(det: dict[str, Any]) -> list[str]:
    """The detection goals of issue 16, one line each."""
    lines = []
    for goal in det["summary"].get("goals", {}).values():  # files written before the goals had none
        measured = ", ".join(f"{k} {_num(v, 4)}" for k, v in goal["measured"].items())
        lines.append(f"{goal['statement']}: {_goal(goal)} ({measured})")
    return lines


def _detection(data: dict[str, Any]) -> list[str]:
    det = data["detection"]
    methods = ["specproof"] + sorted(m for m in det["methods"] if m != "specproof")  # JSON keys come sorted
    summary = det["summary"]
    oracle = det.get("oracle", {})
    lines = ["### Detection strength: verifier rows needed to flag each zoo member, against the limit N*", "",
             f"Median over seeds of the rows consumed to flag (specproof: seeds {_seed_range(det.get('specproof_seeds') or det['seeds'])}; "
             f"the baselines and the control: seeds {_seed_range(det['seeds'])}); each baseline runs a doubling "
             f"schedule whose largest test is capped at {det['row_budget']:,} rows (stopping before a test "
             f"predicted to take it past {_num(det['time_limit_seconds'])} s).  N*: the rows a sequential test "
             f"that knows the member's exact law needs against every lossless law (alpha "
             f"{_num(oracle.get('alpha'))}; certain outcomes within beta {_num(oracle.get('beta'))}), in the most "
             f"sensitive enumerable scenario (harness.bench.oracle); N* vs P_good: the same against the canonical "
             f"rule's law alone (not a valid null by itself; at most N*), and whether P_good is the projection "
             f"Q* in N*'s scenario.  Best event rows: the rows specproof's single most powerful tested event "
             f"needs at its own threshold, ln(1/a) / (growth per row of its best bet under P_bad), in its best "
             f"scenario (harness.bench.event_limit): a check that knew the scenario and the event would need that "
             f"many; best event/N* is the loss of the tests, test/best event the loss of the allocation.", ""]
    for name in methods:
        lines.append(f"- `{name}`: {det['methods'][name]}")
    for name, why in (oracle.get("excluded_scenarios") or {}).items():
        lines.append(f"- N* excludes scenario '{name}': {why}.")
    for name, why in (oracle.get("unmodelled") or {}).items():
        lines.append(f"- N* not computed for member {name}: {why}.")
    lines += ["", "| " + " | ".join(MEMBER_COLUMNS) + " | exact grid |",
              "|:--|:--|:--|" + "---:|" * (len(MEMBER_COLUMNS) - 3) + ":--|"]
    for row in member_rows(det):
        grid = det["members"][row[0]]["grid"]
        grid_cell = "-" if grid is None else f"{grid['verdict']} on '{grid['scenario']}'"
        lines.append("| " + " | ".join(row) + f" | {grid_cell} |")
    for member, reason in det["excluded"].items():
        lines.append(f"| {member} | excluded: {reason} |" + " |" * len(MEMBER_COLUMNS))
    outside = summary.get("rows_over_n_star", {}).get("outside_goals") or {}
    for member, note in outside.items():
        lines += ["", f"(model) {member}: {note}."]
    misses = [(member, rec["bug"]) for member, rec in det["members"].items()
              if not rec["methods"]["specproof"]["caught"]]
    if misses:
        lines += ["", "Not caught by specproof within the cap (the defect, as the zoo records it):"]
        lines += [f"- {member}: {bug}" for member, bug in misses]
    total = summary["total"]
    lines += ["", "Caught / total: " + ", ".join(f"{m} {summary['caught'][m]}/{total}" for m in methods)
              + f"; specproof or the exact grid {summary['specproof_statistical_or_grid']}/{total}"
              + (f" (grid only: {', '.join(summary['specproof_grid_only'])})" if summary["specproof_grid_only"] else "")
              + ".", "", "Goals (issue 16):", ""]
    lines += [f"- {line}." for line in goal_lines(det)]
    split = summary.get("rows_over_n_star", {})
    if split.get("split_members"):
        lines.append(f"- Where the rows go, over the {len(split['split_members'])} goal members with a best-event "
                     f"count: best event rows / N* (the tests' loss) median {_num(split['event_limit']['median'], 3)}, "
                     f"max {_num(split['event_limit']['max'], 3)}; test rows / best event rows (the allocation's "
                     f"loss) median {_num(split['allocation']['median'], 3)}, max {_num(split['allocation']['max'], 3)}.")
    lines.append("")
    for baseline in methods[1:]:
        ratio = summary["row_ratio_baseline_over_specproof"][baseline]
        if not ratio["members_both_catch"]:
            lines.append(f"- `{baseline}` / specproof rows: no member caught by both.")
            continue
        per = ", ".join(f"{k} {v:.2g}" for k, v in ratio["per_member"].items())
        over = f", both medians over seeds {_seed_range(ratio['seeds'])}" if ratio.get("seeds") else ""
        lines.append(f"- `{baseline}` rows / specproof rows where both catch ({ratio['members_both_catch']}{over}): "
                     f"min {ratio['min']:.3g}, median {ratio['median']:.3g}, geometric mean "
                     f"{ratio['geometric_mean']:.3g} ({per}).")
        if ratio["caught_by_baseline_only"]:
            lines.append("  Caught by this baseline but not by specproof: "
                         + ", ".join(ratio["caught_by_baseline_only"]) + ".")
    alarms = ", ".join(f"{m} {det['false_alarms'][m]['flagged_seeds']}/{det['false_alarms'][m]['seeds']} seeds"
                       for m in methods)
    lines += ["", f"False alarms on the exact float32 implementation (same runs): {alarms}.", ""]
    null = det.get("chi_square_null")
    if null and null["looks"]:
        lines += [f"`chi-square-first-token` under the exact null ({null['trials']:,} simulated trials of its own "
                  f"procedure, first tokens drawn from p_0, seed {null['seed']}): p-value below "
                  f"{null['alpha_test']:g} at its first look ({null['looks'][0]} rows) in "
                  f"{null['first_look_alarms']:,} trials ({null['first_look_rate']:.2g}), anywhere on its "
                  f"doubling schedule up to {null['looks'][-1]:,} rows (no time limit) in {null['schedule_alarms']:,} "
                  f"({null['schedule_rate']:.2g}); its asymptotic p-value is not valid at a few dozen rows, "
                  f"so its rows are not those of a test at level {null['alpha_test']:g}.", ""]
    matched = det.get("matched_level")
    if matched and matched["members"]:
        per = ", ".join(f"{k} {v['ratio']:.2g}" if v["ratio"] is not None else f"{k} not caught"
                        for k, v in matched["members"].items())
        lines += [f"At that real level: specproof run at family-wise alpha {matched['alpha']:.2g} (the chi-square's "
                  f"schedule rate; not a goal, which holds specproof at 1e-6), chi-square rows / specproof test rows "
                  f"where both catch (medians over seeds {_seed_range(matched['seeds'])}): min "
                  f"{_num(matched['min_ratio'])} ({per}).", ""]
    over = det.get("chi_square_over_seeds")
    if over and over["members"]:
        per = ", ".join(f"{k} {_num(v['ratio'])} / {_num(v['schedule_ratio'])}" for k, v in over["members"].items())
        lines += [f"Over more seeds: the chi-square rerun on specproof's seeds {_seed_range(over['seeds'])} (not a goal, "
                  f"whose medians are over the baselines' seeds), chi-square rows / specproof test rows where both "
                  f"catch, both medians over those seeds, counting the chi-square's flagging test only / its whole "
                  f"doubling schedule (every test it ran up to the flagging one): min {_num(over['min_ratio'])} / "
                  f"{_num(over['min_schedule_ratio'])} ({per}).", ""]
    return lines


def _throughput(data: dict[str, Any]) -> list[str]:
    tp = data["throughput"]
    lines = [f"### Throughput through check (`{tp['implementation']}`, float32, K={tp['k']}, "
             f"C={tp['classes']})", "",
             "| device | V | rows | seconds | rows/s | harness share | exact event laws s |",
             "|:--|---:|---:|---:|---:|---:|---:|"]
    for device, rows in tp["devices"].items():
        for row in sorted(rows.values(), key=lambda r: r["vocab"]):
            lines.append(f"| {device} | {row['vocab']:,} | {row['rows']:,} | {row['seconds']:.2f} | "
                         f"{_num(row['rows_per_second'])} | {100 * row['harness_share']:.0f}% | "
                         f"{row['exact_setup_seconds']:.3f} |")
    lines += ["", tp["cuda_note"] + ".", ""]
    ks = data["k_series"]
    lines += [f"K series at V={ks['vocab']:,}: " + ", ".join(
        f"K={r['k']} {_num(r['rows_per_second'])} rows/s ({100 * r['harness_share']:.0f}% harness)"
        for r in sorted(ks["rows"].values(), key=lambda r: r["k"])) + ".", ""]
    return lines


def _proofs(data: dict[str, Any]) -> list[str]:
    pr = data["proofs"]
    lines = [f"### Proofs (rlimit {pr['settings']['rlimit']:,}, worst-case drift "
             f"{'on' if pr['settings']['drift'] else 'off'})", "",
             "| entry | claim | verdict | as expected | seconds |", "|:--|:--|:--|:--|---:|"]
    for name, e in pr["entries"].items():
        lines.append(f"| {name} | {e['claim']} | {e['verdict']} | {_num(e['expected_verdict_met'])} | "
                     f"{e['seconds']:.2f} |")
    t3 = pr["theorems"]["T3"]
    lines += [f"| T3 (every n) | theorem | {t3['verdict']} | - | {t3['seconds']:.2f} |", "",
              f"Total {pr['seconds']:.1f} s.", ""]
    return lines


def _scaling(data: dict[str, Any]) -> list[str]:
    lines = ["### Scaling (least-squares slope of log seconds on log x)", "",
             "| figure | fixed | points | exponent |", "|:--|:--|:--|---:|"]
    for name, fig in data["scaling"]["figures"].items():
        points = ", ".join(f"{fig['axis'][0].upper()}={int(x):,}: {_num(y)}" for x, y in
                           sorted(fig["points"].items(), key=lambda kv: int(kv[0])))
        lines.append(f"| {name} | {fig['fixed']} | {points} | {_num(fig['exponent'])} |")
    lines.append("")
    return lines


def _check_goals(data: dict[str, Any]) -> list[str]:
    """Issue 16's goals on the check as a user runs it (:mod:`.check_goals`); files from before have none."""
    cg = data.get("check_goals")
    if not cg:
        return []
    d, tb = cg["default_check"], cg["time_budget"]
    lines = ["### The check as a user runs it: default check, default vs fail-fast, time budget", "",
             f"Default check (`{d['command']}`, a child process, start-up included): {d.get('verdict')} in "
             f"{d['seconds']:.1f} s on {_num(d.get('rows'))} rows, detectable TV {_num(d.get('detectable_tv'))}"
             + (f"; {d['note']}" if d.get("note") else "") + ".", ""]
    per_row = tb["seconds_per_row"]
    lines.append("Per member, seed 0: verifier rows at the first finding with `--fail-fast` and without it (the "
                 "default run's own count: statistics, and the reproducibility pair and the injection whole if they came first); "
                 "same calls: the fail-fast run's calls are the default run's first ones, batch by batch; "
                 f"`--time-budget {tb['seconds']:g}` with fail-fast, the member slowed to "
                 + (f"{per_row * 1e3:.3g} ms per row (`{tb['one_row_at_a_time']}`, measured here)"
                    if per_row is not None else "(not measured: transformers is not installed)")
                 + "; exact TV: from the canonical law, in the scenario where it is largest.")
    lines += ["", "| member | exact TV (scenario) | fail-fast rows | default rows at first finding | default / "
                  "fail-fast | same calls | default rows in all | time budget: flagged | seconds | rows | "
                  "strongest finding |", "|:--|:--|---:|---:|---:|:--|---:|:--|---:|---:|:--|"]
    for name, pair in cg["default_vs_fail_fast"].items():
        b = tb["members"].get(name) or {}
        tv = f"{b['tv']:.3g} ('{b['tv_scenario']}')" if b.get("tv") is not None else "-"
        first = pair["default_rows_at_first_finding"]
        timed = ("-" if not b else "yes" if b["flagged"] else "no")
        depth = "" if pair.get("samples") is None else f" ({pair['samples']:,} rows per scenario)"
        shown = "-" if first is None else f"{first:,}"
        found = b.get("strongest") or ("raised" if b.get("raised") else "-")
        lines.append(f"| {name}{depth} | {tv} | {pair['fail_fast_rows']:,} | {shown} | "
                     f"{_ratio(pair['ratio'])} | {_num(pair['same_calls_until_first_finding'])} | "
                     f"{pair['default_rows_total']:,} | {timed} | "
                     f"{_num(b.get('seconds'))} | {_num(b.get('rows'))} | {found} |")
    lines.append("")
    return lines


def _load(prov: dict[str, Any], when: str) -> str:
    values = (prov.get("load_average") or {}).get(when)
    return "unknown" if not values else "/".join(f"{v:.2f}" for v in values)


def render_markdown(data: dict[str, Any]) -> str:
    """The ``## Benchmarks`` section for one ``bench.json`` document."""
    prov = data["provenance"]
    git = prov.get("git", {})
    lines = ["## Benchmarks", "",
             f"Mode `{data['mode']}`, {data['total_seconds']:.0f} s in one run on {prov.get('cpu')} "
             f"({prov.get('cpu_count')} CPUs), torch {prov.get('versions', {}).get('torch')}, commit "
             f"{(git.get('commit') or 'unknown')[:12]}{' (dirty)' if git.get('dirty') else ''}, "
             f"{prov.get('date')}; load average (1, 5, 15 min) {_load(prov, 'start')} at the start, "
             f"{_load(prov, 'end')} at the end.", "", "Goals:", ""]
    for name, goal in data["goals"].items():
        measured = goal["measured"]
        shown = (", ".join(f"{k} {_num(v, 5)}" for k, v in measured.items()) if isinstance(measured, dict)
                 else _num(measured, 5))
        lines.append(f"- {goal['statement']}: {_goal(goal)} (measured {shown}).")
    lines.append("")
    for part in (_reference, _detection, _throughput, _proofs, _scaling, _check_goals):
        lines += part(data)
    return "\n".join(lines).rstrip() + "\n"
