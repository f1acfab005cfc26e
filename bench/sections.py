# sections.py - the one section writer for generated docs: puts a body between the markers
# <!-- BEGIN name --> and <!-- END name --> of a markdown file, atomically. Every bench/ script with
# --write uses it (`python bench/X.py` puts bench/ on sys.path, so they `import sections`).
import os
import stat
import tempfile


def markers(name):
    """The pair of HTML comments that delimit section `name`."""
    return f"<!-- BEGIN {name} -->", f"<!-- END {name} -->"


def write_section(path, name, body, heading=None):
    """Replaces the text between section `name`'s markers in `path` with `body`.

    Everything outside the markers is kept as it is. A file with neither marker gets the section
    appended at its end (under `## heading` when one is given); a file that does not exist is created
    with a `# Benchmarks` title. Markers that do not form one BEGIN...END pair (one without the
    other, either twice, END before BEGIN), or a body that holds them, stop the script with
    SystemExit and the file untouched. The new text goes to a temporary file in the same folder that
    then replaces `path` (os.replace), so a write that fails part-way leaves the old file whole.
    """
    begin, end = markers(name)
    body = body.rstrip()
    if begin in body or end in body:
        raise SystemExit(f"{path}: the body for section {name} holds its own markers; nothing written")
    text = "# Benchmarks\n"
    if os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            text = f.read()
    nb, ne = text.count(begin), text.count(end)
    if nb == 0 and ne == 0:
        title = f"## {heading}\n\n" if heading else ""
        text = text.rstrip("\n") + f"\n\n{title}{begin}\n{body}\n{end}\n"
    elif nb == 1 and ne == 1 and text.index(begin) < text.index(end):
        b, e = text.index(begin) + len(begin), text.index(end)
        text = f"{text[:b]}\n{body}\n{text[e:]}"
    else:
        if nb != ne:
            problem = f"{nb} {begin} but {ne} {end}"
        elif nb > 1:
            problem = f"{nb} pairs of the {name} markers"
        else:
            problem = f"{end} before {begin}"
        raise SystemExit(f"{path}: {problem}; fix the markers by hand (nothing written)")
    _replace_atomically(path, text)


def _replace_atomically(path, text):
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    if os.path.exists(path):
        mode = stat.S_IMODE(os.stat(path).st_mode)
    else:
        umask = os.umask(0)
        os.umask(umask)
        mode = 0o666 & ~umask
    fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise
