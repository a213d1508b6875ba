"""Client quotas: Kafka's sampled rates (:mod:`.rate`) and token buckets (:mod:`.token_bucket`,
for ``controller_mutation_rate``: :mod:`.controller_mutation_quota`), the quota manager that
resolves and enforces them (:mod:`.client_quota_manager`) and the hooks the connection and the
Fetch and topic-mutation handlers call (:mod:`.throttling`)."""
