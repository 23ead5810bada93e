"""Date formats of the console's languages (FORMAT_MODULE_PATH): Django's, with the zone shown."""
