#!/usr/bin/env python3
"""report.py: merges what bench/run.sh measured into one markdown table and
one raw JSON file.

Reads, from --dir: status.tsv (one line per step: name, exit code, seconds,
time limit, command), machine.tsv (key, value), driver_bench.json,
go-<section>.json, peers.json and the steps' logs. Every figure is put
against the raw driver floor of the same run; a part that is missing or
failed gets a row that says "FAILED: <why>", and the rest still render.
Standard library only.
"""

import argparse
import json
import os
import sys
import traceback

TARGET_SPAN_RATIO = 1.15  # the Go path per span, harvest included, against the floor
TARGET_ACCURACY_NS = 2000  # at spans of 100 us and more
TARGET_HARVEST_MAX_NS = 1e6  # BeginStep while a 50 ms kernel runs: a wait would cost ~50 ms

GO_SECTIONS = ["overhead", "disabled", "accuracy", "safety", "multigpu", "ceiling", "harvestwait", "harvest"]


def load_json(path):
    try:
        with open(path) as f:
            return json.load(f), None
    except FileNotFoundError:
        return None, "no result file"
    except Exception as e:  # noqa: BLE001
        return None, "unreadable result (%s)" % e


def read_tsv(path):
    rows = []
    try:
        with open(path) as f:
            for line in f:
                line = line.rstrip("\n")
                if line:
                    rows.append(line.split("\t"))
    except OSError:
        pass
    return rows


def last_line(path):
    try:
        with open(path, errors="replace") as f:
            lines = [ln.strip() for ln in f if ln.strip()]
        return lines[-1][:200] if lines else ""
    except OSError:
        return ""


def ns(x):
    """A duration in ns, in readable units."""
    if x is None:
        return "-"
    a = abs(x)
    if a < 10000:
        return "%.0f ns" % x
    if a < 1e6:
        return "%.1f us" % (x / 1e3)
    return "%.2f ms" % (x / 1e6)


def us(x):
    return "-" if x is None else "%.2f us" % (x / 1e3)


def ratio(a, b):
    if a is None or not b:
        return None
    return a / b


def rx(r):
    return "-" if r is None else "%.2fx" % r


def against(r, target):
    """The verdict of ratio r against a target ratio."""
    if r <= target:
        return "met: %.2fx <= %.2gx" % (r, target)
    return "missed by %.0f%%: %.2fx > %.2gx" % ((r / target - 1) * 100, r, target)


def cell(s):
    return str(s).replace("|", "\\|").replace("\n", " ")


