"""report_pages.parts: a report's charts (panoramia.report.page_parts), from which the service
renders its page together with the stored document; report_pages.html becomes optional (kept
for the pages stored before, and for pages uploaded by a CLI run); every existing row is kept

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-07
"""

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("report_pages") as batch:
        batch.add_column(sa.Column("parts", sa.Text, nullable=True))
        batch.alter_column("html", existing_type=sa.Text, nullable=True)


def downgrade() -> None:
    # a page stored as parts alone has no HTML to keep: it goes with its parts
    op.execute("DELETE FROM report_pages WHERE html IS NULL")
    with op.batch_alter_table("report_pages") as batch:
        batch.alter_column("html", existing_type=sa.Text, nullable=False)
        batch.drop_column("parts")
