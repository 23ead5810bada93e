"""The two memory tools of every available index.

`memory__<index-id>__search` finds records; `memory__<index-id>__write` keeps one.
`catalogue` names, describes, lists and resolves them for a key (what a turn may offer);
`calls` runs a model's call, whose answer is the tool result's text. A refusal during a
call — bad arguments, a type the store does not take, a right the key lacks — is an
error object INSIDE that text (the model reads it and may retry), never an exception.
"""
