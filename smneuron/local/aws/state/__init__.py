"""What survives `local down` and a crash: see README.md beside this file.

``persistence`` snapshots what the service holds (a change is acknowledged once a snapshot covering it is on disk) and restores it at the next start; ``snapshot_file`` is the snapshot on disk: read whole or refused with the choices, the previous one kept beside it, kept bytes checked against their names; ``undo`` takes back a change that could not be written, so that what is listed is what was acknowledged.
"""
