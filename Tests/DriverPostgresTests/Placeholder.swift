// Tests for DriverPostgresTests are added by their issues.
