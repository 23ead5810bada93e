"""Durable background work, one framework for extraction's windows and maintenance's jobs.

A unit of work is a row (`models.WorkUnit`) that a planner queues under a run
(`models.WorkRun`), that one worker at a time claims with a token and a lease, and that ends
written or closed in one transaction which first locks it by that token. A worker killed
mid-unit leaves a claim that runs out; the recoverer hands the unit out again, and only the
next claim writes. So nothing is lost and nothing is written twice, however often a unit's
message is delivered.

- `claims`: the SQL of claiming, locking, handing out again and counting into a run.
- `models`: the abstract unit and run, with the fields every kind of work shares.
- `runner`: one attempt at one unit — claim, prepare, ask, write, finish or close.
- `dispatch`: planning what is due and recovering what was left behind.
- `tasks`: the Celery tasks of a kind of work (one per unit, one dispatcher on beat).
- `commands`: the management command that runs a kind of work in the foreground.

An app names its own steps (what a unit reads, asks and writes); the rest is here.
"""
