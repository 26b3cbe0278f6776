"""notebooks, and a note's owner, pin and notebook

Revision ID: 0002
Revises: 0001
Create Date: the tutorial's second step

Written by ``alembic -c development.ini revision --autogenerate -m "notebooks" --rev-id 0002`` and then read:
autogenerate saw ``owner`` and ``pinned`` as NOT NULL columns without a server default, which a
table with rows cannot take. The models give them ``server_default=``, so this migration does too.
"""
import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "notebooks",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=100), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_notebooks")),
    )
    # batch_alter_table: SQLite cannot add a foreign key to a table in place; alembic copies it.
    with op.batch_alter_table("notes") as batch:
        batch.add_column(sa.Column("owner", sa.String(length=100), server_default="", nullable=False))
        batch.add_column(sa.Column("pinned", sa.Boolean(), server_default=sa.false(), nullable=False))
        batch.add_column(sa.Column("notebook_id", sa.Integer(), nullable=True))
        batch.create_foreign_key(batch.f("fk_notes_notebook_id_notebooks"), "notebooks", ["notebook_id"], ["id"])


def downgrade() -> None:
    with op.batch_alter_table("notes") as batch:
        batch.drop_constraint(batch.f("fk_notes_notebook_id_notebooks"), type_="foreignkey")
        batch.drop_column("notebook_id")
        batch.drop_column("pinned")
        batch.drop_column("owner")
    op.drop_table("notebooks")
