"""reports keep a small digest (verdict and figures) for listings; signing out ends sessions

``reports.digest`` holds what the console's lists and plots show, so that they never load a
report's document (up to the upload limit each). Existing reports get theirs here, one
document at a time. ``contributors.sessions_after``: console sessions signed in before it are
over (set when the contributor signs out).

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-25
"""

import sqlalchemy as sa
from alembic import op

from panoramia.report.digest import report_digest

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def _json() -> sa.types.TypeEngine:
    from sqlalchemy.dialects.postgresql import JSONB

    return sa.JSON().with_variant(JSONB(), "postgresql")


def upgrade() -> None:
    with op.batch_alter_table("contributors") as batch:
        batch.add_column(sa.Column("sessions_after", sa.DateTime(timezone=True), nullable=True))
    with op.batch_alter_table("reports") as batch:
        batch.add_column(sa.Column("digest", _json(), nullable=True))
    bind = op.get_bind()
    reports = sa.table(
        "reports", sa.column("id", sa.String), sa.column("document", _json()),
        sa.column("digest", _json()),
    )  # fmt: skip
    ids = [row.id for row in bind.execute(sa.select(reports.c.id))]
    for report_id in ids:
        document = bind.execute(
            sa.select(reports.c.document).where(reports.c.id == report_id)
        ).scalar_one()
        bind.execute(
            reports.update().where(reports.c.id == report_id).values(digest=report_digest(document))
        )


def downgrade() -> None:
    with op.batch_alter_table("reports") as batch:
        batch.drop_column("digest")
    with op.batch_alter_table("contributors") as batch:
        batch.drop_column("sessions_after")
