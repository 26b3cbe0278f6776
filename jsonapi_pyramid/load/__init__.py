"""Stage 2 of a read: a plan into SQL and the rows it reads (no documents).

``loading`` (pages, items, related and linkage reads), ``includes`` (one statement per include
path), ``include_pages`` (paged, counted includes), ``keyset`` (cursor pages), ``filtering`` and
``sorting`` (criteria, ORDER BY), ``counts`` (``totalCount``, ``estimatedCount``), ``stats_sql``
(aggregates), ``stored`` (the read-back after a write), ``tag_linkage`` (an entity tag's
linkage), ``idlists`` (id lists bound as one parameter). docs/pipeline.rst tells the whole path.
"""
