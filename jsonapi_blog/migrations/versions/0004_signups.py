"""signups: the sign-up limit's count per client address

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-25 21:30:00
"""
import sqlalchemy as sa
from alembic import op

revision = '0004'
down_revision = '0003'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('signups',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('address', sa.String(length=64), nullable=False),
    sa.Column('created_at', sa.DateTime(), nullable=False),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_signups'))
    )
    with op.batch_alter_table('signups', schema=None) as batch_op:
        batch_op.create_index('ix_signups_address_created_at', ['address', 'created_at'], unique=False)
        batch_op.create_index(batch_op.f('ix_signups_created_at'), ['created_at'], unique=False)


def downgrade() -> None:
    with op.batch_alter_table('signups', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_signups_created_at'))
        batch_op.drop_index('ix_signups_address_created_at')

    op.drop_table('signups')
