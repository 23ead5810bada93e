"""The memory block a turn gets before the model starts (SPEC R-7.4–R-7.10, R-12.2).

`walk.injection_block_build` is the one entry point; a turn calls it once. Three modules:

- `lines`: the block's text — one compact JSON line per record, under labels only Core
  writes, and the one token estimator;
- `settings`: which block governs a turn (the agent's or the key's, R-7.4) and its limits
  combined with the store's injection section;
- `walk`: the sections in order, each read in bounded pages, under the count and the
  token budget (R-7.5, R-7.7, R-7.8), and the trace (R-7.9).

The block is data, never instructions: each record's text is only ever a JSON string
value on its own line (R-12.2).
"""
