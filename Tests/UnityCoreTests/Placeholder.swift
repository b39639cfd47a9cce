// Tests for UnityCoreTests are added by their issues.
