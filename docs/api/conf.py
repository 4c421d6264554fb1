"""Sphinx configuration of customobj's API reference (generated from the docstrings).

Build (warnings are errors, as in CI: ``tests/test_api_docs.py``)::

    pip install -e '.[docs]'
    python -m sphinx -W --keep-going -b html docs/api build/api-docs

customobj must be installed (``customobj.adapters`` exists only in an installed tree). Importing
the documented modules compiles nothing (numba kernels compile on first call) and imports neither
LightGBM, XGBoost nor Dask: the adapters import them inside their functions.
"""
from __future__ import annotations

import customobj

project = "customobj"
author = "customobj developers"
copyright = "customobj developers"  # noqa: A001  (Sphinx's name)
release = customobj.__version__
version = release

extensions = ["sphinx.ext.autodoc", "sphinx.ext.napoleon", "sphinx.ext.mathjax"]

# NumPy-style docstrings only (the house style).
napoleon_google_docstring = False
napoleon_numpy_docstring = True
napoleon_use_rtype = False

# scikit-learn generates set_*_request methods (metadata routing) on every estimator; their
# docstrings cite sklearn's own glossary, which this build does not have (warnings under -W).
autodoc_default_options = {"members": True, "show-inheritance": True,
                           "exclude-members": "set_fit_request, set_predict_request, set_score_request"}
autodoc_member_order = "bysource"
autodoc_typehints = "description"  # hints in the parameter list, not in a long signature line
autodoc_preserve_defaults = True   # show ``sigma=1.0``, not evaluated objects
autoclass_content = "both"         # class docstring + __init__ docstring

exclude_patterns = ["_build"]
html_theme = "alabaster"
html_static_path: list[str] = []
