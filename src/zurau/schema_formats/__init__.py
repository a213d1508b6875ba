"""Schema formats and record decoding shared by the edge apps.

The schema registry, the console and the REST proxy use this package (the edge apps never import
each other: they talk over HTTP); it imports only the standard library, third-party libraries,
:mod:`zurau.edge_requests` and :mod:`zurau.client`.

* :mod:`.schema_types`: parsing, canonical and normal forms and compatibility of AVRO, JSON and
  PROTOBUF schemas, with their checkers (:mod:`.avro_compatibility`, :mod:`.avro_spec_rules`,
  :mod:`.json_compatibility`, :mod:`.protobuf_compatibility`) and the ``.proto`` compiler and
  printer (:mod:`.protobuf_schema`, :mod:`.protobuf_printer`);
* :mod:`.references`: a schema reference (name, subject, version);
* :mod:`.errors`: :class:`~.errors.RegistryError` (Confluent's error body), which the parsers raise;
* :mod:`.record_decoding` and :mod:`.protobuf_decoding`: record keys and values in Confluent's wire
  format (and as string/JSON/hex) decoded with writer schemas fetched by id through
  :mod:`.registry_http`'s :class:`~.registry_http.RegistryClient`.
"""
