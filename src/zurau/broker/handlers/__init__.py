"""One module per Kafka API. Each declares ``API_KEY`` and ``handle(ctx, request)``."""
