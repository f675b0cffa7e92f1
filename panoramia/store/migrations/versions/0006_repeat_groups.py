"""audits.repeat_group: the audits of one request for repeats (docs/SPEC.md §3.2), pooled
into one verdict; null for a single audit

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-27
"""

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("audits") as batch:
        batch.add_column(sa.Column("repeat_group", sa.String(36), nullable=True))
        batch.create_index("ix_audits_repeat_group", ["repeat_group"])


def downgrade() -> None:
    with op.batch_alter_table("audits") as batch:
        batch.drop_index("ix_audits_repeat_group")
        batch.drop_column("repeat_group")
