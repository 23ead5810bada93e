"""The ground floor: errors, ids, what PostgreSQL can store, validation building blocks.

Everything here imports nothing of the project (tests/test_layers.py); every layer above
may import it.
"""
