"""Decoding every family shares: `symmetrize` (the atools heuristics that combine two
directions' link sets). A leaf below the models (imports no other aligners module); each
family's own decoder lives in its `models/<family>/decode.py`."""
