"""Files on the ground floor, below everything else: ``private`` (what smneuron keeps for the user alone: 0700 folders,
0600 files, durable writes), ``user`` (files and folders the user names: read as text or refused by name, checked
before the work that fills them, written whole), ``local_record`` (where `smneuron local up` runs and the credentials
an embedded AWS accepts: the service's record files), ``aws_config`` (the user's AWS config files: a session that
reads none, the refusal of a profile they lack).

May import: errors, startup, the standard library, platformdirs, botocore (``aws_config``).
"""
