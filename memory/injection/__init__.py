"""The memory block a turn gets before the model starts.

`walk.injection_block_build` is the one entry point; a turn calls it once. Three modules:

- `lines`: the block's text — one compact JSON line per record, under labels only Core
  writes, and the one token estimator;
- `settings`: which block governs a turn (the agent's or the key's) and its limits
  combined with the store's injection section;
- `walk`: the sections in order, each read in bounded pages, under the count and the
  token budget, and the trace.

The block is data, never instructions: each record's text is only ever a JSON string
value on its own line.
"""
