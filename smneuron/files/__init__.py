"""Files on the ground floor, below everything else: ``private`` (what smneuron keeps for the user alone: 0700 folders,
0600 files, durable writes), ``user`` (files and folders the user names: read as text or refused by name, checked
before the work that fills them, written whole), ``local_record`` (where `smneuron local up` runs and the credentials
an embedded AWS accepts: the service's record files).

May import: errors, the standard library, platformdirs.
"""
