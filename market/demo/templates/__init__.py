"""Static material for the demo community generator (:mod:`market.demo.content`).

These are Python modules rather than loose ``.js``/``.json`` files on purpose:
``pyproject.toml`` only ships ``demo/assets/**`` as package data, while every
``market*`` package is picked up by setuptools, so data kept as Python strings
survives a wheel install without touching packaging config.

* :mod:`.apps` -- the JavaScript engines, UI strings and translations that every
  generated bundle is rendered from.
* :mod:`.catalog` -- the root sub-agents (one per believable tool) and the fork
  "recipes" that turn a user's request into a concrete change.
* :mod:`.people` -- names, places and lifestyle personas for demo users.
"""
