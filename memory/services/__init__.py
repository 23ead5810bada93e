"""Memory's writes: writing a record (`writes`: create, confirm, correct, for a key's caller or
for Core), the rules every write keeps (`rules`), imported records (`imports`), changing and
deleting one afterwards (`changes`), contradictions between records (`contradictions`),
counting retrievals (`retrievals`) and erasing a person's records (`erasure`).

Each service checks its own scope: it takes the caller (`base.callers.Caller`: a key's with its
person, or in the console the administrator's for her organisation) and reads what it changes through
the matching scoped entry (core_memory.base.tenancy), never trusting a row it is handed."""
