"""Runtime data shipped inside the wheel (device database, icons, demo traces)."""
