"""Stage 1 of a read: the query string and the body's parameters into a plan (no SQL, no documents).

``query`` (the plan), ``filter_syntax`` and ``filter_terms`` (``filter[...]``), ``cursors``
(``page[after]``/``page[before]`` and the cursor profile), ``stats_plan`` (``stats[...]``/``group``).
docs/pipeline.rst tells the whole path.
"""
