"""Dates as the console shows them in Dutch: with the time zone they are in (the organisation's)."""
DATETIME_FORMAT = "j b Y, H:i T"
SHORT_DATETIME_FORMAT = "j b Y, H:i"
