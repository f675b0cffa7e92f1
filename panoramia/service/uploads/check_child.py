"""``python -m panoramia.service.uploads.check_child REQUEST``: one upload's check, in a process
with the memory and processor ceilings :func:`panoramia.service.uploads.files.finish` set.
Prints one JSON line: ``{"files", "summary"}``, or ``{"rejected": one line}`` (with
``"holds_model": true`` where the refusal is a
:class:`panoramia.service.uploads.checks.ModelSentAsData`)."""

from __future__ import annotations

import json
import sys
from pathlib import Path


def main(argv: list[str]) -> int:
    request = json.loads(argv[1])
    from panoramia.service.uploads.checks import ModelSentAsData, UploadRejected
    from panoramia.service.uploads.files import Expected, UploadFolder, check_here

    shown = str(request["filename"])
    root = Path(request.pop("root"))
    try:
        files, summary = check_here(UploadFolder(root), Expected(**request))
        answer: dict = {"files": files, "summary": summary}
    except UploadRejected as error:
        answer = {"rejected": str(error).splitlines()[0][:500]}
        if isinstance(error, ModelSentAsData):
            answer["holds_model"] = True
    except MemoryError:
        answer = {"rejected": f"{shown}: needs more memory than a check may take"}
    except Exception as error:  # a malformed file surfaces as any library's error type
        answer = {"rejected": f"{shown}: not readable as its format ({type(error).__name__})"}
    print(json.dumps(answer))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
