"""Dates as the console shows them in English: with the time zone they are in (the organisation's)."""
DATETIME_FORMAT = "j M Y, H:i T"
SHORT_DATETIME_FORMAT = "j M Y, H:i"
