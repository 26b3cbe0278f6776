"""Stage 3 of a read: rows into the JSON:API document (no SQL).

``document`` (resource objects, linkage, included, metas), ``page_links`` (pagination links),
``stats_meta`` (``meta.stats``). The renderer (``jsonapi_pyramid.renderer``) writes the bytes.
docs/pipeline.rst tells the whole path.
"""
