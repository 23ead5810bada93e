"""The top floor: flows that span the layers below them.

A turn (`turns`) builds the memory block, runs the model and its memory tools, and
stores the thread; erasing a person (`erasure`) removes what every layer holds about
her; onboarding (`onboarding`) makes an organisation with its owner key. Nothing below
imports a flow (tests/test_layers.py, docs/decisions.md "Layers").
"""
