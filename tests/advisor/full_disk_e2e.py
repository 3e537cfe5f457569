#!/usr/bin/env python3
"""Every file gcprof writes for the user, on a real full file system.

    full_disk_e2e.py cli GCPROF MAKE_REPORT_TRACE MAKE_CHAIN_TRACE
    full_disk_e2e.py gui GCPROF_GUI GUI_MAKE_TRACE

A 64 KiB tmpfs is mounted and filled to the last byte; then each writer
(report in all four formats, export, advise -o, the GUI's screenshot) is
pointed into it. Each must fail with a non-zero exit, name the file and
"no space left on device", print no "written"/"wrote",
and leave neither a new empty file nor a cut-short old one nor a temporary
file behind. The tmpfs is mounted in a private user and mount namespace
(unshare -rm), so the machine's mounts are never touched and a killed test
leaves no mount behind; where the kernel forbids that, the test exits 77,
which CTest shows as skipped.
"""
import errno
import os
import shutil
import subprocess
import sys
import tempfile

SKIP = 77


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def run(args, env=None):
    return subprocess.run(args, capture_output=True, text=True, timeout=300, env=env)


def in_own_mounts():
    """Re-runs this script as root of a private user and mount namespace."""
    if os.environ.get("GCPROF_OWN_MOUNTS") == "1":
        return
    probe = subprocess.run(["unshare", "-rm", "sh", "-c", "mount -t tmpfs tmpfs /mnt"],
                           capture_output=True, text=True)
    if probe.returncode != 0:
        print("SKIP: cannot mount a tmpfs in a private namespace here (unshare -rm): " +
              probe.stderr.strip())
        sys.exit(SKIP)
    env = dict(os.environ, GCPROF_OWN_MOUNTS="1")
    sys.exit(subprocess.run(["unshare", "-rm", sys.executable] + sys.argv, env=env).returncode)


def mount_full_tmpfs(root):
    """A mounted tmpfs of 64 KiB with not one byte free."""
    d = os.path.join(root, "full")
    os.makedirs(d)
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", d], check=True)
    # An old output that a failed rewrite must leave as it was.
    with open(os.path.join(d, "old.md"), "w") as f:
        f.write("previous report\n")
    fd = os.open(os.path.join(d, "filler"), os.O_WRONLY | os.O_CREAT)
    try:
        while True:
            os.write(fd, b"\0" * 512)
    except OSError as e:
        if e.errno != errno.ENOSPC:
            raise
    finally:
        os.close(fd)
    return d


def expect_refused(what, r, full, name, old=None):
    text = r.stdout + r.stderr
    if r.returncode == 0:
        fail("%s: exit 0 on a full disk: %r" % (what, text))
    if "no space left on device" not in text or name not in text:
        fail("%s: the message does not say the disk is full and where: %r" % (what, text))
    for word in ("written to", "wrote "):
        if word in text:
            fail("%s: says %r on a full disk: %r" % (what, word, text))
    path = os.path.join(full, name)
    if old is None and os.path.exists(path):
        fail("%s: left %s (%d bytes)" % (what, name, os.path.getsize(path)))
    if old is not None and open(path).read() != old:
        fail("%s: %s was changed: %r" % (what, name, open(path).read()))
    stray = sorted(set(os.listdir(full)) - {"filler", "old.md"})
    if stray:
        fail("%s: left files behind: %s" % (what, stray))
    print("ok  %s: %s" % (what, text.strip().splitlines()[-1]))


def cli_checks(tmp, full, gcprof, make_report, make_chain):
    report_db = os.path.join(tmp, "report.db")
    r = run([make_report, report_db, "pass"])
    if r.returncode != 0:
        fail("make_report_trace: " + r.stderr)
    for fmt in ("md", "json", "junit", "html"):
        name = "report." + fmt
        r = run([gcprof, "report", report_db, "--format", fmt, "-o", os.path.join(full, name)])
        expect_refused("report --format " + fmt, r, full, name)
    r = run([gcprof, "report", report_db, "--format", "md", "-o", os.path.join(full, "old.md")])
    expect_refused("report over an old file", r, full, "old.md", old="previous report\n")
    r = run([gcprof, "export", report_db, "--format", "chrome-trace", "-o", os.path.join(full, "trace.json")])
    expect_refused("export", r, full, "trace.json")

    chain_db = os.path.join(tmp, "chain.db")
    r = run([make_chain, chain_db, "8", "3", "python"])
    if r.returncode != 0:
        fail("make_chain_trace: " + r.stderr)
    r = run([gcprof, "advise", chain_db, "--budget", "80%", "-o", os.path.join(full, "plan.json")])
    expect_refused("advise -o", r, full, "plan.json")

    # Not a full disk, a missing folder: said as such.
    r = run([gcprof, "report", report_db, "-o", os.path.join(tmp, "no-such-folder", "r.md")])
    if r.returncode == 0 or "does not exist" not in r.stderr:
        fail("report into a missing folder: %d %r" % (r.returncode, r.stderr))


def gui_checks(tmp, full, gui, make_trace):
    db = os.path.join(tmp, "gui.db")
    r = run([make_trace, db])
    if r.returncode != 0:
        fail("gui_make_trace: " + r.stderr)
    r = run(["timeout", "120", "xvfb-run", "-a", gui, db, "--screenshot", os.path.join(full, "shot.png"),
             "--size", "640x400"])
    expect_refused("gcprof-gui --screenshot", r, full, "shot.png")


def main():
    in_own_mounts()
    mode = sys.argv[1]
    tmp = tempfile.mkdtemp(prefix="gcprof-full-disk-")
    full = mount_full_tmpfs(tmp)
    try:
        if mode == "cli":
            cli_checks(tmp, full, *sys.argv[2:5])
        else:
            gui_checks(tmp, full, *sys.argv[2:4])
    finally:
        subprocess.run(["umount", full])
        shutil.rmtree(tmp, ignore_errors=True)
    print("PASS")


if __name__ == "__main__":
    main()
