#!/usr/bin/env python3
"""`gcprof report` and `gcprof export` on hand-made verification traces.

    report_e2e.py GCPROF MAKE_REPORT_TRACE

Each format parses and carries the documented fields; JUnit follows the
common schema (testsuites > testsuite > testcase [> failure]); the HTML page
holds the SVG chart with its three curves and the budget line; exit codes are
0 (all gates pass), 1 (a gate fails), 2 (bad input); the chrome trace loads
as trace-event JSON with slices, a memory counter and step instants.
"""
import json
import os
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def run(args):
    return subprocess.run(args, capture_output=True, text=True, timeout=300)


def main():
    gcprof, maker = sys.argv[1], sys.argv[2]
    tmp = tempfile.mkdtemp(prefix="gcprof-report-")
    for verdict in ("pass", "fail"):
        db = os.path.join(tmp, verdict + ".db")
        r = run([maker, db, verdict])
        if r.returncode != 0:
            fail("make_report_trace: " + r.stderr)
        want_rc = 0 if verdict == "pass" else 1
        outs = {}
        for fmt in ("md", "json", "junit", "html"):
            out = os.path.join(tmp, "%s.%s" % (verdict, fmt))
            r = run([gcprof, "report", db, "--format", fmt, "-o", out])
            if r.returncode != want_rc:
                fail("%s report %s: exit %d (want %d) %s" % (verdict, fmt, r.returncode, want_rc, r.stderr))
            outs[fmt] = open(out).read()
        # stdout when no -o
        r = run([gcprof, "report", db, "--format", "md"])
        if r.returncode != want_rc or "## gcprof: " + verdict.upper() not in r.stdout:
            fail("md to stdout: %d %r" % (r.returncode, r.stdout[:200]))

        j = json.loads(outs["json"])
        for key in ("verdict", "budget_bytes", "checkpoint", "gates"):
            if key not in j:
                fail("json lacks %s" % key)
        for path in (("baseline", "peak_bytes"), ("predicted", "peak_bytes"), ("measured", "peak_bytes"),
                     ("measured", "step_ns"), ("baseline", "step_ns")):
            if not isinstance(j[path[0]].get(path[1]), int):
                fail("json lacks %s.%s" % path)
        if j["verdict"] != verdict.upper():
            fail("json verdict %s" % j["verdict"])
        for g in j["gates"]:
            if set(g) != {"name", "passed", "detail"}:
                fail("gate fields %s" % sorted(g))

        root = ET.fromstring(outs["junit"])
        if root.tag != "testsuites":
            fail("junit root %s" % root.tag)
        suites = root.findall("testsuite")
        cases = [c for s in suites for c in s.findall("testcase")]
        failures = [c for c in cases if c.find("failure") is not None]
        if len(cases) != len(j["gates"]) or int(suites[0].get("tests")) != len(cases):
            fail("junit: %d testcases for %d gates" % (len(cases), len(j["gates"])))
        if int(suites[0].get("failures")) != len(failures) or int(root.get("failures")) != len(failures):
            fail("junit failure counts disagree")
        if (len(failures) > 0) != (verdict == "fail"):
            fail("junit failures %d for a %s" % (len(failures), verdict))
        for c in cases:
            if not c.get("name") or not c.get("classname"):
                fail("junit testcase without name/classname")
        if verdict == "fail" and "budget &lt;&amp;&gt; &quot;quoted&quot;" not in outs["junit"]:
            fail("junit does not carry the failed gate's escaped detail")

        html = outs["html"]
        if "<svg" not in html or html.count('class="series"') != 3 or 'class="budget"' not in html:
            fail("html chart incomplete (series %d)" % html.count('class="series"'))
        ET.fromstring(html[html.index("<svg"):html.index("</svg>") + 6])  # the chart is well-formed XML
        if 'class="band"' not in html or "#f28e2b" not in html:
            fail("html chart has no unit bands")
        if verdict.upper() not in html:
            fail("html lacks the verdict")
        if "## gcprof: " + verdict.upper() not in outs["md"] or "| peak memory |" not in outs["md"]:
            fail("markdown lacks verdict or table")

    # Chrome trace of the baseline run.
    out = os.path.join(tmp, "trace.json")
    r = run([gcprof, "export", os.path.join(tmp, "pass.db"), "--format", "chrome-trace", "-o", out])
    if r.returncode != 0:
        fail("export: %s" % r.stderr)
    t = json.load(open(out))
    kinds = {}
    for e in t["traceEvents"]:
        kinds[e["ph"]] = kinds.get(e["ph"], 0) + 1
        if e["ph"] == "X" and not (e["dur"] >= 0 and isinstance(e["ts"], (int, float))):
            fail("bad slice %s" % e)
    if not (kinds.get("X", 0) >= 48 and kinds.get("C", 0) > 10 and kinds.get("i", 0) == 3):
        fail("chrome trace events %s" % kinds)
    # Slices on one track must nest (Perfetto requirement).
    tracks = {}
    for e in sorted((e for e in t["traceEvents"] if e["ph"] == "X"), key=lambda e: (e["ts"], -e["dur"])):
        stack = tracks.setdefault((e["pid"], e["tid"]), [])
        while stack and stack[-1] <= e["ts"]:
            stack.pop()
        if stack and e["ts"] + e["dur"] > stack[-1] + 1e-6:
            fail("overlapping slices on one track: %s" % e)
        stack.append(e["ts"] + e["dur"])

    # A baseline without step markers is one step: every format renders
    # (it crashed on the missing last step once).
    db = os.path.join(tmp, "nosteps.db")
    subprocess.run([maker, db, "nosteps"], check=True)
    for fmt in ("md", "json", "junit", "html"):
        r = run([gcprof, "report", db, "--format", fmt])
        if r.returncode != 0:
            fail("report %s of a run without steps: exit %d %s" % (fmt, r.returncode, r.stderr[-300:]))

    # A trace path that is not UTF-8 (bytes on Linux) still gives valid XML.
    import shutil
    latin1 = os.path.join(tmp.encode(), b"caf\xe9.db")
    shutil.copy(os.path.join(tmp, "pass.db"), latin1)
    r = subprocess.run([gcprof, "report", latin1, "--format", "junit"], capture_output=True, timeout=300)
    if r.returncode != 0:
        fail("junit of a latin-1 path: exit %d %r" % (r.returncode, r.stderr[-300:]))
    ET.fromstring(r.stdout)  # raises on invalid XML / UTF-8

    # Sizes whose sums pass INT64_MAX: every verb answers (the sanitizer
    # build aborts on a signed overflow, which is neither exit 0, 1 nor 2).
    db = os.path.join(tmp, "huge.db")
    subprocess.run([maker, db, "huge"], check=True)
    for args in (["show", db], ["show", db, "--json", "--all"],
                 ["advise", db, "--budget", "60%", "--json"],
                 ["advise", db, "--budget", "60%", "--strategy", "every", "--json"],
                 ["export", db, "--format", "chrome-trace", "-o", os.path.join(tmp, "huge.json")],
                 ["report", db, "--format", "md"], ["report", db, "--format", "html"],
                 ["report", db, "--format", "json"], ["report", db, "--format", "junit"]):
        r = run([gcprof] + args)
        if r.returncode not in (0, 1, 2) or "runtime error" in r.stderr:
            fail("%s on huge sizes: exit %d %s" % (args, r.returncode, r.stderr[-600:]))
    j = json.loads(run([gcprof, "show", db, "--json"]).stdout)
    if any(r.get("peak_bytes", 0) < 0 for r in j["runs"]):
        fail("show: a negative peak on huge sizes %s" % [r.get("peak_bytes") for r in j["runs"]])

    # Bad input: exit 2.
    for args in (["report", "/nonexistent.db"], ["report", os.path.join(tmp, "pass.db"), "--format", "pdf"],
                 ["export", os.path.join(tmp, "pass.db"), "--format", "svg"],
                 ["report", os.path.join(tmp, "pass.db"), "--verification", "99"]):
        r = run([gcprof] + args)
        if r.returncode != 2:
            fail("%s: exit %d" % (args, r.returncode))
    empty = os.path.join(tmp, "empty.db")
    subprocess.run([maker, empty, "pass"], check=True)
    import sqlite3
    with sqlite3.connect(empty) as con:
        con.execute("DELETE FROM verifications")
    r = run([gcprof, "report", empty])
    if r.returncode != 2 or "gcprof verify" not in r.stderr:
        fail("no verification: exit %d %r" % (r.returncode, r.stderr))
    print("report/export ok: md, json, junit, html, chrome-trace; exit codes 0/1/2")


if __name__ == "__main__":
    main()
