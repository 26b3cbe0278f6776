"""idempotency keys: the library's Idempotency-Key table (jsonapi_pyramid.idempotency)

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-25 21:50:00
"""
import sqlalchemy as sa
from alembic import op

revision = '0003'
down_revision = '0002'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('jsonapi_idempotency_keys',
    sa.Column('caller', sa.String(length=255), nullable=False),
    sa.Column('key', sa.String(length=255), nullable=False),
    sa.Column('fingerprint', sa.String(length=64), nullable=False),
    sa.Column('status', sa.Integer(), nullable=False),
    sa.Column('headers', sa.Text(), nullable=False),
    sa.Column('body', sa.LargeBinary(), nullable=False),
    sa.Column('created_at', sa.DateTime(), nullable=False),
    sa.PrimaryKeyConstraint('caller', 'key', name=op.f('pk_jsonapi_idempotency_keys'))
    )
    with op.batch_alter_table('jsonapi_idempotency_keys', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_jsonapi_idempotency_keys_created_at'), ['created_at'], unique=False)


def downgrade() -> None:
    with op.batch_alter_table('jsonapi_idempotency_keys', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_jsonapi_idempotency_keys_created_at'))

    op.drop_table('jsonapi_idempotency_keys')
