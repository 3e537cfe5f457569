#!/usr/bin/env python3
"""`make test` runs the suite under scripts/test-tmpdir: a TMPDIR of its own,
removed when the suite passes, kept and named when it fails.

    test_tmpdir_kept_on_failure.py REPO_ROOT

The tests leave about 2 GB of traces, logs and screenshots a run; before
this, every run left them in /tmp.
"""
import os
import subprocess
import sys
import tempfile


def run(script, parent, code):
    # The command writes a file where the tests would, prints where, and exits `code`.
    cmd = 'touch "$TMPDIR/trace.db"; echo "$TMPDIR"; exit %d' % code
    p = subprocess.run([script, "sh", "-c", cmd], env=dict(os.environ, TMPDIR=parent),
                       capture_output=True, text=True)
    return p.returncode, p.stdout.strip(), p.stderr


def main():
    script = os.path.join(sys.argv[1], "scripts", "test-tmpdir")
    with tempfile.TemporaryDirectory() as parent:
        rc, tmp, err = run(script, parent, 0)
        assert rc == 0, (rc, err)
        assert os.path.dirname(tmp) == parent and tmp != parent, tmp
        assert not os.path.exists(tmp), "a passing run's files were left in " + tmp

        rc, tmp, err = run(script, parent, 3)
        assert rc == 3, (rc, err)
        assert os.path.exists(os.path.join(tmp, "trace.db")), "a failing run's files were removed"
        assert tmp in err, err
    print("ok")


if __name__ == "__main__":
    main()
