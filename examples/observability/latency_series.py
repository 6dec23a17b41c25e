#!/usr/bin/env python3
"""Writes gpuspans.latency.test.yml: the latency alerts of gpuspans.rules.yml
against noisy one-minute p99s, as a lane's summary
(gpuspans_lane_recent_duration_seconds{quantile="0.99"}) gives them to a
Prometheus that scrapes and evaluates once a minute; and the cases of
evaluation intervals (below) in it and in gpuspans.latency.5s.test.yml and
gpuspans.latency.15s.test.yml, scraped and evaluated every 5 and 15 s.
Each case is a lane of its own, 300us with +-10% uniform noise every
minute (a fixed pseudo-random sequence, so the test is the same every
run):

  old     26 hours, then +30% for 8 hours, then back: fires within 40
          minutes, firing in at least 95% of the 8 hours' minutes,
          resolved after;
  young   3 hours, then +30% for 8 hours (no yesterday yet): the same;
  peak    a daily cycle of +-25%, peak at 06:00, two days, then +30% from
          the third day's peak for 8 hours: the same;
  cycle   three days of the cycle: never fires;
  step15  26 hours, then +15% for 8 hours: never fires;
  spike   26 hours, then twice as slow for 20 minutes: never fires;
  idle    26 hours, then no spans for 2 hours, then spans again: never
          fires;
  drift   a day, then +2% an hour for a day: GpuspansLaneLatencyDrift fires
          before the drift ends; never on the cycle.

At each evaluation interval (5 s, 15 s, 1 min), the guards in minutes:

  warm2, warm3, warm6  yesterday's hours, and 90 minutes today, idle an
          hour, then twice as slow for 2, 3 or 6 minutes (a warm-up after a
          restart), then as before: never fire (a baseline throughout);
  reg     yesterday's hours, then 100 minutes today, then +30%: silent 19
          minutes in, firing 22 and 90 minutes in;
  young5  yesterday's hours, then idle until it comes back 30% slower for
          good (a series 5 minutes old with yesterday's baseline): silent 5
          and 18 minutes in, firing 22 minutes in;
  exact   (a test of its own) 2 hours of exactly 300us, then exactly +30%:
          the alert's summary counts the minutes, 26 at 25 minutes in.

Each of these lanes is a job of one instance: GpuspansLaneLatencyRegressionFleet
is held to the same (firing for old, young, peak, reg and young5; silent
on the rest).

gpuspans.latency.rollout.test.yml and its 5s and 15s twins: deploys of a
job's lane (GpuspansLaneLatencyRegressionFleet across instances), 8 pods of
one GPU each from minute 0, replaced from minute 75 by 8 new pods (new
instance and pod labels), each twice as slow for its first 2 to 6 minutes,
each pod with noise of its own:

  roll30      a rolling deploy, 2 pods at a time, 5 minutes a step (3
              minutes of overlap), every new pod +30%: the fleet alert
              silent 27 minutes after the first new pod, firing 32 minutes
              after and while it lasts, the per-instance alert never;
  recreate30  every old pod stopped at once, the new ones 3 minutes later,
              +30%: silent 19 minutes in, firing 22 minutes in;
  roll, recreate  the same with no change: never fire, a baseline
              throughout;
  exact, same  (a test of its own) 4 pods of exactly 300us replaced by 4
              of exactly +30%, model m1; 4 pods that stay, exactly +30%:
              the fleet alert's annotations count the minutes (26), the
              instances (4) and the new ones (4 and 0).

And at 1 min only (the same rules; nothing in them depends on the
interval):

  roll30      rolled back at minute 135: resolved within 45 minutes;
  one30       one pod of eight replaced, +30%: neither alert fires (the
              median moves a few percent; the new instance has no history,
              and its own baseline from 50 minutes on is its slower level);
  inplace30   one pod of eight restarted in place (its labels kept), +30%:
              the per-instance alert fires 22 minutes after it is back, the
              fleet alert never;
  models      two models (model_name m1 and m2, m2 3 times m1's time) in
              one job, 4 pods of 2 GPUs each, rolled: m1 +30%, m2 not: each
              has its own baseline; only m1 fires.

    python3 latency_series.py          # writes the tests beside this file
    python3 latency_series.py --check  # fails if a committed one differs
"""

