#!/usr/bin/env python3
"""Write a text file as a C string constant: embed.py IN OUT NAME.

The page's script (html_page.js) is kept as a file of its own so that it reads
and diffs as JavaScript; the build turns it into html_page_js.h.
"""
import sys

src, dst, name = sys.argv[1:4]
text = open(src, encoding="utf-8").read()
# inside <script>, these would end the element or change how HTML reads it
for bad in ("</script", "<script", "<!--"):
    if bad in text.lower():
        sys.exit(f"{src}: holds {bad!r}, which an inline script cannot")
with open(dst, "w", encoding="utf-8") as f:
    f.write("/* generated from %s by embed.py */\n" % src.rsplit("/", 1)[-1])
    # a string past C99's 4095 bytes is fine for gcc and clang, which say so
    f.write("#if defined(__GNUC__)\n#pragma GCC diagnostic ignored \"-Woverlength-strings\"\n#endif\n")
    f.write("static const char %s[] =\n" % name)
    for line in text.splitlines(True):
        esc = line.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
        f.write('    "%s"\n' % esc)
    f.write("    ;\n")
