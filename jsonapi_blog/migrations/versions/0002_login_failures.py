"""login failures: the login throttle's count (CONTRACT section 9)

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-23 23:40:00
"""
import sqlalchemy as sa
from alembic import op

revision = '0002'
down_revision = '0001'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('login_failures',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('email_key', sa.String(length=64), nullable=False),
    sa.Column('address', sa.String(length=64), nullable=False),
    sa.Column('attempted_at', sa.DateTime(), nullable=False),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_login_failures'))
    )
    with op.batch_alter_table('login_failures', schema=None) as batch_op:
        batch_op.create_index('ix_login_failures_address_attempted_at', ['address', 'attempted_at'], unique=False)
        batch_op.create_index(batch_op.f('ix_login_failures_attempted_at'), ['attempted_at'], unique=False)
        batch_op.create_index('ix_login_failures_email_key_attempted_at', ['email_key', 'attempted_at'], unique=False)


def downgrade() -> None:
    with op.batch_alter_table('login_failures', schema=None) as batch_op:
        batch_op.drop_index('ix_login_failures_email_key_attempted_at')
        batch_op.drop_index(batch_op.f('ix_login_failures_attempted_at'))
        batch_op.drop_index('ix_login_failures_address_attempted_at')

    op.drop_table('login_failures')
