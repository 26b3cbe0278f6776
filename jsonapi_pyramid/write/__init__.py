"""What a write runs below the one write-operation layer (``jsonapi_pyramid.writes``) that views,
atomic operations, sideposting and custom operations share: ``plain_writes`` (a create or update as
one Core statement), ``local_ids`` (``lid`` to id), ``locking`` (the row lock of a conditional
write). docs/pipeline.rst tells the whole path.
"""