class Report:
    def __init__(self, d):
        self.dir = d
        self.rows = []  # dicts: what, result, reference, ratio, verdict, notes
        self.details = []  # markdown blocks
        self.status = {}
        for r in read_tsv(os.path.join(d, "status.tsv")):
            if len(r) >= 2:
                self.status[r[0]] = {"rc": r[1], "seconds": r[2] if len(r) > 2 else "",
                                     "limit": r[3] if len(r) > 3 else "", "command": r[4] if len(r) > 4 else ""}
        self.machine = {}
        for r in read_tsv(os.path.join(d, "machine.tsv")):
            if len(r) >= 2:
                self.machine[r[0]] = r[1]
        self.db, self.db_err = load_json(os.path.join(d, "driver_bench.json"))
        self.go = {}
        for s in GO_SECTIONS:
            self.go[s] = load_json(os.path.join(d, "go-%s.json" % s))
        self.peers, self.peers_err = load_json(os.path.join(d, "peers.json"))

    def add(self, what, result="-", reference="-", r=None, verdict="info", notes=""):
        self.rows.append({"what": what, "result": result, "reference": reference,
                          "ratio": r if isinstance(r, str) else rx(r), "verdict": verdict, "notes": notes})

    def failure(self, step, doc, err):
        """Why a step has no usable result, or None when it has one."""
        st = self.status.get(step)
        log = os.path.join(self.dir, step + ".log")
        if st is not None:
            rc = st["rc"]
            if rc == "skipped":
                return "FAILED: not run, the bench's time budget was spent"
            if rc in ("124", "137"):
                return "FAILED: timed out after %s s (limit %s s)" % (st["seconds"], st["limit"])
            if rc == "127":
                return "FAILED: binary or interpreter not found: %s" % (last_line(log) or st["command"])
        if doc is None:
            why = err or "no result"
            if st is not None:
                why += " (exit %s)" % st["rc"]
            tail = last_line(log)
            return "FAILED: %s%s" % (why, ": " + tail if tail else "")
        if doc.get("ok") is False:
            return "FAILED: %s" % (doc.get("error") or "section failed")
        return None

    # --- the floor ----------------------------------------------------------

    def floor_ns(self):
        try:
            return float(self.db["floor"]["span_ns"]) or None
        except Exception:  # noqa: BLE001
            return None

    def floor_threads_ns(self, threads):
        """The floor with records made from `threads` threads at once (summed
        host time) and one harvesting thread, when driver_bench measured it."""
        try:
            for r in self.db.get("rows", []):
                if r["id"] == "record_%dthreads" % threads:
                    return float(r["raw_ns"]) + float(self.db["floor"]["harvest_ns"])
        except Exception:  # noqa: BLE001
            pass
        return None

    def floor_rows(self):
        f = self.failure("driver_bench", self.db, self.db_err)
        what = "Floor: raw driver span, C (2 cuEventRecord + cuEventQuery + cuEventElapsedTime)"
        if f:
            self.add(what, verdict=f)
            return
        db = self.db
        fl, lib = db["floor"], db["lib"]
        self.add(what, ns(fl["span_ns"]), "-", 1.0, "reference",
                 "record pair %s + query and elapsed %s; best of %d, %d spans" % (
                     ns(fl["record_ns"]), ns(fl["harvest_ns"]), db.get("repeats", 0), db.get("spans", 0)))
        self.add("gpuspans C core span, C (gs_pool_record_begin/end + one batched gs_pool_harvest)",
                 ns(lib["span_ns"]), ns(fl["span_ns"]), ratio(lib["span_ns"], fl["span_ns"]), "info",
                 "record pair %s, harvest %s per span" % (ns(lib["record_ns"]), ns(lib["harvest_ns"])))
        self.add("Launch of an empty kernel, C: alone / inside a raw span",
                 "%s / %s" % (ns(db.get("launch_only_ns")), ns(fl.get("launch_in_span_ns"))), "-", None, "info")
        lines = ["| operation | driver | gpuspans | ratio |", "|---|---:|---:|---:|"]
        for r in db.get("rows", []):
            lines.append("| %s | %s | %s | %s |" % (r["what"], ns(r["raw_ns"]), ns(r["lib_ns"]), rx(ratio(r["lib_ns"], r["raw_ns"]))))
        self.details.append(("driver_bench: raw driver against the C core, ns per span on the host", "\n".join(lines)))

    # --- Go sections --------------------------------------------------------

    def go_result(self, name, what):
        doc, err = self.go[name]
        f = self.failure("go-" + name, doc, err)
        if f:
            self.add(what, verdict=f)
            # A section that failed part-way still shows what it measured.
            if doc is not None and doc.get("result"):
                return doc["result"]
            return None
        if doc.get("skipped"):
            self.add(what, verdict="skipped: " + doc["skipped"])
            return None
        if doc.get("fake"):
            self.add("NOTE: %s ran on the fake driver: its numbers mean nothing" % name, verdict="info")
        return doc.get("result") or {}

    def overhead_rows(self):
        res = self.go_result("overhead", "Go path per span (hub)")
        if res is None:
            return
        floor = self.floor_ns()
        lines = ["| kernel spans/step | goroutines | steps x repeats | launch only: wall / host, per step | pool: wall / host | "
                 "hub: wall / host | launch/kernel | pool overhead/span | hub overhead/span (median) | hub wall/span | "
                 "BeginStep mean / max | landed / begun |",
                 "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
        for row in res.get("rows", []):
            n, g = row["kernel_spans_per_step"], row["goroutines"]
            hub = row["hub_ns_per_span"]
            launch = row["launch_ns_per_kernel"]
            what = "Go path per span: %d kernel spans + 1 lane span per step, %d goroutine%s" % (n, g, "" if g == 1 else "s")
            notes = ("(hub - launch only) host time per span, harvest (BeginStep) included; median-based %s; "
                     "cuda.Pool alone %s; launch %s/kernel" % (ns(row["hub_ns_per_span_median"]), ns(row["pool_ns_per_span"]), ns(launch)))
            if g > 1:
                notes += "; host time summed over the goroutines; the step's wall time grew by %s per span" % ns(
                    row.get("hub_wall_ns_per_span"))
            lost = row.get("errored", 0) + row.get("dropped_slot_busy", 0) + row.get("dropped_capturing", 0)
            if lost or row.get("landed") != row.get("begun"):
                notes += "; SPANS LOST: landed %s of %s begun, errored %s, dropped %s" % (
                    row.get("landed"), row.get("begun"), row.get("errored"), lost - row.get("errored", 0))
            if floor:
                r = hub / floor
                lr = (launch + hub) / (launch + floor)
                notes += "; (launch+span)/(launch+floor) %.2fx; abs. over floor %+.0f ns" % (lr, hub - floor)
                if r <= TARGET_SPAN_RATIO:
                    verdict = "met: %.2fx <= %.2fx" % (r, TARGET_SPAN_RATIO)
                else:
                    verdict = "missed by %.0f%%: %.2fx > %.2fx" % ((r / TARGET_SPAN_RATIO - 1) * 100, r, TARGET_SPAN_RATIO)
                floor_mt = self.floor_threads_ns(g) if g > 1 else None
                if floor_mt:
                    # The driver serialises records from concurrent threads:
                    # the fair reference is the floor under the same
                    # concurrency, measured by driver_bench in the same run.
                    rm = hub / floor_mt
                    notes += "; floor with %d recording threads %s, ratio to it %.2fx" % (g, ns(floor_mt), rm)
                    verdict += "; against the %d-thread floor: %.2fx (%s)" % (
                        g, rm, "met" if rm <= TARGET_SPAN_RATIO else "missed")
                if lost:
                    verdict = "missed: spans were lost, so the cost is not comparable (%s)" % verdict
                self.add(what, ns(hub), ns(floor), r, verdict, notes)
            else:
                self.add(what, ns(hub), "no floor", "-", "FAILED: no floor to compare (driver_bench)", notes)
            v = lambda k: "%s / %s" % (ns(row[k]["step_ns_min"]), ns(row[k]["cpu_ns_min"]))  # noqa: E731
            lines.append("| %d | %d | %d x %d | %s | %s | %s | %s | %s | %s (%s) | %s | %s / %s | %d / %d |" % (
                n, g, row["steps"], row["repeats"], v("none"), v("pool"), v("hub"), ns(launch), ns(row["pool_ns_per_span"]),
                ns(hub), ns(row["hub_ns_per_span_median"]), ns(row.get("hub_wall_ns_per_span")),
                ns(row["begin_step_ns_mean"]), ns(row["begin_step_ns_max"]), row["landed"], row["begun"]))
        if res.get("truncated"):
            self.add("Go path per span: section stopped early (time budget)", verdict="info")
        self.details.append(("Go path (gpubench overhead): best of repeats; " + res.get("method", ""), "\n".join(lines)))
        # Harvest cost per step, from the same runs.
        for row in res.get("rows", []):
            if row["goroutines"] != 1:
                continue
            spans = row["kernel_spans_per_step"] + row["lane_spans_per_step"]
            per = row["harvest_ns_per_step"] / spans if spans else 0
            ref = None
            if self.db and not self.failure("driver_bench", self.db, self.db_err):
                ref = self.db["floor"]["harvest_ns"]
            self.add("Harvest cost per step: %d spans landed by each BeginStep" % spans, ns(row["harvest_ns_per_step"]),
                     ("raw query+elapsed %s/span" % ns(ref)) if ref else "-", ratio(per, ref), "info",
                     "%s per span; %.1f spans per harvest" % (ns(per), row["spans_per_harvest"]))

    def disabled_rows(self):
        res = self.go_result("disabled", "Disabled levels against no telemetry calls")
        if res is None:
            return
        v = res["variants"]
        noise = res["noise_ns_per_step"]
        micro = res.get("micro_ns", {})
        for lvl, diff, ok in (("off", res["off_minus_none_ns_per_step"], res["off_within_noise"]),
                              ("step", res["step_minus_none_ns_per_step"], res["step_within_noise"])):
            verdict = ("met: within noise" if ok else "missed: %+.0f ns/step, noise %.0f ns" % (diff, noise))
            if res.get("pools_opened") or res.get("begun"):
                verdict = "missed: the GPU was touched below Kernel (pools opened %s, spans begun %s)" % (
                    res.get("pools_opened"), res.get("begun"))
            self.add("Disabled: serving loop at Level%s vs no telemetry calls (%d kernels/step, median of %d x %d steps)" % (
                lvl.capitalize(), res["kernels_per_step"], res["repeats"], res["steps"]),
                "%+.1f ns/step" % diff, "noise %.1f ns/step (max-min, no-telemetry repeats)" % noise,
                ratio(v[lvl]["step_ns_median"], v["none"]["step_ns_median"]), verdict,
                "per step: none %s, %s %s; in a tight loop: 4 span calls %.2f ns, BeginStep %.2f ns (empty loop %.2f ns)" % (
                    ns(v["none"]["step_ns_median"]), lvl, ns(v[lvl]["step_ns_median"]),
                    micro.get("span_calls_" + lvl, 0), micro.get("begin_step_" + lvl, 0), micro.get("empty_loop", 0)))

    def accuracy_rows(self):
        res = self.go_result("accuracy", "Accuracy against the kernel's own %globaltimer")
        if res is None:
            return
        off = res.get("pool_offset_ns", 0)
        lines = ["Event offset measured by the pool when it opened (subtracted from kernel spans): %s" % us(off), "",
                 "| spin | CTAs | queue | n | kernel p50 | span p50 | err p50 | err min..max | max abs err | max abs err, uncorrected |",
                 "|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|"]
        for c in res.get("cases", []):
            judged = c["queue"] == "busy" and c["spin_ns"] >= 10000
            if judged:
                verdict = "met" if c["within_500ns"] else "missed (%s)" % us(c["abs_ns_max"])
            else:
                verdict = "info"
            what = "Accuracy: spin %s on %d CTA(s) (%s queue), n=%d" % (ns(c["spin_ns"]), c.get("ctas", 1), c["queue"], c["n"])
            result = "corrected span - kernel: p50 %s, max |err| %s (uncorrected max %s)" % (
                us(c["err_ns_p50"]), us(c["abs_ns_max"]), us(c["raw_abs_ns_max"]))
            ref = "<= 0.5 us, 10 us - 10 ms" if judged else "-"
            notes = "pool offset %s" % us(off)
            if c.get("missing"):
                notes += "; %d samples did not land" % c["missing"]
            self.add(what, result, ref, None, verdict, notes)
            lines.append("| %s | %d | %s | %d | %s | %s | %s | %s..%s | %s | %s |" % (
                ns(c["spin_ns"]), c.get("ctas", 1), c["queue"], c["n"], ns(c["kernel_ns_p50"]), ns(c["span_ns_p50"]),
                us(c["err_ns_p50"]), us(c["err_ns_min"]), us(c["err_ns_max"]), us(c["abs_ns_max"]), us(c["raw_abs_ns_max"])))
        self.add("Accuracy: kernel spans within 0.5 us of the kernel, 10 us - 10 ms (busy queue, 1 and 264 CTAs)",
                 "yes" if res.get("meets_500ns_10us_to_10ms") else "no", "<= 0.5 us", None,
                 "met" if res.get("meets_500ns_10us_to_10ms") else "missed")
        self.details.append(("Accuracy (gpubench accuracy): " + res.get("method", ""), "\n".join(lines)))

    def safety_rows(self):
        res = self.go_result("safety", "Safety: graph capture in the serving loop")
        if res is None:
            return
        for p in res.get("phases", []):
            judged = p["name"] != "lane_end_inside_capture"
            result = ("%d of %d captures invalidated (901); %d spans opened in a capture; Dropped[capturing] %d for %d refusals; "
                      "lane spans %d/%d, eager kernel spans %d/%d landed; errored %d" % (
                          p["invalidated_901"], p["captures"], p["spans_opened_in_capture"], p["dropped_capturing"],
                          p["kernel_begins_in_capture"], p["lane_spans_landed"], p["steps"], p["eager_kernel_spans_landed"],
                          p["steps"], p["errored"]))
            if judged:
                verdict = "met" if p["ok"] else "missed"
            else:
                verdict = "info: %s" % ("no harm" if p["ok"] else "breaks captures")
            notes = p["what"]
            if p.get("first_error"):
                notes += "; first error: " + p["first_error"]
            notes += "; %d harvests (%d skipped), %d graph launches; the second goroutine's harvest calls: %d, %d of them inside a capture" % (
                p["harvests"], p["harvests_skipped"], p["graph_launches"], p.get("harvester_calls", 0),
                p.get("harvester_calls_in_capture", 0))
            self.add("Safety: %s, %d steps" % (p["name"], p["steps"]), result, "0 invalidated, 0 spans in a capture",
                     None, verdict, notes)
        self.add("Safety: %s; %s (%d harvester calls)" % (res.get("mode", ""), res.get("harvester", ""), res.get("harvester_calls", 0)),
                 verdict="met" if res.get("ok") else "missed")

    def multigpu_rows(self):
        res = self.go_result("multigpu", "Several GPUs: one hub, a pool per GPU")
        if res is None:
            return
        parts = []
        for d in res.get("per_device", []):
            parts.append("GPU %d: %d kernel spans of %s, p50 %s (min %s), lane spans %d, misattributed %d" % (
                d["device"], d["kernel_spans"], ns(d["want_ns"]), ns(d["p50_ns"]), ns(d["min_ns"]), d["lane_spans"], d["misattributed"]))
        self.add("Several GPUs: %d devices, %d steps" % (res["devices"], res["steps"]), "; ".join(parts),
                 "every span on its own device", None, "met" if res.get("ok") else "missed", res.get("method", ""))

    def ceiling_rows(self):
        res = self.go_result("ceiling", "Throughput ceiling")
        if res is None:
            return
        lines = ["| goroutines | spans/step | steps | s | begun | landed | dropped slot_busy | in flight at end | landed/s | begun/s |",
                 "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
        for run in res.get("runs", []):
            g = run.get("goroutines", 0)
            first = run.get("first_drop_spans_per_step") or 0
            at = run.get("ceiling_spans_per_step") or 0
            if at:
                result = "%.0f spans/s landed at %d spans/step, no drops" % (run.get("ceiling_landed_per_s", 0), at)
            else:
                lv = run.get("levels") or [{}]
                result = "drops from the first level (%s spans/step), %.0f spans/s landed meanwhile" % (
                    lv[0].get("spans_per_step"), lv[0].get("landed_per_s", 0))
            self.add("Throughput ceiling: %s, %d goroutine%s" % (res.get("pool", ""), g, "" if g == 1 else "s"), result,
                     "-", None, "info",
                     ("first slot_busy drops at %d spans/step" % first if first else "no drops up to the last level") +
                     "; drops are reported as " + res.get("drop_counters", ""))
            for lv in run.get("levels", []):
                lines.append("| %d | %d | %d | %.3f | %d | %d | %d | %d | %.0f | %.0f |" % (
                    g, lv["spans_per_step"], lv["steps"], lv["elapsed_s"], lv["begun"], lv["landed"], lv["dropped_slot_busy"],
                    lv.get("in_flight_at_end", 0), lv["landed_per_s"], lv["begun_per_s"]))
        self.details.append(("Throughput ceiling (gpubench ceiling): " + res.get("method", ""), "\n".join(lines)))

    def harvestwait_rows(self):
        res = self.go_result("harvestwait", "Harvest never waits")
        if res is None:
            return
        mx = res["begin_step_max_ns"]
        ok = mx <= TARGET_HARVEST_MAX_NS and res.get("kernel_still_running_at_loop_end")
        verdict = "met" if ok else "missed"
        if not res.get("kernel_still_running_at_loop_end"):
            verdict = "missed: the kernel ended before the loop did, so nothing was tested"
        self.add("Harvest never waits: BeginStep while a 50 ms kernel runs", "max %s, p99 %s, p50 %s over %d calls" % (
            ns(mx), ns(res["begin_step_p99_ns"]), ns(res["begin_step_p50_ns"]), res["begin_step_calls"]),
            "max <= 1 ms (a wait: ~50 ms)", ratio(mx, TARGET_HARVEST_MAX_NS), verdict,
            "%s; in flight during: %d, landed during: %d, landed after sync: %d; the 3 longest calls: %s" % (
                res.get("kernel", ""), res["in_flight_during"], res["landed_during"], res["landed_after_sync"],
                ", ".join(ns(x) for x in res.get("begin_step_top3_ns") or [])))

    def harvest_rows(self):
        res = self.go_result("harvest", "Harvest cost (gpubench harvest)")
        if res is None:
            return
        for row in res.get("landing", []):
            r, t = row["ratio"], row["target"]
            self.add("Landing in Go per span, start times %s: Hub.Harvest of %d done spans" % (row["starts"], row["spans"]),
                     ns(row["go_ns_per_span"]), "C core batched harvest %s" % ns(row["c_ns_per_span"]), r,
                     against(r, t),
                     "median of %d interleaved repeats, one harvest each%s" % (row["repeats"], (
                         "; the C core with start times: %s" % ns(row["c_ns_per_span_starts"])) if row.get("c_ns_per_span_starts") else ""))
        for row in res.get("begin_step", []):
            bg = row["harvester"] == "background"
            verdict = "info"
            if bg:
                verdict = ("met: p99 %s <= 5 us" if row["begin_step_p99_ns"] <= 5000 else "missed: p99 %s > 5 us") % ns(
                    row["begin_step_p99_ns"])
            self.add("BeginStep on an armed step with %d kernel spans, harvest %s" % (row["kernel_spans_per_step"], row["harvester"]),
                     "p50 %s, p99 %s, max %s" % (ns(row["begin_step_p50_ns"]), ns(row["begin_step_p99_ns"]), ns(row["begin_step_max_ns"])),
                     "p99 <= 5 us" if bg else "-", ratio(row["begin_step_p99_ns"], 5000) if bg else None, verdict,
                     "%d steps; landed %d of %d begun, dropped %d; accounting %s" % (
                         row["steps"], row["landed"], row["begun"], row["dropped"], "holds" if row["balanced"] else "BROKEN"))
        free = {r["variant"]: r for r in res.get("free_run", [])}
        fr = (self.db or {}).get("freerun") if not self.failure("driver_bench", self.db, self.db_err) else None
        for name in ("kernel", "kernel_background"):
            row = free.get(name)
            if not row:
                continue
            what = "Free-running loop (%d kernel spans + 1 lane span per step, no sync), level Kernel, harvest %s: host time added per step" % (
                res.get("free_run_kernel_spans_per_step", 0), "in BeginStep" if name == "kernel" else "in the background")
            notes = "hub %s/step against launches alone %s; harvest %s/step%s, %.1f spans landed/step, up to %d in flight, %.2f dropped/step; start times %s" % (
                ns(row["step_ns_median"]), ns(free["none"]["step_ns_median"]), ns(row["harvest_ns_per_step"]),
                " (on the harvester's goroutine)" if name != "kernel" else "", row["landed_per_step"], row["in_flight_at_loop_end"],
                row["dropped_per_step"], "placed" if row.get("start_times") else "not placed (no reader)")
            if not fr or fr.get("raw_step_ns", 0) <= fr.get("none_step_ns", 0):
                self.add(what, ns(row["added_ns"]), "no raw reference", "-", "FAILED: driver_bench has no freerun result", notes)
                continue
            raw = fr["raw_step_ns"] - fr["none_step_ns"]
            r = row["added_ns"] / raw
            notes += "; raw (driver_bench, same run): records + query/elapsed of landed spans %s/step over launches alone %s, %.1f landed/step" % (
                ns(fr["raw_step_ns"]), ns(fr["none_step_ns"]), fr.get("landed_per_step", 0))
            self.add(what, ns(row["added_ns"]), "raw records + raw harvest add %s" % ns(raw), r,
                     against(r, 1.3), notes)
        off = free.get("off")
        if off:
            self.add("Free-running loop, level Off: host time added per step", ns(off["added_ns"]), "launches alone %s" % ns(
                free["none"]["step_ns_median"]), None, "info", "the span calls at Off: one check each")
        if res.get("truncated"):
            self.add("Harvest cost: section stopped early (time budget)", verdict="info")

    # --- peers --------------------------------------------------------------

    def peers_rows(self):
        what_ev = "Peer: torch.cuda.Event pair + query + elapsed_time around x.add_(1)"
        what_pr = "Peer: torch.profiler, ProfilerActivity.CUDA (Kineto over CUPTI), same loop"
        f = self.failure("peers", self.peers, self.peers_err)
        if f:
            self.add(what_ev, verdict=f)
            self.add(what_pr, verdict=f)
            return
        p = self.peers
        if not p.get("available"):
            why = "not available: %s" % p.get("reason", "?")
            self.add(what_ev, verdict=why)
            self.add(what_pr, verdict=why + "; libcupti found: %s" % (", ".join(p.get("cupti_files", [])) or "none"))
            return
        floor = self.floor_ns()
        ver = "torch %s (CUDA %s)" % (p.get("torch"), p.get("torch_cuda"))
        ev = p.get("events")
        if not ev:
            self.add(what_ev, verdict="FAILED: no result (the script stopped before it)")
        elif not ev.get("ok"):
            self.add(what_ev, verdict="FAILED: " + ev.get("error", "?"))
        else:
            o = ev["overhead_ns_per_span"]
            self.add(what_ev, ns(o), ns(floor) if floor else "no floor", ratio(o, floor), "info",
                     "%s; launch alone %s, launch in a pair %s, pair alone %s, query+elapsed %s; median-based %s" % (
                         ver, ns(ev["launch_ns"]["min"]), ns(ev["launch_in_pair_ns"]["min"]),
                         ns(ev["record_pair_alone_ns"]["min"]), ns(ev["query_elapsed_ns"]["min"]),
                         ns(ev["overhead_ns_per_span_median"])))
        pr = p.get("profiler")
        if not pr:
            self.add(what_pr, verdict="FAILED: no result (the script stopped before it)")
        elif not pr.get("ok"):
            self.add(what_pr, verdict="FAILED: " + pr.get("error", "?") + "; libcupti found: %s" % (
                ", ".join(p.get("cupti_files", [])) or "none"))
        else:
            o = pr["overhead_ns_per_kernel"]
            self.add(what_pr, ns(o) + " per kernel (host)", ns(floor) if floor else "no floor", ratio(o, floor), "info",
                     "%s; launch alone %s, traced %s; to GPU done per kernel %s vs %s traced (%.2fx); events in the trace of %d launches: %s; "
                     "trace processing at exit %s ms; CUPTI loaded: %s" % (
                         ver, ns(pr["launch_ns"]["min"]), ns(pr["launch_profiled_ns"]["min"]),
                         ns(pr["loop_wall_ns_per_kernel"]["min"]), ns(pr["loop_wall_profiled_ns_per_kernel"]["min"]),
                         pr.get("wall_ratio", 0), pr.get("n", 0), json.dumps(pr.get("kernels_recorded_first_rep")),
                         ", ".join("%.0f" % x for x in pr.get("profile_exit_ms", [])),
                         ", ".join(pr.get("cupti_loaded", [])) or "none seen"))

    # --- output -------------------------------------------------------------

    def build(self):
        for f in (self.floor_rows, self.overhead_rows, self.peers_rows, self.disabled_rows, self.accuracy_rows,
                  self.safety_rows, self.multigpu_rows, self.ceiling_rows, self.harvestwait_rows, self.harvest_rows):
            try:
                f()
            except Exception as e:  # noqa: BLE001: one broken part must not hide the others
                self.add("report: %s" % f.__name__, verdict="FAILED: report: %s: %s" % (type(e).__name__, e),
                         notes=traceback.format_exc(limit=2).replace("\n", " "))

    def markdown(self):
        m = self.machine
        out = ["# gpuspans on the GPU: accuracy, safety and overhead against the floor and the peers", ""]
        out.append("- Machine: %s; driver %s; CUDA %s (driver), %s; CPU: %s (%s cores); %s; %s" % (
            m.get("gpu", "?"), m.get("driver", "?"), m.get("cuda", "?"), m.get("nvcc", "nvcc: -"), m.get("cpu", "?"),
            m.get("cores", "?"), m.get("kernel", "?"), m.get("glibc", "?")))
        out.append("- Command: `%s` (bench part: `%s`), commit %s, %s" % (
            m.get("command", "bash tools/gpu/run.sh"), m.get("bench_command", "bash bench/run.sh"), m.get("commit", "?"), m.get("date", "?")))
        out.append("- Figures are host time unless said otherwise. Ratios are to the raw driver floor measured in the same run "
                   "(first row). Target for the Go path: <= %.2fx the floor per span, harvest included." % TARGET_SPAN_RATIO)
        out.append("- Raw numbers: `bench-raw.json` beside this file; each step's output: `bench/*.log`.")
        verdicts = [r["verdict"] for r in self.rows]
        out.append("- Verdicts: %d met, %d missed, %d failed, %d skipped or not available." % (
            sum(v.startswith("met") for v in verdicts), sum(v.startswith("missed") for v in verdicts),
            sum(v.startswith("FAILED") for v in verdicts),
            sum(v.startswith("skipped") or v.startswith("not available") for v in verdicts)))
        out.append("")
        out.append("| measurement | result | reference | ratio | verdict | notes |")
        out.append("|---|---|---|---:|---|---|")
        for r in self.rows:
            out.append("| %s | %s | %s | %s | %s | %s |" % tuple(cell(r[k]) for k in ("what", "result", "reference", "ratio", "verdict", "notes")))
        out.append("")
        for title, body in self.details:
            out += ["## " + title, "", body, ""]
        out += ["## Steps", "", "| step | exit | seconds | limit | command |", "|---|---|---:|---:|---|"]
        for name, st in self.status.items():
            out.append("| %s | %s | %s | %s | `%s` |" % (name, st["rc"], st["seconds"], st["limit"], cell(st["command"])))
        out.append("")
        return "\n".join(out)

    def summary(self):
        """One short line per row, for a terminal."""
        def cut(x, n):
            x = str(x)
            return x if len(x) <= n else x[:n - 3] + "..."
        lines = ["%s | %s | %s | %s" % (cut(r["what"], 64), cut(r["result"], 56), r["ratio"], cut(r["verdict"], 64))
                 for r in self.rows]
        return "\n".join(lines) + "\n"

    def raw(self):
        go = {}
        for s, (doc, err) in self.go.items():
            go[s] = doc if doc is not None else {"ok": False, "error": err}
        return {"machine": self.machine, "status": self.status, "rows": self.rows,
                "driver_bench": self.db if self.db is not None else {"ok": False, "error": self.db_err},
                "go": go, "peers": self.peers if self.peers is not None else {"ok": False, "error": self.peers_err},
                "targets": {"span_ratio": TARGET_SPAN_RATIO, "accuracy_ns": TARGET_ACCURACY_NS,
                            "harvest_max_ns": TARGET_HARVEST_MAX_NS}}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dir", required=True, help="where bench/run.sh left the pieces")
    ap.add_argument("--md", required=True, help="markdown file to write")
    ap.add_argument("--json", required=True, help="raw JSON file to write")
    ap.add_argument("--summary", help="short text file to write: one line per row")
    args = ap.parse_args()
    r = Report(args.dir)
    r.build()
    with open(args.md, "w") as f:
        f.write(r.markdown())
    with open(args.json, "w") as f:
        json.dump(r.raw(), f, indent=1, sort_keys=True)
        f.write("\n")
    if args.summary:
        with open(args.summary, "w") as f:
            f.write(r.summary())
    return 0


if __name__ == "__main__":
    sys.exit(main())
