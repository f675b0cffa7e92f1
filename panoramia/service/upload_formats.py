"""The file formats an upload may be, by its file name's suffix: the one list that the
upload's checks (:mod:`panoramia.service.uploads.checks`) and the OpenAPI document
(:class:`panoramia.service.schemas.UploadCreate`) both read. It imports nothing of the service."""

CSV_SUFFIXES = (".csv", ".csv.gz", ".csv.bz2", ".csv.xz")
PARQUET_SUFFIXES = (".parquet", ".pq")
ARCHIVE_SUFFIXES = (".tar", ".tar.gz", ".tgz")
TEXT_SUFFIXES = (".jsonl", ".txt")
DATA_SUFFIXES = (*CSV_SUFFIXES, *PARQUET_SUFFIXES, ".npz", *TEXT_SUFFIXES, *ARCHIVE_SUFFIXES)
"""A data upload's formats: a table, arrays, text, or an archive of a folder of them."""
MODEL_SUFFIXES = ARCHIVE_SUFFIXES
"""A model upload's formats: an archive of its model folder."""
