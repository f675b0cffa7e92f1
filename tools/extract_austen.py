"""Write ``panoramia/datasets/austen.jsonl.gz`` from Debian's ``r-cran-janeaustenr`` (run once,
by hand; the audit reads only the written file).

The package (janeaustenr 1.0.0, MIT; the novels are public domain, from Project Gutenberg)
keeps Jane Austen's six novels as R character vectors, one element a line, in an R lazy-load
database (``data/Rdata.rdx``: a gzip'd serialised index of offsets; ``data/Rdata.rdb``: each
object a 4-byte length and a zlib'd serialisation), read here with ``rdata`` (not a project
dependency: ``pip install --target /tmp/rdata rdata==1.1.0``). Each chapter is one document,
``{"novel", "chapter", "text"}``; the front matter before a novel's first chapter heading is
dropped.

    apt-get install r-cran-janeaustenr
    PYTHONPATH=/tmp/rdata .venv/bin/python tools/extract_austen.py
"""

from __future__ import annotations

import gzip
import json
import re
import struct
import zlib
from pathlib import Path

FOLDER = Path("/usr/lib/R/site-library/janeaustenr/data")
OUT = Path(__file__).resolve().parents[1] / "panoramia" / "datasets" / "austen.jsonl.gz"
HEADING = re.compile(r"^\s*chapter\s+[0-9ivxlc]+\b", re.IGNORECASE)


def novels() -> dict[str, list[str]]:
    """Each novel's lines, by the package's variable name."""
    import rdata

    def read(data: bytes) -> object:
        return rdata.conversion.convert(rdata.parser.parse_data(data))

    index = read(gzip.decompress((FOLDER / "Rdata.rdx").read_bytes()))
    database = (FOLDER / "Rdata.rdb").read_bytes()
    found = {}
    for name, (offset, length) in index["variables"].items():  # type: ignore[index]
        chunk = database[int(offset) : int(offset) + int(length)]
        (size,) = struct.unpack(">I", chunk[:4])
        data = zlib.decompress(chunk[4:])
        assert len(data) == size, name
        found[str(name)] = [str(line) for line in read(data)]  # type: ignore[union-attr]
    return found


def chapters(lines: list[str]) -> list[str]:
    """The novel's chapters (heading line dropped), paragraphs kept as blank-line breaks."""
    found: list[list[str]] = []
    for line in lines:
        if HEADING.match(line):
            found.append([])
        elif found:
            found[-1].append(line)
    texts = ["\n".join(chapter).strip() for chapter in found]
    return [re.sub(r"\n{3,}", "\n\n", text) for text in texts if text]


def main() -> None:
    rows = []
    for novel, lines in sorted(novels().items()):
        for number, text in enumerate(chapters(lines), start=1):
            rows.append({"novel": novel, "chapter": number, "text": text})
    with gzip.GzipFile(OUT, "wb", mtime=0) as file:  # byte-identical on every run
        file.write("".join(json.dumps(row) + "\n" for row in rows).encode())
    print(f"{len(rows)} chapters, {sum(len(r['text'].split()) for r in rows):,} words -> {OUT}")


if __name__ == "__main__":
    main()
