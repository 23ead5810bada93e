"""What an operations team watches: request ids and log context (`context`), JSON log lines
(`logs`), traces over OpenTelemetry (`tracing`) and Prometheus metrics (`metrics`).

Nothing here holds a person's name, a record's text or a query: only ids, routes, states and
counts (README "Operations")."""