import math
import os
import random
import sys

BASE = 300e-6
DAY = 1440
HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "gpuspans.latency.test.yml")


def series(lane, n, factor, seed):
    """n one-minute p99s: BASE * factor(t) * (1 +- 10%), None: no spans."""
    rng = random.Random(seed)
    vals = []
    for t in range(n):
        f = factor(t)
        noise = 1 + rng.uniform(-0.1, 0.1)
        vals.append("_" if f is None else f"{BASE * f * noise:.4g}")
    return lane, vals


def cycle(t):
    return 1 + 0.25 * math.sin(2 * math.pi * (t - 360 + DAY / 4) / DAY)  # peak at minute 360 of each day


REG = 1560  # a regression's first minute on a series 26 hours old
CASES = [
    series("old", REG + 480 + 60, lambda t: 1.3 if REG <= t < REG + 480 else 1, 1),
    series("young", 180 + 480 + 60, lambda t: 1.3 if 180 <= t < 180 + 480 else 1, 2),
    series("peak", 3240 + 480 + 60, lambda t: cycle(t) * (1.3 if 3240 <= t < 3240 + 480 else 1), 3),
    series("cycle", 3 * DAY, cycle, 4),
    series("step15", REG + 480, lambda t: 1.15 if t >= REG else 1, 5),
    series("spike", REG + 140, lambda t: 2 if REG <= t < REG + 20 else 1, 6),
    series("idle", REG + 240, lambda t: None if REG <= t < REG + 120 else 1, 7),
    series("drift", 2 * DAY, lambda t: 1.02 ** ((t - DAY) / 60) if t >= DAY else 1, 8),
]


def alert_labels(name, lane, metric=""):
    """The labels of name's firing alert for lane: the fleet alert's have no
    instance and device."""
    where = "" if name == FLEET else 'instance="i",device="0",'
    return f'{metric}{{alertname="{name}",alertstate="firing",severity="ticket",job="g",{where}lane="{lane}"}}'


def series_lines(out, cases, values):
    """Appends the input series of cases, (lane, vals), each vals written
    by values."""
    labelled_lines(out, [(f'job="g",instance="i",device="0",lane="{lane}"', vals) for lane, vals in cases], values)


def labelled_lines(out, cases, values):
    """Appends the input series of cases, (labels, vals): each a lane's
    one-minute p99 with those labels, vals written by values."""
    for labels, vals in cases:
        out.append(f"      - series: 'gpuspans_lane_recent_duration_seconds{{{labels},quantile=\"0.99\"}}'")
        out.append(f"        values: '{values(vals)}'")


def checker(out):
    """A function that appends a promql_expr_test: expr at minute, with its
    expected samples, (labels, value)."""
    def check(expr, minute, samples):
        out.append(f"      - expr: '{expr}'")
        out.append(f"        eval_time: {minute}m")
        if not samples:
            out.append("        exp_samples: []")
            return
        out.append("        exp_samples:")
        for labels, value in samples:
            out.append(f"          - labels: '{labels}'")
            out.append(f"            value: {value}")
    return check


def header(name, interval):
    """The head of the promtool test file name of the rules, evaluated every
    interval: its tests follow."""
    return [
        "# Generated by latency_series.py (its docstring has the cases); do not edit.",
        f"# Run from this directory: promtool test rules {name}",
        "rule_files:",
        "  - gpuspans.rules.yml",
        "",
        f"evaluation_interval: {interval}",
        "",
        "tests:",
    ]


