// Tests for DriverSQLiteTests are added by their issues.
