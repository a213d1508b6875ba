"""Client quotas: Kafka's sampled rates (:mod:`.rate`), the quota manager that resolves and
enforces them (:mod:`.client_quota_manager`) and the hooks the connection and the Fetch handler
call (:mod:`.throttling`)."""