def test_file():
    out = header("gpuspans.latency.test.yml", "1m") + [
        "  - interval: 1m",
        "    input_series:",
    ]
    series_lines(out, CASES, " ".join)
    out.append("    promql_expr_test:")
    reg = "GpuspansLaneLatencyRegression"
    check = checker(out)

    # The fleet alert the same: each lane is a job of one instance.
    for lane, start in [("old", REG), ("young", 180), ("peak", 3240)]:
        for name in (reg, FLEET):
            firing = f'ALERTS{{alertname="{name}",alertstate="firing",lane="{lane}"}}'
            # Not before the regression; firing 40 minutes in.
            check(f'ALERTS{{alertname="{name}",lane="{lane}"}}', start - 1, [])
            check(firing, start + 40, [(alert_labels(name, lane, "ALERTS"), 1)])
            # Firing in at least 95% of the 480 minutes (456).
            check(f"count_over_time({firing}[8h]) >= bool 456", start + 479, [(alert_labels(name, lane), 1)])
            # Resolved within 45 minutes of its end, where the series goes on.
            check(f'ALERTS{{alertname="{name}",lane="{lane}"}}', start + 480 + 45, [])
    quiet = "cycle|step15|spike|idle"
    check(f'count_over_time(ALERTS{{alertname=~"GpuspansLaneLatency.*",alertstate="firing",lane=~"{quiet}"}}[3d])',
          3 * DAY - 1, [])
    # The drift: the drift alert fires before the drift ends.
    drift = "GpuspansLaneLatencyDrift"
    check(f'count_over_time(ALERTS{{alertname="{drift}",alertstate="firing",lane="drift"}}[1d]) >= bool 1',
          2 * DAY - 1, [(alert_labels(drift, "drift"), 1)])
    check(f'count_over_time(ALERTS{{alertname="{drift}",alertstate="firing",lane=~"old|cycle|step15|spike|idle"}}[3d])',
          3 * DAY - 1, [])
    out += interval_tests("1m", 1)
    return "\n".join(out) + "\n"


# The interval cases run yesterday (minutes 0-150: the hour around this
# time yesterday for the minutes tested) and today from minute 1350 on,
# idle between: an evaluation with no spans costs promtool little, and
# these run every 5 s.
START = 1500  # the warm-ups' and young5's first minute back
IV_REG = 1450  # reg's first slow minute
IV_END = 1545  # the interval cases' length, minutes


def today(f):
    """f's factor where the lane runs: yesterday's 150 minutes and from
    minute 1350 on; idle between."""
    return lambda t: f(t) if t < 150 or t >= 1350 else None


def warm(w):
    return today(lambda t: None if 1440 <= t < START else 2 if START <= t < START + w else 1)


IV_CASES = [
    series("warm2", IV_END, warm(2), 11),
    series("warm3", IV_END, warm(3), 12),
    series("warm6", IV_END, warm(6), 13),
    series("reg", IV_END, today(lambda t: 1.3 if t >= IV_REG else 1), 14),
    series("young5", IV_END, lambda t: 1 if t < 150 else 1.3 if t >= START else None, 15),
]


def scraped(vals, per_minute):
    """One-minute values as a scrape every 60/per_minute s reads them: each
    repeated, a staleness marker where the lane stops."""
    out, prev = [], None
    for v in vals:
        if v == "_":
            n = per_minute
            if prev not in (None, "_"):
                out.append("stale")
                n -= 1
            if n:
                out.append(f"_x{n}")
        else:
            out.append(v if per_minute == 1 else f"{v}x{per_minute - 1}")
        prev = v
    return " ".join(out)


