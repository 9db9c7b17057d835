"""The documentation's code, run (issue 54): every ```python block of README.md, python/README.md and the
examples' pages must compile, and the blocks marked `<!-- run by python/tests/test_docs.py ... -->` run as
written: the loader snippets on a real `fedirl reproduce gridworld` run folder (the path in the snippet
replaced by it), the API page's sh and python blocks in a fresh folder (python3 is this Python, with the
checkout's package and fedirl binary)."""
import os
import re
import subprocess
import sys
import tempfile
import unittest

import support

PAGES = ["README.md", "python/README.md", "examples/python/README.md", "examples/own-problem/README.md",
         "examples/reward-models/README.md"]
MARK = "<!-- run by python/tests/test_docs.py"
BLOCK = re.compile(r"(?:(<!--[^\n]*-->)\n)?```(python|sh)\n(.*?)```", re.S)


def blocks(page):
    with open(os.path.join(support.ROOT, page), encoding="utf-8") as f:
        text = f.read()
    for m in BLOCK.finditer(text):
        yield m.group(1) or "", m.group(2), m.group(3), text[:m.start()].count("\n") + 1


def gridworld_run():
    """A `fedirl reproduce gridworld` run folder: one of $FEDIRL_RUN_DIRS, else a --quick run made now."""
    for d in os.environ.get("FEDIRL_RUN_DIRS", "").split(os.pathsep):
        try:
            with open(os.path.join(d, "log.txt"), encoding="utf-8") as f:
                if f.readline().startswith("fedirl reproduce gridworld"):
                    return d, None
        except OSError:
            continue
    exe = support.fedirl_binary()
    if exe is None:
        return None, None
    tmp = tempfile.TemporaryDirectory(prefix="fedirl-docs-")
    out = os.path.join(tmp.name, "gw")
    subprocess.run([exe, "reproduce", "gridworld", "--quick", "--out", out], check=True, capture_output=True)
    return out, tmp


class DocsTest(unittest.TestCase):
    def test_python_blocks_compile(self):
        n = 0
        for page in PAGES:
            for _, lang, code, line in blocks(page):
                if lang == "python":
                    n += 1
                    compile(code, f"{page} line {line}", "exec")
        self.assertGreaterEqual(n, 8)

    @unittest.skipUnless(support.have("numpy"), "numpy is not installed")
    def test_loader_snippets_run(self):
        run, keep = gridworld_run()
        if keep:
            self.addCleanup(keep.cleanup)
        if run is None:
            self.skipTest("no fedirl binary and no run folder in $FEDIRL_RUN_DIRS")
        ran = 0
        for page in PAGES:
            for mark, lang, code, line in blocks(page):
                if lang == "python" and mark.startswith(MARK) and "run folder" in mark:
                    with self.subTest(page=page, line=line):
                        exec(compile(code.replace("runs/gridworld-seed1-n5", run), f"{page} line {line}", "exec"),
                             {"__name__": "docs"})
                        ran += 1
        self.assertGreaterEqual(ran, 2, "the python/README and examples/python loader snippets")

    @unittest.skipUnless(support.have("numpy"), "numpy is not installed")
    def test_api_page_runs(self):
        exe = support.fedirl_binary()
        if exe is None:
            self.skipTest("no fedirl binary")
        env = dict(os.environ, FEDIRL_BIN=exe, PYTHONPATH=os.path.join(support.ROOT, "python"))
        page = "python/README.md"
        with tempfile.TemporaryDirectory(prefix="fedirl-docs-") as tmp:
            ran = 0
            for mark, lang, code, line in blocks(page):
                if not (mark.startswith(MARK) and "folder where the sh block" in mark):
                    continue
                if lang == "sh":
                    for cmd in code.splitlines():
                        cmd = cmd.strip()
                        if cmd:
                            cmd = re.sub(r"^python3 ", sys.executable + " ", cmd)
                            p = subprocess.run(["bash", "-c", cmd], cwd=tmp, env=env, capture_output=True, text=True)
                            self.assertEqual(p.returncode, 0, f"{page} line {line}: {cmd}\n{p.stderr}")
                else:
                    p = subprocess.run([sys.executable, "-c", code], cwd=tmp, env=env, capture_output=True, text=True)
                    self.assertEqual(p.returncode, 0, f"{page} line {line}:\n{p.stderr}")
                ran += 1
            self.assertEqual(ran, 2)


if __name__ == "__main__":
    unittest.main()
