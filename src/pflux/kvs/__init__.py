"""The KVS (RFC 16): hierarchical keys, namespaces, atomic batched commits, watches.

``keys`` says what a key is and where a job's keys live, ``store`` keeps them in
SQLite, ``service`` serves ``kvs.*`` requests in the broker. Nothing is imported
here, so ``pflux.kvs.keys`` costs a client no SQLite.
"""