def interval_tests(interval, per_minute):
    """The test groups of the interval cases, scraped per_minute times a
    minute: lines of a test file's tests."""
    out = [f"  - interval: {interval}", "    input_series:"]
    series_lines(out, IV_CASES, lambda vals: scraped(vals, per_minute))
    out.append("    promql_expr_test:")
    reg = "GpuspansLaneLatencyRegression"
    check = checker(out)

    def firing(lane, name=reg):
        return f'ALERTS{{alertname="{name}",alertstate="firing",lane="{lane}"}}'

    check(f'count_over_time(ALERTS{{alertname=~"GpuspansLaneLatency.*",lane=~"warm.*"}}[{IV_END - START}m])', IV_END - 1, [])
    # The warm-ups had a baseline throughout: silent by the guard, not for
    # want of one.
    for m in (0, 10, 20, 30):
        check('count(gpuspans:lane_duration_seconds:p99_baseline{lane=~"warm.*"})', START + m, [("{}", 3)])
    # The fleet alert the same (a job of one instance).
    for name in (reg, FLEET):
        check(f'ALERTS{{alertname="{name}",lane="reg"}}', IV_REG + 19, [])
        check(firing("reg", name), IV_REG + 22, [(alert_labels(name, "reg", "ALERTS"), 1)])
        check(firing("reg", name), IV_REG + 90, [(alert_labels(name, "reg", "ALERTS"), 1)])
    check('count(gpuspans:lane_duration_seconds:p99_baseline{lane="young5"})', START + 1, [("{}", 1)])
    check('count(lane:gpuspans_lane_duration_seconds:p99_baseline{lane="young5"})', START + 1, [("{}", 1)])
    for name in (reg, FLEET):
        for m in (5, 18):
            check(f'ALERTS{{alertname="{name}",lane="young5"}}', START + m, [])
        check(firing("young5", name), START + 22, [(alert_labels(name, "young5", "ALERTS"), 1)])

    # exact: no noise, so the summary's count of minutes is known.
    exact = ["0.0003"] * 120 + ["0.00039"] * 40
    out += [f"  - interval: {interval}", "    input_series:",
            "      - series: 'gpuspans_lane_recent_duration_seconds{job=\"g\",instance=\"i\",device=\"0\",lane=\"exact\",quantile=\"0.99\"}'",
            f"        values: '{scraped(exact, per_minute)}'",
            "    alert_rule_test:",
            f"      - alertname: {reg}",
            "        eval_time: 140m",
            "        exp_alerts: []",
            f"      - alertname: {reg}",
            "        eval_time: 145m",
            "        exp_alerts:",
            "          - exp_labels:",
            "              severity: ticket",
            "              job: g",
            "              instance: i",
            "              device: \"0\"",
            "              lane: exact",
            "            exp_annotations:",
            "              summary: gpuspans lane exact p99 over 1.15 times its baseline for 26 minutes of the last 6 hours, over 1.30 times in 90% of the last 24, on i device 0",
            "              description: \"The lane's GPU time per step (its one-minute p99, gpuspans:lane_duration_seconds:p99_1m) has been over 15% above its baseline (gpuspans:lane_duration_seconds:p99_baseline: the higher of its level an hour before and at this time yesterday) in 90% of the minutes of the last 24 in which it ran (20 at least). Look for a deploy, a driver or clock change, a slower GPU (compare its peers), or a heavier batch mix; gpuspans:kernel_duration_seconds:p99_1m shows which kernels moved.\"",
            "              runbook_url: \"https://github.com/gpuspans/gpuspans/blob/main/docs/alerts.md#gpuspanslanelatencyregression\""]
    return out


def interval_file(interval, per_minute):
    return "\n".join(header(f"gpuspans.latency.{interval}.test.yml", interval) + interval_tests(interval, per_minute)) + "\n"


# Rollouts: a job's lane served by 8 pods (one GPU each) from minute 0,
# then a deploy that replaces them: new pods, new instance and pod labels,
# no history of their own. Each new pod warms up twice as slow for 2 to 6
# minutes after it starts. The fleet's baseline (the hour that ended 30
# minutes ago) is there from minute 50.
RO = 75  # the deploy's first minute
RO_END = {"1m": RO + 130, "15s": RO + 60, "5s": RO + 60}  # each file's length, minutes
ROLLBACK = RO + 60  # roll30's rollback (1m only): a third deploy, back to the old speed
WARM = [2, 3, 6, 4, 2, 5, 3, 6]  # each new pod's warm-up, minutes
FLEET = "GpuspansLaneLatencyRegressionFleet"


