"""Extraction's writes: the switch and its connector (`switches`), planning runs into
windows (`planning`), and reading one window (`windows`)."""
