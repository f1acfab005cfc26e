"""MkDocs hook (mkdocs.yml): the site's front page is README.md, so the two never drift apart.

A link into docs/ becomes the site's own; a link to another file of the repository (a licence,
plugins/minatar/) becomes its text, since the site holds only docs/."""

import os
import re

from mkdocs.structure.files import File

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _link(match):
    text, target = match.group(1), match.group(2)
    if target.startswith(("http://", "https://", "#")):
        return match.group(0)
    if target.startswith("docs/"):
        return f"[{text}]({target[len('docs/') :] or 'index.md'})"
    return text


def front_page(readme):
    return re.sub(r"\[([^\]]*)\]\(([^)\s]*)\)", _link, readme)


def on_files(files, config):
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
        content = front_page(f.read())
    files.append(File.generated(config, "index.md", content=content))
    return files
