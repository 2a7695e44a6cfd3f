"""Test-wide settings: hypothesis without time deadlines, so a slow CI machine does not turn into flaky
failures (speed is measured in benchmarks/, not asserted in tests)."""

from hypothesis import HealthCheck, settings

settings.register_profile("hx", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("hx")
