"""Operating the broker: metrics, the admin HTTP listener, quotas, log-dir health."""
