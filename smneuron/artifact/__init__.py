"""What a compiled model is on disk and in S3: manifest, hashes, model.tar.gz, staging.

Modules: ``hashing`` (the one file and tree hash), ``manifest`` (``smneuron.json`` for both kinds),
``kind`` (``kind_of``: encoder or text generation, decided once), ``resources`` (where ``inference_code/``,
``pipelines/``, ``infra/`` are), ``packaging`` and ``archive`` (model.tar.gz in the DLC layout, safe
extraction), ``storage`` (S3 primitives), ``staging`` (``stage`` -> ``ModelData``: any artifact to
content-addressed model data, with a typed generation configuration).

May import: errors, session, catalog, specs.
"""
