"""The one error a SASL exchange raises."""


class SaslError(Exception):
    """An exchange that cannot go on: a malformed token or wrong credentials.

    ``str(error)`` is safe to send to the peer (it never contains a password or key).
    """
