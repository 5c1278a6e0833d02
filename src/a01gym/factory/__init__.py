"""The scenario factory: author → spec → mutator → compiler → gold gates → cache.

Offline only: a runtime reads the cache (``a01gym.scenario.cache``) and never builds scenarios.

* ``families`` (a package, one module per family), ``domains``: the catalog; ``spec``: the
  draft model; ``config``: a run.
* ``author``, ``llm_author``: produce drafts behind one ``Author`` protocol.
* ``appgen`` (with ``appcore``, ``apppolicy``, ``appdata``, ``approutes`` = ``routes_records``
  + ``routes_reports`` + ``routes_admin``, and ``codetext``): render apps site by site.
* ``mutator``: the correct app, the vulnerable one and the trap patches.
* ``testkit``, ``exploits``, ``regressions``: the fixture and the declarative tests.
* ``compiler``: the bundle; ``gates``: admission in real sandboxes.
* ``split``, ``cache``: the versioned store; ``pipeline``: the whole line.
"""
