#!/usr/bin/python3
"""The man page and the bash and zsh completions that the build generates from
the CLI's option table say what `tileopt COMMAND --help` says: the same
options, spelled the same, with the same text, and the shells accept them."""
import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.join(os.environ.get("SRCDIR", os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "..")), "tests", "harness"))
import harness as h  # noqa: E402

COMMANDS = ("optimize", "run", "inspect", "report")
DOCS = os.path.join(os.environ.get("BUILDDIR", ""), "tools", "docs")


def doc(name):
    with open(os.path.join(DOCS, name), encoding="utf-8") as f:
        return f.read()


def help_options(cmd):
    """{spelling: help text} of `tileopt CMD --help`, every spelling of each
    option (short, long, alias) mapped to its text with spaces squeezed."""
    text = h.tileopt(cmd, "--help").stdout
    body = text.split("options:\n", 1)[1]
    out = {}
    for entry in re.split(r"\n(?=  -)", body):
        entry = entry.split("\n", 1)[0] if not entry.startswith("  -") else entry
        m = re.match(r"  (-\S.*?)(?:\s{2,}|\n\s+)(.*)", entry, re.S)
        if not m:
            continue
        words = " ".join(m.group(2).split())
        words = re.split(r" (?:resource limits|SIZE is) ", words)[0]
        for spelling in re.findall(r"--?[a-zA-Z][\w-]*", m.group(1)):
            out[spelling] = words
    return out


def man_options():
    """{spelling: text} of the man page's option entries (.TP), roff undone."""
    text = doc("tileopt.1").replace("\\-", "-").replace("\\e", "\\")
    text = re.sub(r"\\f[BIR]", "", text)
    out = {}
    for m in re.finditer(r"^\.TP\n(.*)\n(.*)$", text, re.M):
        for spelling in re.findall(r"--?[a-zA-Z][\w-]*", m.group(1)):
            out[spelling] = " ".join(m.group(2).split())
    return out


def man_page_should_say_what_help_says():
    man = man_options()
    seen = set()
    for cmd in COMMANDS:
        for spelling, words in help_options(cmd).items():
            assert spelling in man, f"{cmd} {spelling}: not in the man page"
            assert man[spelling] == words, (cmd, spelling, man[spelling], words)
            seen.add(spelling)
    assert set(man) == seen, f"the man page has options no --help shows: {set(man) - seen}"
    page = doc("tileopt.1")
    for cmd in COMMANDS:
        assert f".SS {cmd}" in page, cmd
    if shutil.which("man"):
        cp = subprocess.run(["man", "-l", os.path.join(DOCS, "tileopt.1")], capture_output=True,
                            text=True, env=dict(os.environ, MANWIDTH="80"))
        assert cp.returncode == 0 and "fold-scope" in cp.stdout, cp.stderr


def bash_complete(words):
    """What the bash completion offers for the command line `words` (the last
    one being completed)."""
    script = (f"source {os.path.join(DOCS, 'tileopt')}\n"
              f"COMP_WORDS=({' '.join(repr(w) for w in words)}); COMP_CWORD={len(words) - 1}\n"
              "_tileopt; printf '%s\\n' \"${COMPREPLY[@]}\"")
    cp = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=60)
    assert cp.returncode == 0, cp.stderr
    return set(cp.stdout.split())


def bash_completion_should_offer_what_help_lists():
    assert subprocess.run(["bash", "-n", os.path.join(DOCS, "tileopt")]).returncode == 0
    assert {"optimize", "run", "inspect", "--version"} <= bash_complete(["tileopt", ""])
    for cmd in COMMANDS:
        want = set(help_options(cmd))
        got = bash_complete(["tileopt", cmd, "-"])
        assert got == want, (cmd, got ^ want)
    assert bash_complete(["tileopt", "optimize", "--fold-scope", ""]) == {"tile", "all"}
    assert bash_complete(["tileopt", "optimize", "--fold-sc"]) == {"--fold-scope"}


def zsh_completion_should_list_what_help_lists():
    text = doc("_tileopt")
    assert text.startswith("#compdef tileopt")
    for cmd in COMMANDS:
        block = text.split(f"\n  {cmd})\n", 1)[1].split(";;", 1)[0]
        got = set(re.findall(r"'\*?(--?[a-zA-Z][\w-]*)", block))
        assert got == set(help_options(cmd)), (cmd, got ^ set(help_options(cmd)))
    if shutil.which("zsh"):
        cp = subprocess.run(["zsh", "-n", os.path.join(DOCS, "_tileopt")], capture_output=True,
                            text=True)
        assert cp.returncode == 0, cp.stderr
    else:
        print("zsh is not installed: its syntax check skipped")


if __name__ == "__main__":
    sys.exit(h.run_tests(globals()))
