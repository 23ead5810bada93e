"""The API's framework, on the ground floor: the base view every app's `apis.py` builds on
(authentication's caller, capabilities, the person, idempotency), pagination, the schema's
helpers, the JSON parser and the error answers. It names no app: each app's API stands on it."""
