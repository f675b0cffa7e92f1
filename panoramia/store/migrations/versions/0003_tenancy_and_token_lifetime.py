"""models belong to the contributor who created them; tokens can expire and be revoked

Before this revision a model was global by (name, version): the first contributor to mention
``census/2`` fixed its ``declared`` metadata and ``claim`` for everyone. Each model row now has
an owner. Existing rows are carried over: a model used (by reports or audits) by several
contributors is copied once per contributor, each copy keeping the metadata it had, and each
contributor's reports and audits point at its own copy. A model that nothing refers to is kept
without an owner (only admins see it).

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-23
"""

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def _split_shared_models() -> None:
    bind = op.get_bind()
    models = sa.table(
        "models",
        sa.column("id", sa.Integer),
        sa.column("name", sa.String),
        sa.column("version", sa.String),
        sa.column("declared", sa.JSON),
        sa.column("claim", sa.JSON),
        sa.column("created_at", sa.DateTime(timezone=True)),
        sa.column("contributor_id", sa.Integer),
    )
    users = [
        sa.table(name, sa.column("model_id", sa.Integer), sa.column("contributor_id"))
        for name in ("reports", "audits")
    ]
    pairs = sorted(
        {
            tuple(pair)
            for table in users
            for pair in bind.execute(sa.select(table.c.model_id, table.c.contributor_id).distinct())
        }
    )
    owned: set[int] = set()
    for model_id, contributor_id in pairs:
        if model_id not in owned:
            owned.add(model_id)
            bind.execute(
                models.update().where(models.c.id == model_id).values(contributor_id=contributor_id)
            )
            continue
        row = bind.execute(sa.select(models).where(models.c.id == model_id)).mappings().one()
        copy = {k: row[k] for k in ("name", "version", "declared", "claim", "created_at")}
        new_id = bind.execute(
            models.insert().values(**copy, contributor_id=contributor_id).returning(models.c.id)
        ).scalar_one()
        for table in users:
            bind.execute(
                table.update()
                .where(table.c.model_id == model_id, table.c.contributor_id == contributor_id)
                .values(model_id=new_id)
            )


def upgrade() -> None:
    with op.batch_alter_table("contributors") as batch:
        batch.add_column(sa.Column("expires_at", sa.DateTime(timezone=True), nullable=True))
        batch.add_column(sa.Column("revoked_at", sa.DateTime(timezone=True), nullable=True))
    with op.batch_alter_table("models") as batch:
        batch.add_column(sa.Column("contributor_id", sa.Integer(), nullable=True))
        batch.drop_constraint("uq_models_name_version", type_="unique")
    _split_shared_models()
    with op.batch_alter_table("models") as batch:
        batch.create_unique_constraint(
            "uq_models_owner_name_version", ["contributor_id", "name", "version"]
        )
        batch.create_foreign_key(
            "fk_models_contributor", "contributors", ["contributor_id"], ["id"]
        )
        batch.create_index("ix_models_contributor_id", ["contributor_id"])


def downgrade() -> None:
    """Drops ownership; fails if two contributors own a model of the same name and version."""
    with op.batch_alter_table("models") as batch:
        batch.drop_index("ix_models_contributor_id")
        batch.drop_constraint("fk_models_contributor", type_="foreignkey")
        batch.drop_constraint("uq_models_owner_name_version", type_="unique")
        batch.create_unique_constraint("uq_models_name_version", ["name", "version"])
        batch.drop_column("contributor_id")
    with op.batch_alter_table("contributors") as batch:
        batch.drop_column("revoked_at")
        batch.drop_column("expires_at")
