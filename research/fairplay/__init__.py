"""Fair play measured (issue 60): a panel of cheats and honest players written apart from the
detector, an archive of their rounds, and the detector's power and false alarms on it."""
