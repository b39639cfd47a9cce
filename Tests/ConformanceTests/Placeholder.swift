// Tests for ConformanceTests are added by their issues.
