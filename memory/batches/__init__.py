"""Many records in one request: the routes (apis) over memory.services.batches."""
