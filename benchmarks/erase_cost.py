"""What deleting an upload costs in finding the stages made from it: the time
``remove_derived_stages`` takes for ``--stages`` stage records against an upload of
``--files`` files (one of the records is derived from it and removed).

    .venv/bin/python benchmarks/erase_cost.py [--stages 200] [--files 100000]

The red team's four deletions of ~100,000-entry uploads took 463 s in all (issue 58), when
each record was searched for every one of the upload's digests.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import tempfile
import time
from pathlib import Path

from panoramia.service.uploads.erase import remove_derived_stages


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stages", type=int, default=200)
    parser.add_argument("--files", type=int, default=100_000)
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="erase-"))
    for i in range(args.stages):
        stage = root / f"stage{i % 20}" / f"key{i}"
        stage.mkdir(parents=True)
        config = {"data": {"sha256": hashlib.sha256(str(i).encode()).hexdigest()},
                  "padding": "x" * 5000}  # fmt: skip
        (stage / "_done.json").write_text(json.dumps({"config": config, "inputs": {}}))
    digests = {hashlib.sha256(f"f{i}".encode()).hexdigest() for i in range(args.files)}
    digests.add(hashlib.sha256(b"7").hexdigest())  # the upload that stage 7 was made from
    started = time.perf_counter()
    removed = remove_derived_stages(root, digests, partials=False)
    print(f"{args.stages} stage records, an upload of {len(digests):,} files: {removed} "
          f"removed in {time.perf_counter() - started:.3f} s")  # fmt: skip


if __name__ == "__main__":
    main()