def rolling(k):
    """A rolling deploy, 2 pods at a time, 5 minutes a step: new pod k's
    first minute, and old pod k's first minute gone (3 minutes of overlap,
    while the new one warms up)."""
    start = RO + 5 * (k // 2)
    return start, start + 3


def recreate(k):
    """A deploy that stops every old pod at once and starts the new ones 3
    minutes later."""
    return RO + 3, RO


def pod(start, stop, factor, warm=0):
    """A pod's factor: None outside [start, stop), twice as slow for its
    first warm minutes, factor after."""
    def f(t):
        if t < start or t >= stop:
            return None
        return 2 if t < start + warm else factor
    return f


def fleet(n, lane, schedule, factor, pods=8, base=1, devices=1, extra="", rollback=False, builds=False):
    """A lane served by pods old pods, base times BASE, and then, from the
    deploy schedule(k) gives, by as many new ones factor times as slow; with
    rollback a third deploy, the same from minute ROLLBACK, brings the old
    speed back; with builds each generation carries its own build label
    (v1, v2, v3), as an engine's version label changes at a deploy.
    (labels, vals) of n minutes for each pod's devices."""
    out = []
    for k in range(pods):
        start, stop = schedule(k)
        gens = [("o", 0, stop, base, 0), ("n", start, n, base * factor, WARM[k])]
        if rollback:
            back, gone = (t + ROLLBACK - RO for t in schedule(k))
            gens[1] = ("n", start, gone, base * factor, WARM[k])
            gens.append(("b", back, n, base, WARM[k]))
        for gen, t0, t1, f, w in gens:
            build = f',build="v{"onb".index(gen) + 1}"' if builds else ""
            for d in range(devices):
                labels = (f'job="g",instance="{lane}-{gen}{k}:9464",pod="{lane}-{gen}{k}",device="{d}",'
                          f'lane="{lane}"{extra}{build}')
                out.append(series(labels, n, pod(t0, t1, f, w), labels))
    return out


def one_pod(n, lane, keep):
    """8 pods; the deploy replaces pod 5 only, 30% slower after a 3-minute
    warm-up: a new pod started at RO, the old one gone 3 minutes later; or,
    keep, a restart in place (its instance and pod labels kept), gone at RO
    and back 2 minutes later."""
    out = []
    for k in range(8):
        labels = f'job="g",instance="{lane}-o{k}:9464",pod="{lane}-o{k}",device="0",lane="{lane}"'
        if k != 5:
            out.append(series(labels, n, pod(0, n, 1), labels))
        elif keep:
            out.append(series(labels, n, lambda t: 1 if t < RO else pod(RO + 2, n, 1.3, 3)(t), labels))
        else:
            new = labels.replace("-o5", "-n5")
            out += [series(labels, n, pod(0, RO + 3, 1), labels), series(new, n, pod(RO, n, 1.3, 3), new)]
    return out


def fleet_alert(lane, extra=""):
    return f'ALERTS{{alertname="{FLEET}",alertstate="firing",severity="ticket",job="g",lane="{lane}"{extra}}}'


def rollout_tests(interval, per_minute):
    """The rollout cases' test groups, scraped per_minute times a minute:
    lines of a test file's tests. Every interval has the deploys of every
    pod, 30% slower and not; the one-pod deploys, two models and a rollback
    (the same rules, nothing that depends on the interval) are at 1m only."""
    n = RO_END[interval]
    full = interval == "1m"
    cases = (fleet(n, "roll30", rolling, 1.3, rollback=full) + fleet(n, "roll", rolling, 1)
             + fleet(n, "recreate30", recreate, 1.3) + fleet(n, "recreate", recreate, 1))
    if full:
        cases += (one_pod(n, "one30", False) + one_pod(n, "inplace30", True)
                  + fleet(n, "build30", rolling, 1.3, builds=True)
                  + fleet(n, "models", rolling, 1.3, pods=4, devices=2, extra=',model_name="m1"')
                  + fleet(n, "models", rolling, 1, pods=4, base=3, devices=2, extra=',model_name="m2"'))
    out = [f"  - interval: {interval}", "    input_series:"]
    labelled_lines(out, cases, lambda vals: scraped(vals, per_minute))
    out.append("    promql_expr_test:")
    check = checker(out)

    def alerts(lanes, name="GpuspansLaneLatency.*"):
        return f'ALERTS{{alertname=~"{name}",lane=~"{lanes}"}}'

    # Every pod replaced, 30% slower: firing by 32 minutes after a rolling
    # deploy's first new pod (30 to 31), 22 after a recreate's start, for
    # as long as it lasts; the per-instance alert never (no history).
    for lane, silent, fires in [("roll30", 27, 32), ("recreate30", 19, 22)]:
        check(alerts(lane), RO + silent, [])
        for m in (fires, n - RO - 1 if not full else ROLLBACK - RO):
            check(f'ALERTS{{alertname="{FLEET}",alertstate="firing",lane="{lane}"}}', RO + m, [(fleet_alert(lane), 1)])
    check(f'count_over_time({alerts("roll30|recreate30", "GpuspansLaneLatencyRegression")}[{n}m])', n - 1, [])
    # The same deploys with no change: silent, with a baseline throughout.
    check(f"count_over_time({alerts('roll|recreate')}[{n}m])", n - 1, [])
    for m in range(0, n - RO, 10):
        check('count(lane:gpuspans_lane_duration_seconds:p99_baseline{lane=~"roll|recreate"})', RO + m, [("{}", 2)])
    if not full:
        return out + exact_fleet_test(interval, per_minute)

    # A rollback resolves it.
    check(alerts("roll30"), ROLLBACK + 45, [])
    # One pod of eight replaced, 30% slower: the fleet's median hardly
    # moves; the new instance has no history, so the per-instance alert has
    # no baseline for 50 minutes, then its own slow level: neither fires.
    # Restarted in place (its labels kept), the per-instance alert fires 22
    # minutes after it is back; the fleet's stays silent.
    check(f"count_over_time({alerts('one30')}[{n}m])", n - 1, [])
    new = 'gpuspans:lane_duration_seconds:p99_baseline{instance="one30-n5:9464"}'
    check(f"count({new})", RO + 48, [])
    check(f"count({new})", RO + 52, [("{}", 1)])
    check(alerts("inplace30", "GpuspansLaneLatencyRegression"), RO + 20, [])
    check('ALERTS{alertname="GpuspansLaneLatencyRegression",alertstate="firing",lane="inplace30"}', RO + 24,
          [('ALERTS{alertname="GpuspansLaneLatencyRegression",alertstate="firing",severity="ticket",job="g",'
            'instance="inplace30-o5:9464",pod="inplace30-o5",device="0",lane="inplace30"}', 1)])
    check(f"count_over_time({alerts('inplace30', FLEET)}[{n}m])", n - 1, [])
    # Two models in one job, each 4 pods of 2 GPUs, m2 3 times m1's time:
    # each model its own fleet series and baseline; m1's deploy is 30%
    # slower, m2's is not: only m1 fires.
    check('count without (job, lane) (lane:gpuspans_lane_duration_seconds:p99_baseline{lane="models"})', RO,
          [('{model_name="m1"}', 1), ('{model_name="m2"}', 1)])
    check(f'ALERTS{{alertname="{FLEET}",alertstate="firing",lane="models"}}', RO + 30,
          [(fleet_alert("models", ',model_name="m1"'), 1)])
    check(f'count_over_time(ALERTS{{lane="models",model_name="m2"}}[{n}m])', n - 1, [])
    # A build label that changes at the deploy (v1 before, v2 after) splits
    # no baseline: the fleet's series drop it, and the alert fires as for
    # roll30.
    check(f'ALERTS{{alertname="{FLEET}",alertstate="firing",lane="build30"}}', RO + 32, [(fleet_alert("build30"), 1)])
    return out + exact_fleet_test(interval, per_minute)


def exact_fleet_test(interval, per_minute):
    """A test group of its own, no noise, so the fleet alert's annotations
    are known: lane exact (model m1), 4 pods at exactly 300us for 2 hours,
    then 4 new ones at exactly +30%; lane same, 4 pods that stay, exactly
    +30% from minute 120 (no deploy)."""
    out = [f"  - interval: {interval}", "    input_series:"]
    cases = []
    for lane, gen, f in (("exact", "a", lambda t: 1 if t < 120 else None),
                         ("exact", "b", lambda t: 1.3 if t >= 120 else None),
                         ("same", "c", lambda t: 1 if t < 120 else 1.3)):
        for k in range(4):
            labels = f'job="g",instance="{gen}{k}:9464",pod="{gen}{k}",device="0",lane="{lane}"'
            if lane == "exact":
                labels += ',model_name="m1"'
            cases.append((labels, ["_" if f(t) is None else f"{BASE * f(t):.4g}" for t in range(160)]))
    labelled_lines(out, cases, lambda vals: scraped(vals, per_minute))
    out += ["    alert_rule_test:",
            f"      - alertname: {FLEET}",
            "        eval_time: 140m",
            "        exp_alerts: []",
            f"      - alertname: {FLEET}",
            "        eval_time: 145m",
            "        exp_alerts:"]
    for lane, labels, others, new, look in [
            ("exact", ["model_name: m1"], " (model_name=m1)", 4,
             ": a deploy? Look at what it changed (image, engine version or flags, batch limits, driver)"),
            ("same", [], "", 0, ": look for a driver or clock change, or a heavier batch mix")]:
        out += ["          - exp_labels:",
                "              severity: ticket",
                "              job: g",
                f"              lane: {lane}"]
        out += [f"              {label}" for label in labels]
        out += ["            exp_annotations:",
                f"              summary: 'gpuspans lane {lane} of job g{others}: the median p99 of its instances over 1.15"
                " times its baseline for 26 minutes of the last 6 hours, over 1.30 times in 90% of the last 24'",
                "              description: \"The lane's GPU time per step across its job's instances and devices"
                " (lane:gpuspans_lane_duration_seconds:p99_1m, the median of their one-minute p99s) has been over"
                " 15% above its baseline (lane:gpuspans_lane_duration_seconds:p99_baseline: the higher of its level"
                " an hour before and at this time yesterday, whichever pods served it then) in 90% of the minutes of"
                " the last 24 in which it ran (20 at least), 1.30 times in the median one. 4 instances serve it now,"
                f" {new} of them new since the hour that ended 30 minutes ago{look}; gpuspans:kernel_duration_seconds:"
                "p99_1m shows which kernels moved. GpuspansLaneLatencyRegression compares each instance with its own"
                " history.\"",
                "              runbook_url: \"https://github.com/gpuspans/gpuspans/blob/main/docs/alerts.md"
                "#gpuspanslanelatencyregressionfleet\""]
    return out


def rollout_file(interval, per_minute):
    name = "gpuspans.latency.rollout" + ("" if interval == "1m" else "." + interval) + ".test.yml"
    return "\n".join(header(name, interval) + rollout_tests(interval, per_minute)) + "\n"


def files():
    """The test files, by path."""
    return {
        OUT: test_file(),
        os.path.join(HERE, "gpuspans.latency.5s.test.yml"): interval_file("5s", 12),
        os.path.join(HERE, "gpuspans.latency.15s.test.yml"): interval_file("15s", 4),
        os.path.join(HERE, "gpuspans.latency.rollout.test.yml"): rollout_file("1m", 1),
        os.path.join(HERE, "gpuspans.latency.rollout.5s.test.yml"): rollout_file("5s", 12),
        os.path.join(HERE, "gpuspans.latency.rollout.15s.test.yml"): rollout_file("15s", 4),
    }


def main(argv):
    for path, text in files().items():
        if argv[1:] == ["--check"]:
            with open(path) as f:
                if f.read() != text:
                    print(f"{path} is not what latency_series.py writes: run it", file=sys.stderr)
                    return 1
            continue
        with open(path, "w") as f:
            f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
