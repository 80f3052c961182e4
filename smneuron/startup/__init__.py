"""How the processes smneuron starts set themselves up: ``safe_path`` (imported first by a forkserver's preload: the
preload is not looked up in the folder smneuron was run from; ``shadowing`` says what kills one before that),
``gc_pause`` (imported first by a forkserver's preload and by the embedded SageMaker's ``__main__``: no garbage
collections while the heap only grows; ``smneuron.fast_exit.freeze()`` ends the set-up), ``loopback`` (a proxy in the
shell is never used for this machine's services). Never imported by ``import smneuron``.

May import: the standard library only.
"""
