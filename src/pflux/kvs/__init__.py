"""The KVS (RFC 16): hierarchical keys, namespaces, atomic batched commits, watches.

``keys`` checks keys and maps namespaces (what a key is and where a job's keys
live is RFC 16's scheme, ``pflux.spec.kvs_keys``), ``store`` keeps them in
SQLite, ``service`` serves ``kvs.*`` requests in the broker. Nothing is imported
here, so ``pflux.kvs.keys`` costs its importer no SQLite.
"""
