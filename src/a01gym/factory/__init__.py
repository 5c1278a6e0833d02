"""The scenario factory: author → spec → mutator → compiler → gold gates → cache.

Offline only: a runtime reads the cache (``a01gym.factory.cache``) and never builds scenarios.
``families`` and ``domains`` are the catalog, ``spec`` the draft model, ``author`` and
``llm_author`` produce drafts, ``appgen`` renders apps, ``mutator`` picks the per-site variants
(vulnerable, reference, traps), ``testgen`` writes the declarative tests, ``compiler`` makes the
bundle, ``gates`` admits it in real sandboxes, ``split`` and ``cache`` store it, and
``pipeline`` runs the whole line.
"""
