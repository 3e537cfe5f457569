"""The robustness sweep (bench/history/robustness-sweep.md): one public model family or
training pattern through the whole pipeline on CPU -- record, advise at
60/75/90% and `--strategy every`, verify each plan, report -- printing one
line per budget.

    python3 bench/robustness/sweep.py NAME MODEL [probe_job.py flags]
    python3 bench/robustness/sweep.py wgan-gp ../../tests/e2e/gan_job.py --loop wgan-gp
    python3 bench/robustness/sweep.py bart bart --layers 4
    python3 bench/robustness/sweep.py gpt2-bf16 gpt2 --seq 256 --pattern bf16
    python3 bench/robustness/sweep.py ft-lora probe_finetune.py gpt2 --tune lora
    python3 bench/robustness/sweep.py ddp-nosync -- torchrun --standalone --nproc_per_node=2 \
        tests/e2e/dist_patterns_job.py ddp --accum 2
    python3 bench/robustness/sweep.py resnet-cpp build/bin/resnet_train --layers 4   # a program, as is

After `--` the command is run as given (a launcher: torchrun, accelerate
launch); its ranks' `rank <r> step <i> loss <v>` lines (and `... reduced <n> of
<m> gradients in <k> buckets`, tests/e2e/dist_patterns_job.py) are compared per rank,
and each rank's measured and predicted peak is printed. A path to a program (a
LibTorch sample) is also run as given.

Traces and plans go to $SWEEP_OUT/NAME (default /tmp/gcprof-sweep).
"""
import json
import os
import re
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
G = os.environ.get("GCPROF", os.path.join(HERE, "..", "..", "build", "bin", "gcprof"))
OUT = os.environ.get("SWEEP_OUT", "/tmp/gcprof-sweep")


def run(*a, **kw):
    return subprocess.run(list(a), capture_output=True, text=True, **kw)


def losses(out):
    # Ranks share the pipe and may run their lines into each other.
    ranked = re.findall(r"rank (\d+) step (\d+) (loss -?[\d.]+|reduced \d+ of \d+ gradients in \d+ buckets)", out)
    if ranked:
        return sorted(ranked)
    return [l for l in out.splitlines() if l.startswith("step ") or l.startswith("val ")]


def main():
    if len(sys.argv) < 3 or sys.argv[1] in ("-h", "--help"):
        sys.exit(__doc__)
    name = sys.argv[1]
    argv = sys.argv[2:]
    d = os.path.join(OUT, name)
    os.makedirs(d, exist_ok=True)
    db = f"{d}/trace.db"
    if os.path.exists(db):
        os.remove(db)
    t = time.time()
    if argv[0] == "--":
        cmd = argv[1:]
    elif argv[0].endswith(".py"):
        cmd = [sys.executable, os.path.join(HERE, argv[0]), *argv[1:]]
    elif os.sep in argv[0]:  # a program (a LibTorch sample): run as given
        cmd = [os.path.abspath(argv[0]), *argv[1:]]
    else:
        cmd = [sys.executable, os.path.join(HERE, "probe_job.py"), *argv]
    rec = run(G, "record", "-o", db, "--", *cmd)
    lines = [f"## {name}: {' '.join(argv)}  record rc={rec.returncode} {time.time()-t:.0f}s"]
    if rec.returncode:
        lines.append(rec.stderr[-2000:])
        print("\n".join(lines)); return
    base = losses(rec.stdout)
    sh = json.loads(run(G, "show", db, "--json").stdout)
    # A launcher's run has no units: take the first run that has (rank 0's).
    au = next((r["auto_units"] for r in sh["runs"] if r.get("auto_units", {}).get("names")),
              sh["runs"][0].get("auto_units", {}))
    lines.append(f"  units: {au.get('rule')} n={len(au.get('names', []))} err={au.get('error')}")
    for b in ("60%", "75%", "90%", "every"):
        plan = f"{d}/plan-{b.rstrip('%')}.json"
        how = ["--strategy", "every"] if b == "every" else ["--budget", b]
        adv = run(G, "advise", db, *how, "-o", plan)
        if adv.returncode:
            lines.append(f"  {b}: advise rc={adv.returncode}: {adv.stderr.strip()[:600]}")
            continue
        p = json.load(open(plan))
        ver = run(G, "verify", db, "--plan", plan)
        rep = json.loads(run(G, "report", db, "--format", "json").stdout)
        m, pr = rep["measured"]["peak_bytes"], rep["predicted"]["peak_bytes"]
        bad = [f"{g['name']}: {g.get('detail')}" for g in rep["gates"] if not g["passed"]]
        same = losses(ver.stdout) == base
        segs = [s.get("module") or "+".join(s.get("units", [])) for s in p.get("segments", [])]
        lines.append(f"  {b}: {p['strategy']} {p.get('plan_level')} segs={len(segs)} {segs[:4]} "
                     f"verify rc={ver.returncode} {rep['verdict']} meas={m} pred={pr} "
                     f"err={100*(pr-m)/m:+.2f}% budget={rep['budget_bytes']} losses_same={same}")
        for k in rep.get("ranks", []):
            km, kp = k["measured"]["peak_bytes"], k["predicted"]["peak_bytes"]
            lines.append(f"     rank {k['rank']}: {k.get('verdict')} meas={km} pred={kp} "
                         f"err={100*(kp-km)/max(km, 1):+.2f}%")
        for x in bad:
            lines.append("     FAIL " + x)
        if ver.returncode and not rep["gates"]:
            lines.append(ver.stderr[-1500:])
    print("\n".join(lines), flush=True)


if __name__ == "__main__":
    main()
